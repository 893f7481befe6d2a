package pages

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/account"
)

// RotationAge is the age past which a key gets the rotation reminder
// (the interface recommends rotating keys every 90 days).
const RotationAge = 90 * 24 * time.Hour

// permissionMeanings are the words of the permission checkboxes
// (interface.md, Authentication).
var permissionMeanings = map[ams.Permission]string{
	ams.PermRead:         "Read-only access to data.",
	ams.PermWrite:        "Create and update records (assistants, webhooks, tasks, calendar events).",
	ams.PermAdmin:        "Full administrative access: everything else listed here.",
	ams.PermMessages:     "Send and receive messages.",
	ams.PermIntegrations: "Manage integrations.",
}

// keysData is the data of the API keys page.
type keysData struct {
	Keys        []keyRow
	Form        keyForm
	Permissions []permOption
	MinDate     string // the earliest expiry date (tomorrow in the user's zone)
}

type keyRow struct {
	*ams.APIKey
	State      string // active, expired, revoked
	RotateSoon bool   // active and older than RotationAge
}

type keyForm struct {
	Name      string
	Perms     []string
	Expires   string // "never" or "date"
	ExpiresOn string // YYYY-MM-DD
}

type permOption struct {
	Name, Meaning string
	Checked       bool
}

// keyState is "revoked", "expired" or "active".
func keyState(k *ams.APIKey, now time.Time) string {
	switch {
	case k.RevokedAt != nil:
		return "revoked"
	case k.ExpiresAt != nil && !now.Before(*k.ExpiresAt):
		return "expired"
	}
	return "active"
}

// keysPage loads the keys page's data with the form f.
func (s *Server) keysPage(r *http.Request, c *Ctx, f keyForm) (*keysData, error) {
	keys, err := s.Store.ListKeys(r.Context(), c.User.ID)
	if err != nil {
		return nil, err
	}
	d := &keysData{Form: f, MinDate: c.Now.In(c.Location()).AddDate(0, 0, 1).Format(time.DateOnly)}
	// Active keys first, newest first within each group (the store's order).
	for _, state := range []string{"active", "expired", "revoked"} {
		for _, k := range keys {
			if st := keyState(k, c.Now); st == state {
				d.Keys = append(d.Keys, keyRow{APIKey: k, State: st, RotateSoon: st == "active" && c.Now.Sub(k.CreatedAt) > RotationAge})
			}
		}
	}
	for _, p := range ams.AllPermissions {
		d.Permissions = append(d.Permissions, permOption{Name: string(p), Meaning: permissionMeanings[p], Checked: slices.Contains(f.Perms, string(p))})
	}
	return d, nil
}

// keys lists the account's keys, with the form to create one.
func (s *Server) keys(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	return s.keysPage(r, c, keyForm{Expires: "never"})
}

