package ams

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Permission is one of the five permissions a key or token may hold.
type Permission string

// The permissions of the interface. Admin grants everything.
const (
	PermRead         Permission = "read"
	PermWrite        Permission = "write"
	PermAdmin        Permission = "admin"
	PermMessages     Permission = "messages"
	PermIntegrations Permission = "integrations"
)

// AllPermissions lists the permissions in their canonical order.
var AllPermissions = []Permission{PermRead, PermWrite, PermAdmin, PermMessages, PermIntegrations}

// Permissions is a set of permissions, kept sorted in canonical order.
type Permissions []Permission

// parsed caches ParsePermissions of stored lists: there are only a few
// distinct ones, and authentication parses one on every request.
var parsed sync.Map // string -> Permissions

// ParsePermissions parses a list separated by commas, spaces or '+'.
// It rejects unknown words and an empty list. The result is shared: do not
// modify it.
func ParsePermissions(s string) (Permissions, error) {
	if ps, ok := parsed.Load(s); ok {
		return ps.(Permissions), nil
	}
	ps, err := parsePermissions(s)
	if err == nil && len(s) <= 64 {
		parsed.Store(s, ps)
	}
	return ps, err
}

func parsePermissions(s string) (Permissions, error) {
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '+' })
	var ps Permissions
	for _, f := range fields {
		p := Permission(strings.ToLower(f))
		if !slices.Contains(AllPermissions, p) {
			return nil, fmt.Errorf("unknown permission %q (want read, write, admin, messages or integrations)", f)
		}
		ps = append(ps, p)
	}
	if len(ps) == 0 {
		return nil, fmt.Errorf("no permission given")
	}
	return ps.normalize(), nil
}

func (ps Permissions) normalize() Permissions {
	var out Permissions
	for _, p := range AllPermissions {
		if slices.Contains(ps, p) {
			out = append(out, p)
		}
	}
	return out
}

// Allows reports whether the set holds admin or any one of want.
func (ps Permissions) Allows(want ...Permission) bool {
	for _, p := range ps {
		if p == PermAdmin || slices.Contains(want, p) {
			return true
		}
	}
	return false
}

// String joins the permissions with commas.
func (ps Permissions) String() string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = string(p)
	}
	return strings.Join(s, ",")
}

// APIKey is a long-lived secret credential of a user. Only the hash of the
// secret is stored; the secret itself is shown once, on creation.
type APIKey struct {
	ID          string      `json:"id"`
	Object      string      `json:"object"` // "api_key"
	UserID      string      `json:"user_id"`
	Name        string      `json:"name"`
	Hint        string      `json:"hint"` // e.g. "ams_sk_…Xy3Z", enough to recognise the key
	Hash        string      `json:"-"`
	Permissions Permissions `json:"permissions"`
	CreatedAt   time.Time   `json:"created_at"`
	LastUsedAt  *time.Time  `json:"last_used_at"`
	ExpiresAt   *time.Time  `json:"expires_at"`
	RevokedAt   *time.Time  `json:"revoked_at"`
	// OAuthClientID and OAuthGrantID name the OAuth grant that made the
	// key ("" for a key the account holder made): the client and the
	// grant's request id, which every token of one authorization shares
	// across refreshes. The key is revoked with the grant (its
	// revocation, refresh-token reuse, the user's revocation of the app,
	// the client's deletion).
	OAuthClientID string `json:"-"`
	OAuthGrantID  string `json:"-"`
}

// KeyHint returns the displayable hint of a secret: its prefix and its last
// four characters.
func KeyHint(secret string) string {
	if len(secret) < len(PrefixSecretKey)+4 {
		return PrefixSecretKey + "…"
	}
	return PrefixSecretKey + "…" + secret[len(secret)-4:]
}

// NewAPIKey makes a new key for the user and returns its secret, to be
// shown once, and the record to store, which holds only the secret's hash.
func NewAPIKey(userID, name string, perms Permissions, now time.Time, expiresAt *time.Time) (string, *APIKey) {
	secret := NewSecret(PrefixSecretKey)
	return secret, &APIKey{
		ID: NewID(PrefixAPIKey), Object: "api_key", UserID: userID, Name: name,
		Hint: KeyHint(secret), Hash: HashSecret(secret), Permissions: perms,
		CreatedAt: now, ExpiresAt: expiresAt,
	}
}

// APIKeyRecord is an API key as the management API shows it (GET
// /v1/keys), and the data of the api_key.* events: never the secret nor
// its hash; the secret's prefix and last four characters, as the account
// pages show them, are enough to recognise it.
type APIKeyRecord struct {
	ID          string      `json:"id"`
	Object      string      `json:"object"` // "api_key"
	Name        string      `json:"name"`
	Prefix      string      `json:"prefix"` // "ams_sk_"
	Last4       string      `json:"last4"`
	Permissions Permissions `json:"permissions"`
	// Status is "active", "expired" or "revoked".
	Status     string     `json:"status"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	ExpiresAt  *time.Time `json:"expires_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
	// OAuthClientID is the OAuth client whose access token made the key
	// (through POST /v1/keys, directly or through a key it made), null
	// for a key the account holder made. The key dies with that grant.
	OAuthClientID *string `json:"oauth_client_id"`
}

