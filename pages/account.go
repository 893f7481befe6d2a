package pages

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/account"
)

// signupData is the data of the sign-up page.
type signupData struct {
	Email     string
	Timezone  string
	Timezones []string
}

// signupForm shows the sign-up form; a signed-in user goes to the account.
func (s *Server) signupForm(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	if c.User != nil {
		return c.Redirect("/account")
	}
	return signupData{Timezone: "UTC", Timezones: timezones}, nil
}

// signup creates an account on the waitlist, with an unverified address,
// and answers "check your e-mail" (the same page for a taken address).
func (s *Server) signup(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	if c.User != nil {
		return c.Redirect("/account")
	}
	f := r.PostForm
	d := signupData{Email: strings.TrimSpace(f.Get("email")), Timezone: f.Get("timezone"), Timezones: timezones}
	in := account.SignUp{Email: d.Email, Password: f.Get("password"), PasswordConfirm: f.Get("password_confirm"), Timezone: d.Timezone}
	errs := ams.Fields(s.Accounts.CheckSignUp(in))
	badZone := !validTimezone(d.Timezone)
	for _, e := range errs {
		if e.Param == "timezone" {
			badZone = true
		} else {
			c.Fail(e.Param, e.Message)
		}
	}
	if badZone {
		c.Fail("timezone", "Choose a time zone from the list.")
		d.Timezone = "UTC"
	}
	if c.Invalid() {
		return d, nil
	}
	// At most a few accounts from one address in a while: sign-ups are
	// cheap to script, and each one is a row and a bcrypt hash.
	if until, blocked, err := s.OAuth.SignupBlocked(r.Context(), r); err != nil {
		return nil, err
	} else if blocked {
		c.Status = http.StatusTooManyRequests
		c.Fail("email", fmt.Sprintf("Too many accounts were created from your network recently. Try again in %d minutes.",
			int(until.Sub(c.Now).Minutes())+1))
		return d, nil
	}
	// The answer is the same page whether the address was free (an
	// account is made, on the waitlist, and a verification link is
	// e-mailed) or taken (its owner is e-mailed a notice): it does not
	// tell who has an account. So it signs nobody in, and both count
	// against the network's sign-ups.
	u, err := s.Accounts.SignUp(r.Context(), in)
	if err != nil {
		return nil, err
	}
	if err := s.OAuth.SignupDone(r.Context(), r); err != nil {
		return nil, err
	}
	if u != nil {
		s.Logger.Info("account signed up", "user", u.ID)
	}
	c.Render("check_email.html")
	return checkEmailData{Email: account.NormalizeEmail(in.Email)}, nil
}

// passwordForm shows the password change form.
func (s *Server) passwordForm(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	return nil, nil
}

// changePassword checks the current password and sets the new one.
func (s *Server) changePassword(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	f := r.PostForm
	err := s.Accounts.ChangePassword(r.Context(), c.User.ID, c.SessionID, account.PasswordChange{
		Current: f.Get("current_password"), New: f.Get("new_password"), Confirm: f.Get("new_password_confirm")})
	if errs := ams.Fields(err); errs != nil {
		for _, e := range errs {
			c.Fail(e.Param, e.Message)
		}
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	// The other browsers signed in to the account were signed out; this
	// session stays.
	c.Flash(FlashSuccess, "Your password was changed. Every other browser signed in to your account was signed out.")
	return c.Redirect("/account")
}

// validTimezone reports whether tz is one the sign-up page offers (the
// service accepts any IANA zone; the page, its list).
func validTimezone(tz string) bool {
	if !slices.Contains(timezones, tz) {
		return false
	}
	_, err := time.LoadLocation(tz)
	return err == nil
}

// timezones are the time zones the sign-up page offers: UTC, then the
// IANA zones of the world's main cities, west to east.
var timezones = []string{
	"UTC",
	"Pacific/Honolulu", "America/Anchorage", "America/Los_Angeles", "America/Vancouver", "America/Denver",
	"America/Phoenix", "America/Chicago", "America/Mexico_City", "America/New_York", "America/Toronto",
	"America/Bogota", "America/Lima", "America/Halifax", "America/Santiago", "America/Sao_Paulo",
	"America/Argentina/Buenos_Aires", "Atlantic/Azores", "Atlantic/Reykjavik", "Europe/London", "Europe/Dublin",
	"Europe/Lisbon", "Africa/Lagos", "Europe/Paris", "Europe/Berlin", "Europe/Madrid", "Europe/Rome",
	"Europe/Amsterdam", "Europe/Brussels", "Europe/Zurich", "Europe/Vienna", "Europe/Stockholm", "Europe/Oslo",
	"Europe/Copenhagen", "Europe/Warsaw", "Europe/Prague", "Europe/Budapest", "Africa/Johannesburg",
	"Africa/Cairo", "Europe/Athens", "Europe/Helsinki", "Europe/Kyiv", "Europe/Istanbul", "Asia/Jerusalem",
	"Europe/Moscow", "Africa/Nairobi", "Asia/Riyadh", "Asia/Tehran", "Asia/Dubai", "Asia/Karachi",
	"Asia/Kolkata", "Asia/Kathmandu", "Asia/Dhaka", "Asia/Bangkok", "Asia/Jakarta", "Asia/Singapore",
	"Asia/Shanghai", "Asia/Hong_Kong", "Asia/Taipei", "Asia/Manila", "Australia/Perth", "Asia/Seoul",
	"Asia/Tokyo", "Australia/Adelaide", "Australia/Brisbane", "Australia/Sydney", "Australia/Melbourne",
	"Pacific/Auckland",
}
