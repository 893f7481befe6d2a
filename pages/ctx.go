package pages

import (
	"net/http"
	"time"

	"github.com/amsdev/ams"
)

// Ctx is what a page handler knows about its request besides w and r.
type Ctx struct {
	// User is the signed-in user (nil only on a PublicPage without a
	// session). SessionID is the session's id ("" without one).
	User      *ams.User
	SessionID string
	// CSRF is the token forms of this page carry (the "csrf" partial
	// writes the hidden field).
	CSRF string
	// Now is the time of the request on the service clock.
	Now time.Time
	// Title overrides the template's "title" (e.g. a webhook's URL).
	Title string
	// Status is the HTTP status of the rendered page (0: 200, or 422 when
	// there are form errors).
	Status int
	// Flashes are the messages of the previous request (after a redirect).
	Flashes []Flash
	// Errors are the form errors of this request, shown in the error
	// summary and next to their fields.
	Errors []FieldError

	s       *Server
	w       http.ResponseWriter
	r       *http.Request
	loc     *time.Location
	tmpl    string
	done    bool
	pending []Flash // flashes for the next page
}

// FieldError is a form error: Field is the input's id (the summary links
// to it; "" for an error of the whole form).
type FieldError struct {
	Field   string
	Message string
}

// Flash kinds.
const (
	FlashSuccess = "success"
	FlashError   = "error"
	FlashInfo    = "info"
)

// Flash is a message shown once, on the page after a redirect.
type Flash struct {
	Kind    string // FlashSuccess, FlashError or FlashInfo
	Message string
}

// Flash keeps a message for the next page this browser gets (after the
// redirect that ends a form post).
func (c *Ctx) Flash(kind, message string) {
	c.pending = append(c.pending, Flash{Kind: kind, Message: message})
}

// Redirect answers 303 See Other to url (a path of this site), with the
// messages given to Flash. The handler returns what it returns.
func (c *Ctx) Redirect(url string) (any, error) {
	c.s.setFlashes(c.w, c.r, c.SessionID, c.pending)
	http.Redirect(c.w, c.r, url, http.StatusSeeOther)
	c.done = true
	return nil, nil
}

// Fail records a form error of field ("" for the whole form); the page is
// rendered with status 422 and an error summary.
func (c *Ctx) Fail(field, message string) {
	c.Errors = append(c.Errors, FieldError{Field: field, Message: message})
}

// Invalid reports whether Fail was called.
func (c *Ctx) Invalid() bool { return len(c.Errors) > 0 }

// Render makes the page render with the template file tmpl instead of the
// route's (e.g. a confirmation page answered to a POST).
func (c *Ctx) Render(tmpl string) {
	mustTemplate(tmpl)
	c.tmpl = tmpl
}

// Location is the user's time zone (UTC without a user or a valid zone).
func (c *Ctx) Location() *time.Location { return c.loc }

// RequireAdmin returns a 403 error unless the user is an administrator of
// the service.
func (c *Ctx) RequireAdmin() error {
	if c.User == nil || !c.User.Admin {
		return &ams.Error{Kind: ams.EFORBIDDEN, Code: "admin_only", Message: "This page is for administrators of the service."}
	}
	return nil
}
