package ams

import (
	"context"
	"time"
)

// TokenPurpose is what an account token (a link e-mailed to the account's
// address) is for.
type TokenPurpose string

// The purposes of account tokens.
const (
	// TokenPasswordReset lets whoever holds the link set a new password.
	TokenPasswordReset TokenPurpose = "password_reset"
	// TokenEmailVerification confirms that the account's holder reads
	// the account's e-mail address.
	TokenEmailVerification TokenPurpose = "email_verification"
)

// Lifetimes of account tokens.
const (
	PasswordResetLifetime     = time.Hour
	EmailVerificationLifetime = 24 * time.Hour
)

// AccountToken is a single-use link e-mailed to an account's address. The
// link's secret is never stored: Hash is its HashSecret, by which it is
// found.
type AccountToken struct {
	Hash    string
	UserID  string
	Purpose TokenPurpose
	// Email is the address the link was sent to: a verification link
	// verifies this address only (not one the account changed to since).
	Email     string
	CreatedAt time.Time
	ExpiresAt time.Time
	UsedAt    *time.Time
}

// Usable reports whether the token may be used at now: not used and not
// expired.
func (t *AccountToken) Usable(now time.Time) bool {
	return t.UsedAt == nil && now.Before(t.ExpiresAt)
}

// AccountTokenStore keeps the links e-mailed to accounts (password reset,
// e-mail verification) and uses them once.
type AccountTokenStore interface {
	// IssueAccountToken stores t and queues the e-mail e that carries its
	// link, in one transaction, unless the account already has max
	// tokens of t.Purpose created after since (a cap on the e-mails one
	// account gets) or e's recipient has reached the cap of e.Kind
	// (EmailCaps): then it stores and queues nothing and returns false.
	IssueAccountToken(ctx context.Context, t *AccountToken, e *Email, since time.Time, max int) (bool, error)
	// QueueEmail queues e alone (a notice that carries no link), unless
	// its recipient has reached the cap of e.Kind (EmailCaps): then it
	// queues nothing and returns nil all the same.
	QueueEmail(ctx context.Context, e *Email, now time.Time) error
	// FindAccountToken returns the token of purpose with the hash, used
	// or not, expired or not; ENOTFOUND if there is none.
	FindAccountToken(ctx context.Context, hash string, purpose TokenPurpose) (*AccountToken, error)
	// ResetPassword uses the password-reset token with the hash at now,
	// if it is usable, and in the same transaction sets the account's
	// password hash, marks every other reset token of the account used,
	// and ends all the account's login sessions; the address is verified
	// (the link reached it) if it is still the one the link was sent to.
	// It returns the account;
	// ENOTFOUND when the token is unknown, used or expired.
	ResetPassword(ctx context.Context, hash, passwordHash string, now time.Time) (*User, error)
	// VerifyEmail uses the verification token with the hash at now, if
	// it is usable, and marks the account's address verified when it is
	// still the address the token was sent to. It returns the account;
	// ENOTFOUND when the token is unknown, used or expired.
	VerifyEmail(ctx context.Context, hash string, now time.Time) (*User, error)
}
