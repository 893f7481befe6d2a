package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Token endpoint authentication methods of a registered client.
const (
	// AuthMethodNone registers a public client (a browser or mobile app,
	// or an MCP client on a user's machine): no secret, and PKCE S256 is
	// required.
	AuthMethodNone = "none"
	// AuthMethodClientSecretBasic (the default) and
	// AuthMethodClientSecretPost register a confidential client, which
	// gets a secret once.
	AuthMethodClientSecretBasic = "client_secret_basic"
	AuthMethodClientSecretPost  = "client_secret_post"
)

// ClientMetadata is the client metadata of a registration (RFC 7591
// section 2), as POST /oauth/register reads it.
type ClientMetadata struct {
	// RedirectURIs are 1 to 10 absolute URIs: https, or http on localhost
	// or a loopback address, without fragment or user information.
	RedirectURIs []string `json:"redirect_uris"`
	// ClientName is shown on the consent page, with a note that the app
	// named itself; the server defaults it to the first redirect URI's
	// host.
	ClientName string `json:"client_name,omitempty"`
	// TokenEndpointAuthMethod is one of the AuthMethod constants; empty is
	// AuthMethodClientSecretBasic.
	TokenEndpointAuthMethod string `json:"token_endpoint_auth_method,omitempty"`
	// GrantTypes is a subset of "authorization_code" and "refresh_token"
	// with "authorization_code"; empty is both.
	GrantTypes []string `json:"grant_types,omitempty"`
	// ResponseTypes may only be ["code"].
	ResponseTypes []string `json:"response_types,omitempty"`
	// Scope is the scopes the client means to ask for, separated by
	// spaces.
	Scope string `json:"scope,omitempty"`
}

// ClientRegistration is a registered client (RFC 7591 section 3.2.1).
type ClientRegistration struct {
	ClientID string `json:"client_id"`
	// ClientSecret is shown this once, to a confidential client only.
	ClientSecret string `json:"client_secret,omitempty"`
	// ClientIDIssuedAt is when the client was registered, in Unix seconds.
	ClientIDIssuedAt int64 `json:"client_id_issued_at"`
	// ClientSecretExpiresAt is 0: the secret does not expire.
	ClientSecretExpiresAt   int64    `json:"client_secret_expires_at,omitempty"`
	ClientName              string   `json:"client_name"`
	RedirectURIs            []string `json:"redirect_uris"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	Scope                   string   `json:"scope,omitempty"`
}

// OAuthError is an error answer of the OAuth endpoints at the server's
// root (RFC 6749 section 5.2, RFC 7591 section 3.2.2), which do not use
// the API's error body. Match it with errors.As.
type OAuthError struct {
	// StatusCode is the HTTP status of the answer.
	StatusCode int
	// Code is the error code: for a registration "invalid_redirect_uri",
	// "invalid_client_metadata" (400) or "too_many_requests" (429).
	Code string
	// Description is the human-readable explanation (error_description).
	Description string
	// RetryAfter is the wait the server asked for in Retry-After, 0 when
	// it gave none.
	RetryAfter time.Duration
	// Header holds the answer's headers.
	Header http.Header
}

// Error returns "ams: <status> <code>: <description>".
func (e *OAuthError) Error() string {
	if e.Description == "" {
		return fmt.Sprintf("ams: %d %s", e.StatusCode, e.Code)
	}
	return fmt.Sprintf("ams: %d %s: %s", e.StatusCode, e.Code, e.Description)
}

// RegisterClient registers a client with the server at baseURL (its root,
// as in New; a trailing "/v1" is accepted), without an account: RFC 7591
// dynamic client registration, POST /oauth/register, which is how MCP
// clients connect to ams with no manual setup. A public client
// (TokenEndpointAuthMethod AuthMethodNone) must then use PKCE S256; a
// confidential one gets ClientSecret, shown this once. The client runs
// the authorization code flow (for example with golang.org/x/oauth2) and
// appears on the authorizing user's OAuth apps page.
//
// Of opts, WithHTTPClient, WithUserAgent, WithTimeout and WithClock
// apply. The request is not retried: each success registers a client.
// Invalid metadata is an *OAuthError with Code "invalid_redirect_uri" or
// "invalid_client_metadata" (400), and nothing is stored; too many
// registrations from one address, "too_many_requests" (429, with
// RetryAfter).
func RegisterClient(ctx context.Context, baseURL string, m ClientMetadata, opts ...Option) (*ClientRegistration, error) {
	c := New(baseURL, "", opts...)
	const what = "ams: POST /oauth/register"
	payload, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("%s: encode metadata: %w", what, err)
	}
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.baseURL+"/oauth/register", bytes.NewReader(payload))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	resp, err := c.httpClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if err != nil {
		return nil, fmt.Errorf("%s: read answer: %w", what, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		var body struct {
			Error       string `json:"error"`
			Description string `json:"error_description"`
		}
		_ = json.Unmarshal(raw, &body)
		e := &OAuthError{StatusCode: resp.StatusCode, Code: body.Error, Description: body.Description, Header: resp.Header,
			RetryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), c.now())}
		if e.Code == "" {
			e.Code = "invalid_request"
			if resp.StatusCode >= 500 {
				e.Code = "server_error"
			}
			e.Description = strings.TrimSpace(http.StatusText(resp.StatusCode))
		}
		return nil, e
	}
	var out ClientRegistration
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("%s: decode answer (status %d): %w", what, resp.StatusCode, err)
	}
	if out.ClientID == "" {
		return nil, errors.New(what + ": the answer has no client_id")
	}
	return &out, nil
}
