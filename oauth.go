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
	// ListOAuthClientPage returns a page of the user's clients, newest
	// first unless p.Order is asc; the cursor must be one of the user's
	// clients, else EINVALID.
	ListOAuthClientPage(ctx context.Context, userID string, p ListParams) (*Page[*OAuthClient], error)
	// PublicRedirectURIs returns the redirect URIs of every public client
	// of every account, by client id: the API's CORS policy allows their
	// origins for requests that use the client's credentials (http/cors.go).
	PublicRedirectURIs(ctx context.Context) (map[string][]string, error)

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
	// RevokeGrant is DeactivateGrant for a revocation of the grant (RFC
	// 7009, refresh-token or code reuse): in the same transaction it
	// revokes at now the API keys the grant made (APIKey.OAuthGrantID),
	// emitting api_key.revoked for each.
	RevokeGrant(ctx context.Context, kind, requestID string, now time.Time) error

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
	// DeleteOtherLoginSessions ends every login session of the user but
	// the one whose id hash is keep (after a password change: whoever
	// signed in with the old password is signed out).
	DeleteOtherLoginSessions(ctx context.Context, userID, keep string) error

	// Management of a user's clients and grants (the account pages). Each
	// matches userID: another account's client is ENOTFOUND.
	//
	// SetOAuthClientSecret replaces the secret hash of a confidential
	// client (rotation: the old secret is refused from then on; tokens
	// already issued stay valid) and sets updated_at to now; a public
	// client is ECONFLICT. DeleteOAuthClient removes the client with every
	// token, code and grant of it, of every user, so its access stops at
	// once; the API keys its grants made are revoked at now, with their
	// api_key.revoked events, in the same transaction.
	SetOAuthClientSecret(ctx context.Context, userID, id, hash string, now time.Time) (*OAuthClient, error)
	DeleteOAuthClient(ctx context.Context, userID, id string, now time.Time) error
	// ListGrants returns the apps the user has authorized: one OAuthGrant
	// per client for which the user holds a live (active, unexpired at
	// now) access or refresh token, most recently granted first.
	// RevokeGrants deactivates every code, access and refresh token of the
	// user for the client (other users' grants of it stay); ENOTFOUND if
	// there was no active one. It revokes at now the API keys the user's
	// grants of the client made, with their api_key.revoked events, in
	// the same transaction.
	ListGrants(ctx context.Context, userID string, now time.Time) ([]*OAuthGrant, error)
	RevokeGrants(ctx context.Context, userID, clientID string, now time.Time) error
}

// OAuthGrant is an app a user has authorized, as the account pages list
// it: the client and what the user's live tokens for it allow.
type OAuthGrant struct {
	ClientID   string
	ClientName string
	// Scopes is the union of the scopes of the live tokens, in the order
	// of AllPermissions.
	Scopes []string
	// FirstGrantedAt is when the oldest token of the client still on
	// record for the user (live or not; expired tokens are purged a day
	// after they expire) was issued; LastGrantedAt when the newest was.
	FirstGrantedAt time.Time
	LastGrantedAt  time.Time
}
