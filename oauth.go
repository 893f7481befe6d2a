package ams

import (
	"context"
	"time"
)

// OAuth 2.0 lifetimes (interface and DESIGN.md).
const (
	AccessTokenLifetime   = time.Hour
	RefreshTokenLifetime  = 30 * 24 * time.Hour
	AuthorizeCodeLifetime = 10 * time.Minute
	LoginSessionLifetime  = 14 * 24 * time.Hour
)

// OAuthClient is a third-party program registered to act for users. A
// confidential client has a secret (stored hashed, shown once); a public
// one (a browser or mobile app) has none and must use PKCE.
type OAuthClient struct {
	ID           string    `json:"id"` // cli_
	Object       string    `json:"object"`
	UserID       string    `json:"-"` // the account that registered it
	Name         string    `json:"name"`
	RedirectURIs []string  `json:"redirect_uris"`
	Public       bool      `json:"public"`
	SecretHash   string    `json:"-"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

// OAuth token kinds, as stored.
const (
	TokenAuthorizeCode = "code"
	TokenAccess        = "access"
	TokenRefresh       = "refresh"
	TokenPKCE          = "pkce"
)

// OAuthToken is the stored state of an authorization code, access token,
// refresh token or PKCE challenge, keyed by the token's signature (never
// the token itself). RequestID ties together every token of one grant.
// Data is the OAuth library's serialized request; ams reads only the
// columns.
type OAuthToken struct {
	Signature string
	Kind      string
	RequestID string
	ClientID  string
	UserID    string
	Scopes    []string // granted
	Active    bool
	Data      []byte
	ExpiresAt time.Time
	CreatedAt time.Time
}

// LoginSession is a signed-in browser session of the account pages and the
// OAuth consent flow. Only the hash of its cookie value is stored.
type LoginSession struct {
	IDHash    string
	UserID    string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// OAuthStore is the storage of the authorization server.
type OAuthStore interface {
	// Clients. FindOAuthClient returns ENOTFOUND if there is none.
	CreateOAuthClient(ctx context.Context, c *OAuthClient) error
	FindOAuthClient(ctx context.Context, id string) (*OAuthClient, error)
	ListOAuthClients(ctx context.Context, userID string) ([]*OAuthClient, error)

	// Tokens. GetOAuthToken returns ENOTFOUND if no token of the kind has
	// the signature (inactive ones are returned, with Active false).
	CreateOAuthToken(ctx context.Context, t *OAuthToken) error
	GetOAuthToken(ctx context.Context, kind, signature string) (*OAuthToken, error)
	// DeactivateOAuthToken marks one token inactive; DeleteOAuthToken
	// removes it. Both are no-ops when it does not exist.
	DeactivateOAuthToken(ctx context.Context, kind, signature string) error
	DeleteOAuthToken(ctx context.Context, kind, signature string) error
	// DeactivateGrant marks every token of the kind in the grant (request
	// id) inactive.
	DeactivateGrant(ctx context.Context, kind, requestID string) error

	// Credential locks serialize the token requests that present one code
	// or refresh token, across every process serving the database: the
	// authorization server reads a credential and marks it used in two
	// steps. AcquireOAuthLock takes the lock name for owner until until,
	// unless another owner holds it with a lease still live at now; it
	// reports whether it took it. ReleaseOAuthLock gives it up (only
	// owner's hold; a no-op otherwise). A holder that dies without
	// releasing blocks the name until its lease ends.
	AcquireOAuthLock(ctx context.Context, name, owner string, now, until time.Time) (bool, error)
	ReleaseOAuthLock(ctx context.Context, name, owner string) error

	// Login sessions. FindLoginSession returns ENOTFOUND for an unknown or
	// expired session.
	CreateLoginSession(ctx context.Context, s *LoginSession) error
	FindLoginSession(ctx context.Context, idHash string, now time.Time) (*LoginSession, error)
	DeleteLoginSession(ctx context.Context, idHash string) error
}
