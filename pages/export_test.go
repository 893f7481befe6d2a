package pages

import (
	"golang.org/x/crypto/bcrypt"

	"github.com/amsdev/ams/password"
)

// HashPassword is the tests' password hash: bcrypt at its lowest cost, as
// the fixture's account service hashes (amstest.HashPassword), because
// at password.Cost one hash takes seconds under the race detector.
func HashPassword(pw string) (string, error) {
	if err := password.Validate(pw); err != nil {
		return "", err
	}
	h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
	return string(h), err
}
