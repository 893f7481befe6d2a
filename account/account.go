// Package account is the service of accounts and their API keys: sign-up
// and creating an account, password changes, password reset and e-mail
// verification by single-use links (tokens.go), letting an account off the
// early-access waitlist, and creating and revoking API keys. The account
// pages (package pages) and the CLI (`ams users`, `ams keys`) both call
// it, so an account or a key is checked and written the same way wherever
// the change comes from; so does the management API (/v1/keys,
// /v1/account). Every change of a key or of the account's settings is
// written with its audit event (api_key.created, api_key.revoked,
// account.updated) in one transaction.
//
// The rules of the fields live here once. Each error is an EINVALID
// *ams.Error naming its field (email, password, password_confirm,
// timezone, current_password, new_password, new_password_confirm, name,
// permissions, expires_at) with a sentence meant for the user; when
// several fields are wrong, the error is an ams.FieldErrors listing each, in
// the order of the form (errors.As finds the first).
package account

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/password"
)

// MinPasswordLength is the shortest password accepted, in characters.
const MinPasswordLength = 10

// MaxKeyName is the longest name of an API key, in characters.
const MaxKeyName = 100

// Service changes accounts and API keys.
type Service struct {
	// Store holds the accounts, their keys and their login sessions.
	Store Store
	// Clock is the service clock (nil: the wall clock).
	Clock ams.Clock
	// BaseURL is the service's public URL, without a trailing slash: the
	// links of the e-mails it sends (password reset, verification) start
	// with it.
	BaseURL string
	// Hash hashes a password that passed the service's rules (nil:
	// password.Hash, bcrypt at password.Cost). Tests set a cheaper one.
	Hash func(pw string) (string, error)
}

// Store is what the Service needs of the storage engine; ams.Store
// satisfies it.
type Store interface {
	CreateUser(ctx context.Context, u *ams.User) error
	FindUser(ctx context.Context, id string) (*ams.User, error)
	FindUserByEmail(ctx context.Context, email string) (*ams.User, error)
	UpdateUser(ctx context.Context, id string, upd ams.UserUpdate, now time.Time) (*ams.User, error)
	DeleteOtherLoginSessions(ctx context.Context, userID, keep string) error
	// Update runs a change and its audit event (api_key.created, ...)
	// in one transaction.
	Update(ctx context.Context, fn func(tx ams.Tx) error) error
	ams.AccountTokenStore
}

// fields is a list of field errors being collected.
type fields []*ams.Error

func (f *fields) fail(param, msg string) {
	*f = append(*f, ams.ParamError("parameter_invalid", param, "%s", msg))
}

// err returns the list as one error: nil when empty.
func (f fields) err() error {
	if len(f) == 0 {
		return nil
	}
	return ams.FieldErrors(f)
}

func (s *Service) hash(pw string) (string, error) {
	if s.Hash != nil {
		return s.Hash(pw)
	}
	return password.Hash(pw)
}

// NormalizeEmail returns the stored form of an e-mail address: trimmed
// and in lower case, so that one address is one account however it is
// typed.
func NormalizeEmail(e string) string { return strings.ToLower(strings.TrimSpace(e)) }

// checkEmail says what is wrong with a (trimmed) e-mail address, or "".
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

// CheckPassword returns the EINVALID error (param "password") of a new
// password that the rules refuse, or nil.
func CheckPassword(pw string) error {
	var f fields
	if msg := checkPassword(pw); msg != "" {
		f.fail("password", msg)
	}
	return f.err()
}

// HashPassword checks a new password against the rules (CheckPassword)
// and returns its hash, for a password set by an operator (`ams users
// update --password-stdin`).
func (s *Service) HashPassword(pw string) (string, error) {
	if err := CheckPassword(pw); err != nil {
		return "", err
	}
	return s.hash(pw)
}
