package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/clientaddr"
	"github.com/ory/fosite"
)

// Dynamic client registration (RFC 7591) at POST /oauth/register, which
// lets an MCP client (Claude, ChatGPT, VS Code, ...) connect with no
// manual setup: it registers itself, then runs the authorization-code
// flow like any other client. A registered client belongs to no account
// (its record's UserID is ""): it appears on a user's OAuth apps page once
// the user has authorized it, and is revoked there like any other app. A
// registered client that holds no token a day after registering is
// purged (sqlstore's Purge).
//
// Registration is open (RFC 7591 section 3 allows it), so it is bounded:
// MaxRegistrations per client network within RegistrationWindow, counted
// in the sign-in throttle's store (shared by every process on
// PostgreSQL), invalid requests included.

// MCPScopes are the scopes the tools of /mcp need, what a self-registered
// client that asks for none is given (and the MCP endpoint's metadata
// lists as scopes_supported).
var MCPScopes = []string{string(ams.PermRead), string(ams.PermWrite), string(ams.PermMessages)}

// selfRegistered reports whether id is a client that registered itself.
func (s *Server) selfRegistered(ctx context.Context, id string) bool {
	if !ams.HasPrefixID(id, ams.PrefixClient) {
		return false
	}
	c, err := s.store.FindOAuthClient(ctx, id)
	return err == nil && c.UserID == ""
}

// Registration limits.
const (
	MaxRegistrations   = 10
	RegistrationWindow = 15 * time.Minute
	// maxRegistrationBytes bounds the request body.
	maxRegistrationBytes = 16 << 10
)

