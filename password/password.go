// Package password hashes and checks account passwords with bcrypt, a slow
// salted hash made for low-entropy secrets. (API keys and tokens are
// high-entropy and use a plain SHA-256; see ams.HashSecret.)
package password

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"golang.org/x/crypto/bcrypt"
)

// Cost is the bcrypt work factor.
const Cost = 12

// MinLength and MaxLength bound a password, in bytes. bcrypt reads at most
// 72 bytes; longer passwords are refused rather than silently cut.
const (
	MinLength = 8
	MaxLength = 72
)

// Validate reports why pw is not acceptable, or nil.
func Validate(pw string) error {
	switch {
	case !utf8.ValidString(pw):
		return errors.New("password is not valid UTF-8")
	case len(pw) < MinLength:
		return fmt.Errorf("password must be at least %d characters", MinLength)
	case len(pw) > MaxLength:
		return fmt.Errorf("password must be at most %d bytes", MaxLength)
	}
	return nil
}

// Hash validates pw and returns its bcrypt hash.
func Hash(pw string) (string, error) {
	if err := Validate(pw); err != nil {
		return "", err
	}
	h, err := bcrypt.GenerateFromPassword([]byte(pw), Cost)
	if err != nil {
		return "", fmt.Errorf("hash password: %w", err)
	}
	return string(h), nil
}

// Check reports whether pw matches hash, in constant time.
func Check(hash, pw string) bool {
	return hash != "" && bcrypt.CompareHashAndPassword([]byte(hash), []byte(pw)) == nil
}
