package account

import (
	"context"
	"fmt"
	"time"

	"github.com/amsdev/ams"
)

// Caps on the links e-mailed to one account, so that nobody can flood an
// address through the forms: at most MaxResetEmails password-reset links
// per ResetEmailWindow, and at most MaxVerificationEmails verification
// links per VerificationEmailWindow. A request over the cap gets the same
// answer as any other, and no e-mail. Every e-mail has a per-recipient cap
// too (ams.EmailCaps), which the store applies when it queues one.
const (
	MaxResetEmails          = 3
	ResetEmailWindow        = time.Hour
	MaxVerificationEmails   = 5
	VerificationEmailWindow = 24 * time.Hour
)

// Paths of the links e-mailed (under the service's BaseURL), followed by
// the token.
const (
	ResetPath  = "/reset-password/"
	VerifyPath = "/verify-email/"
)

// newToken returns a new link secret (about 238 random bits) and its
// stored form.
func newToken() (secret, hash string) {
	secret = ams.NewSecret("")
	return secret, ams.HashSecret(secret)
}

// SignUp creates an account from the sign-up form: on the early-access
// waitlist, on the standard plan, its e-mail address unverified, and
// queues the verification e-mail (a link valid for 24 hours). It never
// reveals whether the address is registered: when it is taken, it
// hashes the password all the same (so that both answers take as long),
// e-mails the address's owner a notice instead (at most
// ams.EmailCaps[ams.EmailSignupTaken] a day: over it, none, and the same
// answer), and returns nil and no error. Invalid fields are
// ams.FieldErrors, as CheckSignUp's.
func (s *Service) SignUp(ctx context.Context, in SignUp) (*ams.User, error) {
	if err := s.CheckSignUp(in); err != nil {
		return nil, err
	}
	email := NormalizeEmail(in.Email)
	existing, err := s.Store.FindUserByEmail(ctx, email)
	if err == nil {
		if _, err := s.hash(in.Password); err != nil {
			return nil, err
		}
		return nil, s.Store.QueueEmail(ctx, s.takenEmail(existing), s.Clock.Now())
	} else if !ams.IsNotFound(err) {
		return nil, err
	}
	u, err := s.create(ctx, NewUser{Email: email, Password: in.Password, Timezone: in.Timezone, Plan: ams.PlanStandard}, true)
	if ams.ErrorKindOf(err) == ams.ECONFLICT {
		return nil, nil // signed up a moment ago, by another request
	} else if err != nil {
		return nil, err
	}
	if _, err := s.SendVerification(ctx, u); err != nil {
		return nil, err
	}
	return u, nil
}

// SendVerification e-mails u a new verification link, valid for
// ams.EmailVerificationLifetime (24 hours), unless the address is verified
// or the cap of MaxVerificationEmails a day is reached. It reports whether
// it queued an e-mail.
func (s *Service) SendVerification(ctx context.Context, u *ams.User) (bool, error) {
	if u.Verified() {
		return false, nil
	}
	now := s.Clock.Now()
	secret, hash := newToken()
	t := &ams.AccountToken{Hash: hash, UserID: u.ID, Purpose: ams.TokenEmailVerification, Email: u.Email,
		CreatedAt: now, ExpiresAt: now.Add(ams.EmailVerificationLifetime)}
	e := &ams.Email{ID: ams.NewID("eml_"), Kind: ams.EmailVerificationLink, To: u.Email, Subject: "Verify your e-mail address for ams", Text: fmt.Sprintf(`Hello,

to finish creating your ams account, verify your e-mail address by
opening this link within 24 hours:

  %s%s%s

The link works once. If it has expired, sign in and ask for a new one
on your account page.

If you did not create an ams account, ignore this e-mail: without
the link, the address stays unverified.

-- ams
`, s.BaseURL, VerifyPath, secret)}
	return s.Store.IssueAccountToken(ctx, t, e, now.Add(-VerificationEmailWindow), MaxVerificationEmails)
}

// takenEmail is the notice to the owner of an address someone tried to
// sign up with.
func (s *Service) takenEmail(u *ams.User) *ams.Email {
	return &ams.Email{ID: ams.NewID("eml_"), Kind: ams.EmailSignupTaken, To: u.Email, Subject: "Someone tried to create an ams account with your address", Text: fmt.Sprintf(`Hello,

someone (maybe you) tried to create a new ams account with this
e-mail address. You already have an account with it, so no new one
was made.

To sign in:            %s/login
Forgot your password?  %s/forgot-password

If it was not you, you do not need to do anything: your account
has not changed.

-- ams
`, s.BaseURL, s.BaseURL)}
}

