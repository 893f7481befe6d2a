package account

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/amsdev/ams"
)

// NewKey is an API key to create.
type NewKey struct {
	// Name says what the key is for (1 to MaxKeyName characters, trimmed).
	Name string
	// Permissions are the permission names, each an element or several
	// separated by commas ("read,messages"); at least one.
	Permissions []string
	// ExpiresAt is when the key stops working (nil: never); it must be
	// in the future.
	ExpiresAt *time.Time
}

// CheckKey validates a key to create without writing anything: every
// wrong field at once (ams.FieldErrors), in the order name, permissions,
// expires_at. It returns the parsed permissions.
func (s *Service) CheckKey(in NewKey) (ams.Permissions, error) {
	var f fields
	name := strings.TrimSpace(in.Name)
	switch {
	case name == "":
		f.fail("name", "Enter a name for the key, such as the program that will use it.")
	case !utf8.ValidString(name) || utf8.RuneCountInString(name) > MaxKeyName:
		f.fail("name", "The name must be at most 100 characters long.")
	}
	var perms ams.Permissions
	joined := strings.Join(in.Permissions, ",")
	if strings.Trim(joined, ", +") == "" {
		f.fail("permissions", "Choose at least one permission.")
	} else {
		var err error
		if perms, err = ams.ParsePermissions(joined); err != nil {
			f.fail("permissions", "Choose at least one permission: "+err.Error()+".")
		}
	}
	if in.ExpiresAt != nil && !in.ExpiresAt.After(s.Clock.Now()) {
		f.fail("expires_at", "The expiry date must be in the future.")
	}
	return perms, f.err()
}

// CreateKey creates an API key of the account and returns its secret, to
// be shown once (only its hash is stored), with the stored record. An
// account on the early-access waitlist may not create keys
// (ams.ErrWaitlisted, EFORBIDDEN, before any field is checked); wrong
// fields are as CheckKey says.
func (s *Service) CreateKey(ctx context.Context, userID string, in NewKey) (string, *ams.APIKey, error) {
	u, err := s.Store.FindUser(ctx, userID)
	if err != nil {
		return "", nil, err
	}
	if !u.Approved() {
		return "", nil, ams.ErrWaitlisted()
	}
	perms, err := s.CheckKey(in)
	if err != nil {
		return "", nil, err
	}
	secret, k := ams.NewAPIKey(u.ID, strings.TrimSpace(in.Name), perms, s.Clock.Now(), in.ExpiresAt)
	if err := s.Store.CreateKey(ctx, k); err != nil {
		return "", nil, err
	}
	return secret, k, nil
}

// RevokeKey revokes the account's key id: it is refused from its next
// request on. Revoking a revoked key keeps its first revocation time. A
// key of another account is ENOTFOUND, as a missing one; userID ""
// revokes the key whoever it belongs to (the operator's `ams keys
// revoke`).
func (s *Service) RevokeKey(ctx context.Context, userID, id string) (*ams.APIKey, error) {
	return s.Store.RevokeKey(ctx, userID, id, s.Clock.Now())
}
