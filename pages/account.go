package pages

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/password"
)

// MinPasswordLength is the shortest password the pages accept.
const MinPasswordLength = 10

// hashPassword hashes a new password (bcrypt at password.Cost; the tests
// use the cheapest cost, as bcrypt is very slow under the race detector).
var hashPassword = password.Hash

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

// signup creates an account on the waitlist and signs it in.
func (s *Server) signup(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	if c.User != nil {
		return c.Redirect("/account")
	}
	f := r.PostForm
	d := signupData{Email: strings.TrimSpace(f.Get("email")), Timezone: f.Get("timezone"), Timezones: timezones}
	if msg := checkEmail(d.Email); msg != "" {
		c.Fail("email", msg)
	}
	pw := f.Get("password")
	if msg := checkPassword(pw); msg != "" {
		c.Fail("password", msg)
	} else if f.Get("password_confirm") != pw {
		c.Fail("password_confirm", "The two passwords are not the same. Type the password again in both fields.")
	}
	if !validTimezone(d.Timezone) {
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
	hash, err := hashPassword(pw)
	if err != nil {
		return nil, err
	}
	now := c.Now
	u := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: strings.ToLower(d.Email), PasswordHash: hash,
		Plan: ams.PlanStandard, Timezone: d.Timezone, CreatedAt: now, UpdatedAt: now}
	if err := s.Store.CreateUser(r.Context(), u); ams.ErrorKindOf(err) == ams.ECONFLICT {
		c.Fail("email", "An account with this e-mail address already exists. Sign in instead, or use another address.")
		return d, nil
	} else if err != nil {
		return nil, err
	}
	if err := s.OAuth.SignupDone(r.Context(), r); err != nil {
		return nil, err
	}
	sid, err := s.OAuth.StartSession(r.Context(), w, r, u)
	if err != nil {
		return nil, err
	}
	c.User, c.SessionID = u, sid
	s.Logger.Info("account signed up", "user", u.ID)
	c.Flash(FlashSuccess, "Welcome to ams! Your account is on the early-access waitlist: you can create API keys once it is approved.")
	return c.Redirect("/account")
}

// passwordForm shows the password change form.
func (s *Server) passwordForm(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	return nil, nil
}

// changePassword checks the current password and sets the new one.
func (s *Server) changePassword(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	f := r.PostForm
	if !password.Check(c.User.PasswordHash, f.Get("current_password")) {
		c.Fail("current_password", "The current password is not correct.")
	}
	pw := f.Get("new_password")
	if msg := checkPassword(pw); msg != "" {
		c.Fail("new_password", msg)
	} else if f.Get("new_password_confirm") != pw {
		c.Fail("new_password_confirm", "The two new passwords are not the same. Type the new password again in both fields.")
	}
	if c.Invalid() {
		return nil, nil
	}
	hash, err := hashPassword(pw)
	if err != nil {
		return nil, err
	}
	if _, err := s.Store.UpdateUser(r.Context(), c.User.ID, ams.UserUpdate{PasswordHash: &hash}, c.Now); err != nil {
		return nil, err
	}
	// Whoever signed in with the old password (another browser) is
	// signed out; this session stays.
	if err := s.Store.DeleteOtherLoginSessions(r.Context(), c.User.ID, ams.HashSecret(c.SessionID)); err != nil {
		return nil, err
	}
	c.Flash(FlashSuccess, "Your password was changed. Every other browser signed in to your account was signed out.")
	return c.Redirect("/account")
}

// checkEmail says what is wrong with an e-mail address, or "".
func checkEmail(e string) string {
	at := strings.LastIndexByte(e, '@')
	switch {
	case e == "":
		return "Enter your e-mail address."
	case len(e) > 254 || !utf8.ValidString(e):
		return "The e-mail address is too long."
	case at < 1 || at == len(e)-1 || strings.ContainsAny(e, " \t\r\n<>()[],;:\\\"") || !strings.Contains(e[at+1:], "."):
		return "Enter an e-mail address like name@example.com."
	}
	return ""
}

// checkPassword says what is wrong with a new password, or "".
func checkPassword(pw string) string {
	switch {
	case pw == "":
		return "Enter a password."
	case !utf8.ValidString(pw):
		return "The password contains characters that cannot be read."
	case utf8.RuneCountInString(pw) < MinPasswordLength:
		return "The password must be at least 10 characters long."
	case len(pw) > password.MaxLength:
		return "The password must be at most 72 bytes long (fewer characters when they are not ASCII)."
	}
	return ""
}

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