// RequestPasswordReset e-mails the account with the address a link that
// sets a new password, valid for ams.PasswordResetLifetime (1 hour) and
// usable once (at most MaxResetEmails an hour). It never reveals whether
// the address is registered: an unknown address gets no e-mail and the
// same nil answer. Only a malformed address is an error (param email).
func (s *Service) RequestPasswordReset(ctx context.Context, email string) error {
	email = NormalizeEmail(email)
	if msg := checkEmail(email); msg != "" {
		var f fields
		f.fail("email", msg)
		return f.err()
	}
	u, err := s.Store.FindUserByEmail(ctx, email)
	if ams.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	now := s.Clock.Now()
	secret, hash := newToken()
	t := &ams.AccountToken{Hash: hash, UserID: u.ID, Purpose: ams.TokenPasswordReset, Email: u.Email,
		CreatedAt: now, ExpiresAt: now.Add(ams.PasswordResetLifetime)}
	e := &ams.Email{ID: ams.NewID("eml_"), Kind: ams.EmailPasswordResetLink, To: u.Email, Subject: "Reset your ams password", Text: fmt.Sprintf(`Hello,

someone (we hope you) asked to reset the password of your ams
account. To choose a new password, open this link within an hour:

  %s%s%s

The link works once. Setting a new password signs out every browser
signed in to your account.

If you did not ask for this, ignore this e-mail: your password stays
as it is.

-- ams
`, s.BaseURL, ResetPath, secret)}
	_, err = s.Store.IssueAccountToken(ctx, t, e, now.Add(-ResetEmailWindow), MaxResetEmails)
	return err
}

// Errors of a link that cannot be used.
var (
	errTokenInvalid = &ams.Error{Kind: ams.ENOTFOUND, Code: "token_invalid",
		Message: "This link is not valid. Check that you copied the whole link from the e-mail, or ask for a new one."}
	errTokenUsed = &ams.Error{Kind: ams.ENOTFOUND, Code: "token_used",
		Message: "This link was used already: each link works once. Ask for a new one if you need it."}
	errTokenExpired = &ams.Error{Kind: ams.ENOTFOUND, Code: "token_expired",
		Message: "This link has expired. Ask for a new one."}
)

// CheckToken returns nil when the link's token of purpose can be used now,
// else an ENOTFOUND error whose code says why: token_invalid (unknown),
// token_used or token_expired.
func (s *Service) CheckToken(ctx context.Context, purpose ams.TokenPurpose, secret string) error {
	if secret == "" || len(secret) > 100 {
		return errTokenInvalid
	}
	t, err := s.Store.FindAccountToken(ctx, ams.HashSecret(secret), purpose)
	if ams.IsNotFound(err) {
		return errTokenInvalid
	} else if err != nil {
		return err
	}
	switch {
	case t.UsedAt != nil:
		return errTokenUsed
	case !s.Clock.Now().Before(t.ExpiresAt):
		return errTokenExpired
	}
	return nil
}

// PasswordReset is the form of a password-reset link.
type PasswordReset struct {
	Token   string // the link's secret
	New     string
	Confirm string // must be the same as New
}

// ResetPassword sets the password of the account a reset link was sent
// to, with the rules of sign-up, and uses the link (once: a second use,
// or a use after it expired, is CheckToken's error). Every login session
// of the account ends, and its other reset links stop working. Wrong
// fields are ams.FieldErrors (new_password, new_password_confirm); the
// link stays usable then.
func (s *Service) ResetPassword(ctx context.Context, in PasswordReset) (*ams.User, error) {
	if err := s.CheckToken(ctx, ams.TokenPasswordReset, in.Token); err != nil {
		return nil, err
	}
	var f fields
	if msg := checkPassword(in.New); msg != "" {
		f.fail("new_password", msg)
	} else if in.Confirm != in.New {
		f.fail("new_password_confirm", "The two new passwords are not the same. Type the new password again in both fields.")
	}
	if err := f.err(); err != nil {
		return nil, err
	}
	h, err := s.hash(in.New)
	if err != nil {
		return nil, err
	}
	u, err := s.Store.ResetPassword(ctx, ams.HashSecret(in.Token), h, s.Clock.Now())
	if ams.IsNotFound(err) {
		// Used or expired between the check and now.
		return nil, s.CheckToken(ctx, ams.TokenPasswordReset, in.Token)
	}
	return u, err
}

// VerifyEmail uses a verification link: the account's address is
// verified (if it is still the one the link was sent to). A used, expired
// or unknown link is CheckToken's error.
func (s *Service) VerifyEmail(ctx context.Context, secret string) (*ams.User, error) {
	if err := s.CheckToken(ctx, ams.TokenEmailVerification, secret); err != nil {
		return nil, err
	}
	u, err := s.Store.VerifyEmail(ctx, ams.HashSecret(secret), s.Clock.Now())
	if ams.IsNotFound(err) {
		if cerr := s.CheckToken(ctx, ams.TokenEmailVerification, secret); cerr != nil {
			return nil, cerr
		}
	}
	return u, err
}