// Status returns "revoked", "expired" (at now) or "active".
func (k *APIKey) Status(now time.Time) string {
	switch {
	case k.RevokedAt != nil:
		return "revoked"
	case k.ExpiresAt != nil && !now.Before(*k.ExpiresAt):
		return "expired"
	}
	return "active"
}

// Record returns the key as the API shows it, its status at now.
func (k *APIKey) Record(now time.Time) *APIKeyRecord {
	last4 := ""
	if i := strings.LastIndex(k.Hint, "…"); i >= 0 {
		last4 = k.Hint[i+len("…"):]
	}
	perms := k.Permissions
	if perms == nil {
		perms = Permissions{}
	}
	r := &APIKeyRecord{ID: k.ID, Object: "api_key", Name: k.Name, Prefix: PrefixSecretKey, Last4: last4, Permissions: perms,
		Status: k.Status(now), CreatedAt: k.CreatedAt, LastUsedAt: k.LastUsedAt, ExpiresAt: k.ExpiresAt, RevokedAt: k.RevokedAt}
	if k.OAuthClientID != "" {
		c := k.OAuthClientID
		r.OAuthClientID = &c
	}
	return r
}

// Holds reports whether the set holds every permission of want: admin
// holds all five.
func (ps Permissions) Holds(want Permissions) bool {
	if slices.Contains(ps, PermAdmin) {
		return true
	}
	for _, p := range want {
		if !slices.Contains(ps, p) {
			return false
		}
	}
	return true
}

// KeyStore keeps API keys. AuthenticateKey finds a key by the hash of its
// secret, with its user, whether revoked or expired or not (the caller
// decides); ENOTFOUND if no key has that hash. It runs on every request,
// so it fills only what authentication needs: the key's id, user id,
// permissions, expiry and revocation, and the user's id, e-mail, plan,
// limits and time zone. TouchKey records a use.
type KeyStore interface {
	CreateKey(ctx context.Context, k *APIKey) error
	ListKeys(ctx context.Context, userID string) ([]*APIKey, error)
	// ListKeyPage returns a page of the user's keys (revoked and expired
	// ones included), newest first unless p.Order is asc; the cursor
	// must be one of the user's keys, else EINVALID.
	ListKeyPage(ctx context.Context, userID string, p ListParams) (*Page[*APIKey], error)
	FindKey(ctx context.Context, id string) (*APIKey, error)
	RevokeKey(ctx context.Context, userID, id string, now time.Time) (*APIKey, error)
	AuthenticateKey(ctx context.Context, hash string) (*APIKey, *User, error)
	TouchKey(ctx context.Context, id string, now time.Time) error
}

// AuthWatch tells a process when what it has cached of authentication
// may be stale. AuthGeneration returns the authentication generation: a
// number that changes with every committed change, by any process, that
// can alter what an API key or access token authenticates as — a key
// revoked, its permissions or expiry changed, a token revoked (by itself,
// with its grant or client), an account changed or deleted. It is read
// on every authenticated request, so the engines answer it without a
// query when they can (SQLite: PRAGMA data_version; PostgreSQL:
// LISTEN/NOTIFY) and read the stored counter otherwise. A caller caches
// a credential with the generation read before it looked the credential
// up, and uses it only while AuthGeneration still returns that value.
type AuthWatch interface {
	AuthGeneration(ctx context.Context) (int64, error)
}

// The rotation reminders: the owner of an active API key gets one e-mail
// KeyReminderLead before the key expires, and one KeyReminderLead before
// it turns KeyRotationAge old (the interface recommends rotating keys every
// 90 days), each at most once per key.
const (
	KeyRotationAge  = 90 * 24 * time.Hour
	KeyReminderLead = 14 * 24 * time.Hour
)

// KeyReminderReason is why a key's owner is reminded.
type KeyReminderReason string

// The reasons of a key reminder.
const (
	// KeyReminderExpiry: the key expires within KeyReminderLead.
	KeyReminderExpiry KeyReminderReason = "expiry"
	// KeyReminderAge: the key turns KeyRotationAge old within
	// KeyReminderLead (or already has), and does not expire before.
	KeyReminderAge KeyReminderReason = "age"
)

// KeyReminder is a reminder due for a key: the key (without its hash),
// its owner (id, e-mail and time zone), the reason, and the moment it is
// about: the key's expiry, or when it turns KeyRotationAge old.
type KeyReminder struct {
	Key    *APIKey
	User   *User
	Reason KeyReminderReason
	At     time.Time
}

// KeyReminderStore finds the keys whose owners are due a reminder and
// records each reminder with its e-mail.
type KeyReminderStore interface {
	// DueKeyReminders returns at most limit reminders due at now, oldest
	// key first: for each active key (not revoked, not expired at now) one
	// per reason not yet reminded whose moment is within KeyReminderLead
	// of now — its expiry, or its turning KeyRotationAge old (also when
	// that has passed), unless the key expires by then.
	DueKeyReminders(ctx context.Context, now time.Time, limit int) ([]*KeyReminder, error)
	// RemindKey marks the key reminded for reason at now and queues e, in
	// one transaction, only if the key is still active and not yet
	// reminded for reason; it reports whether it did. Of several callers
	// for the same key and reason, across processes, one does. When e's
	// recipient has reached the cap of key reminders (EmailCaps), the key
	// is marked reminded all the same, e is not queued, and it reports
	// false.
	RemindKey(ctx context.Context, keyID string, reason KeyReminderReason, e *Email, now time.Time) (bool, error)
}
