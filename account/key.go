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
	// HeldBy is the credential that creates the key through the API (nil:
	// the account holder, through the account pages or the CLI, who may
	// give any permission). A credential never grants more than it holds
	// (CheckHeld).
	HeldBy *Credential
}

// Credential is what an API key or OAuth access token that creates a key
// holds: its permissions (admin holds all five) and when it expires (nil:
// never).
type Credential struct {
	Permissions ams.Permissions
	ExpiresAt   *time.Time
	// ClientID and GrantID name the OAuth grant behind the credential: an
	// access token's, or the one that made the API key (ams.APIKey's
	// OAuthClientID, OAuthGrantID); "" for none. A key the credential
	// creates records them and dies with the grant.
	ClientID, GrantID string
}

// CheckHeld returns the EFORBIDDEN error of a key that would hold more
// than the credential c creating it: a permission c does not hold
// (code permission_not_held, param permissions), or a longer life: when
// c expires, the key must expire no later (code lifetime_not_held, param
// expires_at). nil when c is nil (the account holder).
func CheckHeld(c *Credential, perms ams.Permissions, expiresAt *time.Time) error {
	if c == nil {
		return nil
	}
	if !c.Permissions.Holds(perms) {
		var missing ams.Permissions
		for _, p := range perms {
			if !c.Permissions.Holds(ams.Permissions{p}) {
				missing = append(missing, p)
			}
		}
		return &ams.Error{Kind: ams.EFORBIDDEN, Code: "permission_not_held", Param: "permissions",
			Message: "A credential cannot create a key with a permission it does not hold itself: this one holds " +
				c.Permissions.String() + ", not " + missing.String() + "."}
	}
	if c.ExpiresAt != nil && (expiresAt == nil || expiresAt.After(*c.ExpiresAt)) {
		return &ams.Error{Kind: ams.EFORBIDDEN, Code: "lifetime_not_held", Param: "expires_at",
			Message: "A credential cannot create a key that outlives it: this one expires at " +
				c.ExpiresAt.UTC().Format(time.RFC3339) + ", so expires_at must be set and no later."}
	}
	return nil
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
	switch {
	case in.ExpiresAt != nil && !in.ExpiresAt.After(s.Clock.Now()):
		f.fail("expires_at", "The expiry date must be in the future.")
	case in.ExpiresAt != nil && in.ExpiresAt.UTC().Year() > 9999: // checked in UTC, as stored
		f.fail("expires_at", "The expiry date must be before the year 10000 (in UTC).")
	}
	return perms, f.err()
}

// CreateKey creates an API key of the account and returns its secret, to
// be shown once (only its hash is stored), with the stored record; the
// api_key.created event is emitted in the same transaction. An account on
// the early-access waitlist may not create keys (ams.ErrWaitlisted,
// EFORBIDDEN, before any field is checked); wrong fields are as CheckKey
// says, then a key beyond what in.HeldBy holds is as CheckHeld says; an
// account that has ams.MaxAPIKeys keys in use (neither revoked nor
// expired) gets ams.ErrKeyLimit (ECONFLICT api_key_limit_reached),
// counted in the creating transaction.
func (s *Service) CreateKey(ctx context.Context, userID string, in NewKey) (string, *ams.APIKey, error) {
	u, err := s.Store.FindUser(ctx, userID)
	if err != nil {
		return "", nil, err
	}
	if !u.Approved() {
		return "", nil, ams.ErrWaitlisted()
	}
	if in.ExpiresAt != nil { // stored to the millisecond
		t := in.ExpiresAt.UTC().Truncate(time.Millisecond)
		in.ExpiresAt = &t
	}
	perms, err := s.CheckKey(in)
	if err != nil {
		return "", nil, err
	}
	if err := CheckHeld(in.HeldBy, perms, in.ExpiresAt); err != nil {
		return "", nil, err
	}
	now := s.Clock.Now()
	secret, k := ams.NewAPIKey(u.ID, strings.TrimSpace(in.Name), perms, now, in.ExpiresAt)
	if in.HeldBy != nil {
		k.OAuthClientID, k.OAuthGrantID = in.HeldBy.ClientID, in.HeldBy.GrantID
	}
	err = s.Store.Update(ctx, func(tx ams.Tx) error {
		n, err := tx.CountActiveKeys(ctx, u.ID, now) // locks the account's row
		if err != nil {
			return err
		}
		if n >= ams.MaxAPIKeys {
			return ams.ErrKeyLimit(ams.MaxAPIKeys)
		}
		if err := tx.CreateKey(ctx, k); err != nil {
			return err
		}
		ams.KeepAnswer(ctx, &ams.SecretAnswer{Record: k, Secret: secret})
		return tx.Emit(ctx, ams.APIKeyEvent(ams.EventAPIKeyCreated, k, now))
	})
	if err != nil {
		return "", nil, err
	}
	return secret, k, nil
}

// RevokeKey revokes the account's key id: it is refused from its next
// request on, and api_key.revoked is emitted in the same transaction.
// Revoking a revoked key keeps its first revocation time and emits
// nothing. A key of another account is ENOTFOUND, as a missing one;
// userID "" revokes the key whoever it belongs to (the operator's `ams
// keys revoke`).
func (s *Service) RevokeKey(ctx context.Context, userID, id string) (*ams.APIKey, error) {
	now := s.Clock.Now()
	var k *ams.APIKey
	err := s.Store.Update(ctx, func(tx ams.Tx) error {
		var err error
		k, err = tx.FindKey(ctx, id) // locks the key until the end
		if ams.IsNotFound(err) || err == nil && userID != "" && k.UserID != userID {
			return ams.NotFound("api_key", id)
		} else if err != nil {
			return err
		}
		if k.RevokedAt != nil {
			return nil
		}
		if k, err = tx.RevokeKey(ctx, k.UserID, id, now); err != nil {
			return err
		}
		return tx.Emit(ctx, ams.APIKeyEvent(ams.EventAPIKeyRevoked, k, now))
	})
	if err != nil {
		return nil, err
	}
	return k, nil
}
