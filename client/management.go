package client

import (
	"context"
	"iter"
	"net/http"
	"time"
)

// This file covers the management API (permission admin): the account's
// API keys, its OAuth clients and its settings. Every change is audited
// in the account's events (api_key.created, api_key.revoked,
// oauth_client.created, oauth_client.secret_rotated,
// oauth_client.deleted, account.updated).

// The event types of the management API's audit events.
const (
	EventAPIKeyCreated            = "api_key.created"
	EventAPIKeyRevoked            = "api_key.revoked"
	EventOAuthClientCreated       = "oauth_client.created"
	EventOAuthClientSecretRotated = "oauth_client.secret_rotated"
	EventOAuthClientDeleted       = "oauth_client.deleted"
	EventAccountUpdated           = "account.updated"
)

// APIKey is an API key of the account. Its secret is shown once, on
// creation (CreatedAPIKey); Prefix and Last4 are enough to recognise it.
type APIKey struct {
	ID          string     `json:"id"`     // "key_..."
	Object      string     `json:"object"` // "api_key"
	Name        string     `json:"name"`
	Prefix      string     `json:"prefix"` // "ams_sk_"
	Last4       string     `json:"last4"`
	Permissions []string   `json:"permissions"`
	Status      string     `json:"status"` // "active", "expired" or "revoked"
	CreatedAt   time.Time  `json:"created_at"`
	LastUsedAt  *time.Time `json:"last_used_at"`
	ExpiresAt   *time.Time `json:"expires_at"`
	RevokedAt   *time.Time `json:"revoked_at"`
	// OAuthClientID is the OAuth app whose access token made the key
	// (directly or through a key it made), nil for a key the account
	// holder made: the key is revoked with that grant.
	OAuthClientID *string `json:"oauth_client_id"`
}

// CreatedAPIKey is a new API key with its secret, shown this once.
type CreatedAPIKey struct {
	APIKey
	// Secret is the key, for Authorization: Bearer; only its hash is
	// stored.
	Secret string `json:"secret"`
}

// CreateAPIKeyParams are the fields of a new API key.
type CreateAPIKeyParams struct {
	Name string
	// Permissions: "read", "write", "admin", "messages", "integrations";
	// the calling credential must hold each (admin holds all).
	Permissions []string
	// ExpiresAt is when the key stops working (nil: never). A caller that
	// expires itself must give one no later than its own expiry.
	ExpiresAt *time.Time
	// IdempotencyKey is sent as the Idempotency-Key header; empty lets the
	// client generate one. A retry with the same key within 24 hours
	// replays the first answer, the same key and secret.
	IdempotencyKey string
}

// CreateAPIKey creates an API key of the account (createAPIKey, POST
// /v1/keys; permission admin) and returns it with its secret, shown this
// once. A permission the caller does not hold is 403
// permission_not_held; a key outliving an expiring caller is 403
// lifetime_not_held.
func (c *Client) CreateAPIKey(ctx context.Context, p CreateAPIKeyParams) (*CreatedAPIKey, error) {
	body := map[string]any{"name": p.Name, "permissions": p.Permissions}
	if p.Permissions == nil {
		body["permissions"] = []string{}
	}
	setTime(body, "expires_at", p.ExpiresAt, false)
	return post[CreatedAPIKey](ctx, c, "/keys", body, p.IdempotencyKey)
}

// ListAPIKeys returns one page of the account's API keys, revoked and
// expired ones included (listAPIKeys, GET /v1/keys; permission admin).
func (c *Client) ListAPIKeys(ctx context.Context, p *ListParams) (*List[APIKey], error) {
	return get[List[APIKey]](ctx, c, "/keys", p.query())
}

// AllAPIKeys iterates over the API keys from the page p selects on,
// fetching pages as needed; see Paginate.
func (c *Client) AllAPIKeys(ctx context.Context, p *ListParams) iter.Seq2[APIKey, error] {
	return Paginate(ctx, p, c.ListAPIKeys)
}

// GetAPIKey returns the API key with id, without its secret (getAPIKey,
// GET /v1/keys/{id}; permission admin).
func (c *Client) GetAPIKey(ctx context.Context, id string) (*APIKey, error) {
	return getByID[APIKey](ctx, c, "/keys", id)
}

// RevokeAPIKey revokes the API key with id (revokeAPIKey, POST
// /v1/keys/{id}/revoke; permission admin): requests made with it are
// refused from then on. The key stays listed, with Status "revoked";
// revoking it again changes nothing.
func (c *Client) RevokeAPIKey(ctx context.Context, id string) (*APIKey, error) {
	return postAction[APIKey](ctx, c, "/keys", id, "/revoke", nil, "")
}

