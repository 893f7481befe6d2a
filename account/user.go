package account

import (
	"context"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/password"
)

// NewUser is an account to create (`ams users create`).
type NewUser struct {
	Email string
	// Password is the account's password for the sign-in page; "" makes
	// an account without one (it uses API keys only, until a password is
	// set).
	Password string
	// Timezone is an IANA time zone ("": UTC).
	Timezone string
	// Plan is the account's plan ("": standard).
	Plan ams.Plan
	// Approved lets the account off the early-access waitlist at once;
	// false puts it on the waitlist (it may not create API keys).
	Approved bool
	// Admin makes the account an administrator of the service.
	Admin bool
}

// SignUp is the sign-up form: the account it makes is on the waitlist, on
// the standard plan, not an administrator.
type SignUp struct {
	Email           string
	Password        string
	PasswordConfirm string // must be the same as Password
	Timezone        string
}

// checkTimezone says what is wrong with an IANA time zone name, or "".
func checkTimezone(tz string) string {
	if _, err := time.LoadLocation(tz); err != nil || tz == "" || tz == "Local" {
		return "Choose a time zone from the list (an IANA time zone such as Europe/Paris)."
	}
	return ""
}

// check validates the fields of an account; the password is required when
// required is set. confirm is the second password field (nil: none).
func checkUser(email, pw string, confirm *string, tz string, required bool) error {
	var f fields
	if msg := checkEmail(email); msg != "" {
		f.fail("email", msg)
	}
	if pw != "" || required {
		if msg := checkPassword(pw); msg != "" {
			f.fail("password", msg)
		} else if confirm != nil && *confirm != pw {
			f.fail("password_confirm", "The two passwords are not the same. Type the password again in both fields.")
		}
	}
	if msg := checkTimezone(tz); msg != "" {
		f.fail("timezone", msg)
	}
	return f.err()
}

// CheckSignUp validates a sign-up form without writing anything: every
// wrong field at once (ams.FieldErrors), in the order email, password,
// password_confirm, timezone. The e-mail address is checked once trimmed.
func (s *Service) CheckSignUp(in SignUp) error {
	return checkUser(NormalizeEmail(in.Email), in.Password, &in.PasswordConfirm, in.Timezone, true)
}

// CreateUser creates an account (`ams users create`). The e-mail address
// is stored trimmed and in lower case; a taken one is ECONFLICT (param
// email).
func (s *Service) CreateUser(ctx context.Context, in NewUser) (*ams.User, error) {
	if in.Timezone == "" {
		in.Timezone = "UTC"
	}
	if in.Plan == "" {
		in.Plan = ams.PlanStandard
	}
	if _, err := ams.ParsePlan(string(in.Plan)); err != nil {
		return nil, ams.ParamError("parameter_invalid", "plan", "%s", err.Error())
	}
	if err := checkUser(NormalizeEmail(in.Email), in.Password, nil, in.Timezone, false); err != nil {
		return nil, err
	}
	return s.create(ctx, in, false)
}

// create stores a checked account; unverified marks its e-mail address
// unverified (a sign-up; an operator's accounts count as verified).
func (s *Service) create(ctx context.Context, in NewUser, unverified bool) (*ams.User, error) {
	now := s.Clock.Now()
	u := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: NormalizeEmail(in.Email), Plan: in.Plan, Timezone: in.Timezone,
		Admin: in.Admin, CreatedAt: now, UpdatedAt: now}
	if unverified {
		u.UnverifiedSince = &now
	}
	if in.Approved {
		u.ApprovedAt = &now
	}
	if in.Password != "" {
		h, err := s.hash(in.Password)
		if err != nil {
			return nil, err
		}
		u.PasswordHash = h
	}
	if err := s.Store.CreateUser(ctx, u); err != nil {
		if ams.ErrorKindOf(err) == ams.ECONFLICT {
			return nil, &ams.Error{Kind: ams.ECONFLICT, Code: "email_taken", Param: "email",
				Message: "An account with this e-mail address already exists. Sign in instead, or use another address."}
		}
		return nil, err
	}
	return u, nil
}

// PasswordChange is the password form of a signed-in account.
type PasswordChange struct {
	Current string // the account's password now
	New     string
	Confirm string // must be the same as New
}