// createKey creates a key and sends the browser to the page that shows
// it, once. An account on the waitlist may not create keys.
func (s *Server) createKey(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	pf := r.PostForm
	f := keyForm{Name: strings.TrimSpace(pf.Get("name")), Perms: pf["permissions"], Expires: pf.Get("expires"), ExpiresOn: strings.TrimSpace(pf.Get("expires_on"))}
	if f.Expires != "date" {
		f.Expires = "never"
	}
	if !c.User.Approved() {
		c.Status = http.StatusForbidden
		c.Fail("", "Your account is on the early-access waitlist: you can create API keys once it is approved.")
		return s.keysPage(r, c, f)
	}
	// The expiry date is read in the user's time zone: the key works
	// through the whole day.
	var expires *time.Time
	var expiresErr string
	if f.Expires == "date" {
		day, err := time.ParseInLocation(time.DateOnly, f.ExpiresOn, c.Location())
		switch {
		case f.ExpiresOn == "":
			expiresErr = "Enter the date the key expires, or choose “Never”."
		case err != nil:
			expiresErr = "Enter the expiry date as a date like 2027-01-31."
		default:
			local := c.Now.In(c.Location())
			today := time.Date(local.Year(), local.Month(), local.Day(), 0, 0, 0, 0, c.Location())
			if !day.After(today) {
				expiresErr = "The expiry date must be in the future (tomorrow or later)."
			} else {
				end := day.AddDate(0, 0, 1).UTC()
				expires = &end
			}
		}
	}
	in := account.NewKey{Name: f.Name, Permissions: f.Perms, ExpiresAt: expires}
	_, err := s.Accounts.CheckKey(in)
	if failKeyForm(c, err, expiresErr) {
		return s.keysPage(r, c, f)
	}
	secret, k, err := s.Accounts.CreateKey(r.Context(), c.User.ID, in)
	if ams.ErrorKindOf(err) == ams.EFORBIDDEN {
		// Approval taken back since the request read the account: the
		// same answer as above.
		c.Status = http.StatusForbidden
		c.Fail("", "Your account is on the early-access waitlist: you can create API keys once it is approved.")
		return s.keysPage(r, c, f)
	} else if failKeyForm(c, err, "") {
		return s.keysPage(r, c, f)
	} else if e := (*ams.Error)(nil); errors.As(err, &e) && e.Code == "api_key_limit_reached" {
		c.Status = http.StatusConflict
		c.Fail("", e.Message)
		return s.keysPage(r, c, f)
	} else if err != nil {
		return nil, err
	}
	c.KeepSecret(k.ID, secret)
	return c.Redirect("/account/keys/" + k.ID + "/created")
}

// keyFields are the form's fields of the service's parameters.
var keyFields = map[string]string{"name": "name", "permissions": "perm-read", "expires_at": "expires_on"}

// failKeyForm shows the field errors of err (account.CheckKey's) and the
// expiry date's error as form errors, in the form's order; it reports
// whether there were any.
func failKeyForm(c *Ctx, err error, expiresErr string) bool {
	errs := ams.Fields(err)
	for _, param := range []string{"name", "permissions", "expires_at"} {
		for _, e := range errs {
			if e.Param != param {
				continue
			}
			switch param {
			case "permissions":
				// Unknown words can only be a forged form: the form's
				// sentence is enough.
				c.Fail(keyFields[param], "Choose at least one permission.")
			case "expires_at":
				if expiresErr == "" {
					expiresErr = e.Message
				}
			default:
				c.Fail(keyFields[param], e.Message)
			}
		}
	}
	if expiresErr != "" {
		c.Fail("expires_on", expiresErr)
	}
	return c.Invalid()
}

// keyCreatedData is the data of the page that shows a new key.
type keyCreatedData struct {
	Key     *ams.APIKey
	Secret  string // "" when it was shown already
	BaseURL string
}

// keyCreated shows a new key's secret, once: the secret travels from
// createKey in a cookie that this page clears.
func (s *Server) keyCreated(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	k, err := s.Store.FindKey(r.Context(), r.PathValue("id"))
	if err != nil && !ams.IsNotFound(err) {
		return nil, err
	}
	if err != nil || k.UserID != c.User.ID {
		return nil, ams.NotFound("api_key", r.PathValue("id"))
	}
	secret, _ := c.TakeSecret(k.ID)
	base := s.BaseURL
	if base == "" {
		base = "http://" + r.Host
	}
	return keyCreatedData{Key: k, Secret: secret, BaseURL: base}, nil
}

// revokeKey revokes one of the account's keys (the confirmation is the
// second button of the key's row).
func (s *Server) revokeKey(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	k, err := s.Accounts.RevokeKey(r.Context(), c.User.ID, r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	s.Logger.Info("api key revoked", "user", c.User.ID, "key", k.ID)
	c.Flash(FlashSuccess, "The key “"+k.Name+"” ("+k.Hint+") was revoked: requests that use it are refused from now on.")
	return c.Redirect("/account/keys")
}