// OAuthClient is an OAuth 2.0 client the account registered. Its secret is
// shown once, on registration and rotation (OAuthClientWithSecret).
type OAuthClient struct {
	ID           string    `json:"id"`     // "cli_...", the client_id
	Object       string    `json:"object"` // "oauth_client"
	Name         string    `json:"name"`
	RedirectURIs []string  `json:"redirect_uris"`
	Public       bool      `json:"public"` // no secret; PKCE required
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

// OAuthClientWithSecret is a client with its secret, shown this once;
// ClientSecret is nil for a public client.
type OAuthClientWithSecret struct {
	OAuthClient
	ClientSecret *string `json:"client_secret"`
}

// CreateOAuthClientParams are the fields of a client to register.
type CreateOAuthClientParams struct {
	Name         string
	RedirectURIs []string
	// Public registers a public client (a browser or mobile app): no
	// secret, PKCE required.
	Public         bool
	IdempotencyKey string
}

// CreateOAuthClient registers an OAuth client (createOAuthClient, POST
// /v1/oauth/clients; permission admin) and returns it with its secret
// (confidential clients), shown this once.
func (c *Client) CreateOAuthClient(ctx context.Context, p CreateOAuthClientParams) (*OAuthClientWithSecret, error) {
	body := map[string]any{"name": p.Name, "redirect_uris": p.RedirectURIs, "public": p.Public}
	if p.RedirectURIs == nil {
		body["redirect_uris"] = []string{}
	}
	return post[OAuthClientWithSecret](ctx, c, "/oauth/clients", body, p.IdempotencyKey)
}

// ListOAuthClients returns one page of the account's OAuth clients
// (listOAuthClients, GET /v1/oauth/clients; permission admin).
func (c *Client) ListOAuthClients(ctx context.Context, p *ListParams) (*List[OAuthClient], error) {
	return get[List[OAuthClient]](ctx, c, "/oauth/clients", p.query())
}

// AllOAuthClients iterates over the OAuth clients from the page p selects
// on, fetching pages as needed; see Paginate.
func (c *Client) AllOAuthClients(ctx context.Context, p *ListParams) iter.Seq2[OAuthClient, error] {
	return Paginate(ctx, p, c.ListOAuthClients)
}

// GetOAuthClient returns the OAuth client with id (getOAuthClient, GET
// /v1/oauth/clients/{id}; permission admin).
func (c *Client) GetOAuthClient(ctx context.Context, id string) (*OAuthClient, error) {
	return getByID[OAuthClient](ctx, c, "/oauth/clients", id)
}

// RotateOAuthClientSecret gives the confidential client with id a new
// secret, shown this once; the old one stops working at once
// (rotateOAuthClientSecret, POST /v1/oauth/clients/{id}/rotate_secret;
// permission admin). A public client is 409 public_client.
func (c *Client) RotateOAuthClientSecret(ctx context.Context, id string) (*OAuthClientWithSecret, error) {
	return postAction[OAuthClientWithSecret](ctx, c, "/oauth/clients", id, "/rotate_secret", nil, "")
}

// DeleteOAuthClient deletes the OAuth client with id and every token it
// holds (deleteOAuthClient, DELETE /v1/oauth/clients/{id}; permission
// admin).
func (c *Client) DeleteOAuthClient(ctx context.Context, id string) error {
	return del(ctx, c, "/oauth/clients", id)
}

// Account is the account of the credential.
type Account struct {
	ID     string `json:"id"`     // "usr_..."
	Object string `json:"object"` // "account"
	Email  string `json:"email"`
	Plan   string `json:"plan"` // "standard", "professional" or "enterprise"
	Limits struct {
		RequestsPerMinute int `json:"requests_per_minute"`
		RequestsPerDay    int `json:"requests_per_day"`
	} `json:"limits"`
	Timezone           string             `json:"timezone"` // IANA name
	EmailNotifications EmailNotifications `json:"email_notifications"`
	Approved           bool               `json:"approved"` // false while on the early-access waitlist
	CreatedAt          time.Time          `json:"created_at"`
	UpdatedAt          time.Time          `json:"updated_at"`
}

// EmailNotifications are the e-mails the account receives, each on unless
// turned off.
type EmailNotifications struct {
	KeyReminders   bool `json:"key_reminders"`   // 14 days before a key expires or turns 90 days old
	WebhookFailing bool `json:"webhook_failing"` // a webhook was marked failing
}

// UpdateAccountParams are the settings to change; nil fields are kept.
type UpdateAccountParams struct {
	Timezone       *string // an IANA name such as "Europe/Paris"
	KeyReminders   *bool
	WebhookFailing *bool
}

// GetAccount returns the account of the credential (getAccount, GET
// /v1/account; permission admin).
func (c *Client) GetAccount(ctx context.Context) (*Account, error) {
	return get[Account](ctx, c, "/account", nil)
}

// UpdateAccount changes the settings p sets (updateAccount, PATCH
// /v1/account; permission admin). A wrong time zone is 400
// parameter_invalid.
func (c *Client) UpdateAccount(ctx context.Context, p UpdateAccountParams) (*Account, error) {
	body := map[string]any{}
	setString(body, "timezone", p.Timezone)
	if p.KeyReminders != nil || p.WebhookFailing != nil {
		n := map[string]any{}
		if p.KeyReminders != nil {
			n["key_reminders"] = *p.KeyReminders
		}
		if p.WebhookFailing != nil {
			n["webhook_failing"] = *p.WebhookFailing
		}
		body["email_notifications"] = n
	}
	out := new(Account)
	if err := c.Request(ctx, http.MethodPatch, "/account", body, out); err != nil {
		return nil, err
	}
	return out, nil
}