// ChangePassword checks the account's current password and sets the new
// one, then signs out every other browser: all the account's login
// sessions but session (the id of the session that made the change; "":
// none is kept). Wrong fields are ams.FieldErrors, in the order
// current_password, new_password, new_password_confirm.
func (s *Service) ChangePassword(ctx context.Context, userID, session string, in PasswordChange) error {
	u, err := s.Store.FindUser(ctx, userID)
	if err != nil {
		return err
	}
	var f fields
	if !password.Check(u.PasswordHash, in.Current) {
		f.fail("current_password", "The current password is not correct.")
	}
	if msg := checkPassword(in.New); msg != "" {
		f.fail("new_password", msg)
	} else if in.Confirm != in.New {
		f.fail("new_password_confirm", "The two new passwords are not the same. Type the new password again in both fields.")
	}
	if err := f.err(); err != nil {
		return err
	}
	h, err := s.hash(in.New)
	if err != nil {
		return err
	}
	if _, err := s.Store.UpdateUser(ctx, u.ID, ams.UserUpdate{PasswordHash: &h}, s.Clock.Now()); err != nil {
		return err
	}
	// Whoever signed in with the old password (another browser) is
	// signed out; the session that made the change stays.
	keep := ""
	if session != "" {
		keep = ams.HashSecret(session)
	}
	return s.Store.DeleteOtherLoginSessions(ctx, u.ID, keep)
}

// Approve lets the account off the early-access waitlist: it may create
// API keys from then on. It returns the account and whether this call
// approved it (false: it was approved already, and is left as it was).
func (s *Service) Approve(ctx context.Context, userID string) (*ams.User, bool, error) {
	u, err := s.Store.FindUser(ctx, userID)
	if err != nil {
		return nil, false, err
	}
	if u.Approved() {
		return u, false, nil
	}
	now := s.Clock.Now()
	if u, err = s.Store.UpdateUser(ctx, u.ID, ams.UserUpdate{ApprovedAt: &now}, now); err != nil {
		return nil, false, err
	}
	return u, true, nil
}

// AccountUpdate is a change of the account's settings (PATCH
// /v1/account); nil fields are kept.
type AccountUpdate struct {
	// Timezone is an IANA time zone name.
	Timezone *string
	// KeyReminders and WebhookFailing turn those e-mails on or off
	// (ams.EmailNotifications).
	KeyReminders   *bool
	WebhookFailing *bool
}

// UpdateAccount changes the account's settings and returns the account.
// A wrong time zone is EINVALID (param timezone), nothing stored. When a
// setting changes, account.updated is emitted in the same transaction,
// with the values replaced as previous_attributes; a change that changes
// nothing writes nothing and emits nothing.
func (s *Service) UpdateAccount(ctx context.Context, userID string, in AccountUpdate) (*ams.User, error) {
	if in.Timezone != nil {
		var f fields
		if msg := checkTimezone(*in.Timezone); msg != "" {
			f.fail("timezone", msg)
		}
		if err := f.err(); err != nil {
			return nil, err
		}
	}
	now := s.Clock.Now()
	var u *ams.User
	err := s.Store.Update(ctx, func(tx ams.Tx) error {
		var err error
		if u, err = tx.FindUser(ctx, userID); err != nil { // locks the account until the end
			return err
		}
		var upd ams.UserUpdate
		prev := map[string]any{}
		if in.Timezone != nil && *in.Timezone != u.Timezone {
			prev["timezone"] = u.Timezone
			upd.Timezone = in.Timezone
		}
		notify := map[string]any{}
		if in.KeyReminders != nil && *in.KeyReminders == u.KeyReminderEmailsOff {
			notify["key_reminders"] = !u.KeyReminderEmailsOff
			off := !*in.KeyReminders
			upd.KeyReminderEmailsOff = &off
		}
		if in.WebhookFailing != nil && *in.WebhookFailing == u.WebhookFailingEmailsOff {
			notify["webhook_failing"] = !u.WebhookFailingEmailsOff
			off := !*in.WebhookFailing
			upd.WebhookFailingEmailsOff = &off
		}
		if len(notify) > 0 {
			prev["email_notifications"] = notify
		}
		if len(prev) == 0 {
			return nil
		}
		if u, err = tx.UpdateUser(ctx, userID, upd, now); err != nil {
			return err
		}
		return tx.Emit(ctx, ams.AccountUpdatedEvent(u, prev, now))
	})
	if err != nil {
		return nil, err
	}
	return u, nil
}