// registrationRequest is the client metadata of RFC 7591 section 2 that
// ams reads; other members are ignored, as the RFC allows.
type registrationRequest struct {
	RedirectURIs            []string `json:"redirect_uris"`
	ClientName              string   `json:"client_name"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	Scope                   string   `json:"scope"`
}

// registrationError is an error answer of RFC 7591 section 3.2.2.
type registrationError struct {
	code, desc string
}

func (e *registrationError) Error() string { return e.code + ": " + e.desc }

func badMetadata(desc string) error { return &registrationError{"invalid_client_metadata", desc} }

// register is POST /oauth/register: it checks the client metadata, stores
// the client (its secret hashed, for a confidential one) and answers 201
// with the client's id, its secret once, and its metadata as registered.
// Invalid metadata is a 400 with the RFC's error JSON, and nothing is
// stored.
func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	now := s.clock.Now()
	key := "register-ip:" + clientaddr.Network(clientaddr.Of(r))
	until, err := s.throttle.Admit(ctx, key, now.Add(-RegistrationWindow), now, MaxRegistrations, func(recent []time.Time) time.Time {
		if len(recent) < MaxRegistrations {
			return time.Time{}
		}
		return recent[MaxRegistrations-1].Add(RegistrationWindow)
	})
	if err != nil {
		s.logger.ErrorContext(ctx, "oauth register throttle", "err", err)
		s.registerError(w, http.StatusInternalServerError, "server_error", "The server could not complete the request. Try again later.")
		return
	}
	if !until.IsZero() {
		w.Header().Set("Retry-After", strconv.FormatInt(int64(max(until.Sub(now).Seconds(), 1)), 10))
		s.registerError(w, http.StatusTooManyRequests, "too_many_requests", "Too many client registrations from this address; retry later.")
		return
	}
	c, secret, method, err := s.registerClient(r, now)
	var re *registrationError
	switch {
	case errors.As(err, &re):
		s.registerError(w, http.StatusBadRequest, re.code, re.desc)
		return
	case err != nil:
		s.logger.ErrorContext(ctx, "oauth register", "err", err)
		s.registerError(w, http.StatusInternalServerError, "server_error", "The server could not complete the request. Try again later.")
		return
	}
	answer := map[string]any{
		"client_id":                  c.ID,
		"client_id_issued_at":        c.CreatedAt.Unix(),
		"client_name":                c.Name,
		"redirect_uris":              c.RedirectURIs,
		"grant_types":                clientGrantTypes,
		"response_types":             clientResponseTypes,
		"token_endpoint_auth_method": method,
	}
	if secret != "" {
		answer["client_secret"] = secret
		answer["client_secret_expires_at"] = 0 // never
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	w.WriteHeader(http.StatusCreated)
	json.NewEncoder(w).Encode(answer)
}

// registerClient reads and checks the registration request and stores the
// client; it returns the client, its secret ("" for a public one) and its
// token endpoint authentication method. Invalid metadata is a
// *registrationError.
func (s *Server) registerClient(r *http.Request, now time.Time) (c *ams.OAuthClient, secret, method string, err error) {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(strings.ToLower(strings.TrimSpace(ct)), "application/json") {
		return nil, "", "", badMetadata("The request body must be JSON (Content-Type: application/json).")
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(http.MaxBytesReader(nil, r.Body, maxRegistrationBytes)); err != nil {
		return nil, "", "", badMetadata("The request body is too large or could not be read.")
	}
	var req registrationRequest
	if err := json.Unmarshal(buf.Bytes(), &req); err != nil {
		return nil, "", "", badMetadata("The request body must be a JSON object of client metadata.")
	}
	if len(req.RedirectURIs) == 0 || len(req.RedirectURIs) > MaxRedirectURIs {
		return nil, "", "", &registrationError{"invalid_redirect_uri", "Give 1 to " + strconv.Itoa(MaxRedirectURIs) + " redirect_uris."}
	}
	for _, u := range req.RedirectURIs {
		if err := ValidateRedirectURI(u); err != nil {
			var e *ams.Error
			errors.As(err, &e)
			return nil, "", "", &registrationError{"invalid_redirect_uri", e.Message}
		}
	}
	public := false
	switch method = req.TokenEndpointAuthMethod; method {
	case "none":
		public = true // PKCE (S256) is then required (authorizeRequest)
	case "":
		method = "client_secret_basic" // RFC 7591's default
	case "client_secret_basic", "client_secret_post":
	default:
		return nil, "", "", badMetadata("token_endpoint_auth_method must be none, client_secret_basic or client_secret_post.")
	}
	for _, g := range req.GrantTypes {
		if !slices.Contains(clientGrantTypes, g) {
			return nil, "", "", badMetadata("The grant type '" + g + "' is not supported: use authorization_code and refresh_token.")
		}
	}
	if len(req.GrantTypes) > 0 && !slices.Contains(req.GrantTypes, "authorization_code") {
		return nil, "", "", badMetadata("grant_types must include authorization_code.")
	}
	for _, t := range req.ResponseTypes {
		if t != "code" {
			return nil, "", "", badMetadata("The response type '" + t + "' is not supported: use code.")
		}
	}
	for _, sc := range strings.Fields(req.Scope) {
		if !slices.Contains(ams.AllPermissions, ams.Permission(sc)) {
			return nil, "", "", badMetadata("scope may name only read, write, admin, messages and integrations.")
		}
	}
	name := strings.TrimSpace(req.ClientName)
	if name == "" {
		if u, err := url.Parse(req.RedirectURIs[0]); err == nil {
			name = u.Hostname()
		}
	}
	if len([]rune(name)) > 100 {
		name = string([]rune(name)[:100])
	}
	c, secret, err = NewClient(ClientParams{Name: name, RedirectURIs: req.RedirectURIs, Public: public}, now)
	if err != nil {
		var e *ams.Error
		if errors.As(err, &e) {
			return nil, "", "", badMetadata(e.Message)
		}
		return nil, "", "", err
	}
	if err := s.store.CreateOAuthClient(r.Context(), c); err != nil {
		return nil, "", "", err
	}
	return c, secret, method, nil
}

// registerError writes an error of the registration endpoint: RFC 7591
// section 3.2.2's JSON, never cached.
func (s *Server) registerError(w http.ResponseWriter, status int, code, desc string) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": desc})
}

// Resource indicators (RFC 8707): the authorization and token requests
// may name the resource the token is for. ams's tokens serve the whole
// service, so any of its resources is accepted (the root, /v1 and /mcp,
// as the protected resource metadata names them); another is refused
// with invalid_target.

// checkResource returns invalid_target unless every resource in values
// is one of the server's.
func (s *Server) checkResource(values []string) error {
	for _, v := range values {
		v = strings.TrimRight(v, "/")
		if v != s.base && v != s.base+"/mcp" && v != s.base+"/v1" {
			return errInvalidTarget.WithHintf("The resource %q is not served here: use %s/mcp or %s.", v, s.base, s.base)
		}
	}
	return nil
}

// errInvalidTarget is RFC 8707's error for a resource the server does not
// serve.
var errInvalidTarget = &fosite.RFC6749Error{ErrorField: "invalid_target", DescriptionField: "The requested resource is invalid, missing, unknown, or malformed.", CodeField: http.StatusBadRequest}
