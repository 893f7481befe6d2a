package oauth

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/amsdev/ams"
	"github.com/ory/fosite"
)

// token is POST /oauth/token: the authorization_code and refresh_token
// grants, client authentication by client_secret_basic or
// client_secret_post (public clients: client_id only, with PKCE). Errors
// follow RFC 6749 section 5.2.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := parseForm(r); err != nil {
		s.tokenError(w, fosite.ErrInvalidRequest.WithHint("The request body must be form-encoded (application/x-www-form-urlencoded), in UTF-8 without NUL characters."))
		return
	}
	f := r.PostForm
	// fosite answers a grant type it has no handler for with
	// invalid_request, and a missing code with invalid_grant; RFC 6749
	// wants unsupported_grant_type and invalid_request.
	var credential string
	switch gt := f.Get("grant_type"); gt {
	case "":
		s.tokenError(w, fosite.ErrInvalidRequest.WithHint("The request is missing the 'grant_type' parameter."))
		return
	case "authorization_code":
		if credential = f.Get("code"); credential == "" {
			s.tokenError(w, fosite.ErrInvalidRequest.WithHint("The request is missing the 'code' parameter."))
			return
		}
	case "refresh_token":
		if credential = f.Get("refresh_token"); credential == "" {
			s.tokenError(w, fosite.ErrInvalidRequest.WithHint("The request is missing the 'refresh_token' parameter."))
			return
		}
	default:
		s.tokenError(w, fosite.ErrUnsupportedGrantType.WithHintf("The grant type '%s' is not supported: use authorization_code or refresh_token.", gt))
		return
	}
	if err := clientAuthPresent(r); err != nil {
		s.tokenError(w, err)
		return
	}
	if err := s.checkResource(f["resource"]); err != nil { // RFC 8707
		s.tokenError(w, err)
		return
	}
	unlock, err := s.locks.lock(ctx, s.store, s.clock, credential)
	if err != nil {
		if errors.Is(err, errGrantBusy) {
			s.tokenError(w, fosite.ErrTemporarilyUnavailable.WithHint("The code or refresh token is in use by another request; retry shortly."))
			return
		}
		s.logger.ErrorContext(ctx, "oauth credential lock", "err", err)
		s.tokenError(w, fosite.ErrServerError)
		return
	}
	defer unlock()

	ar, err := s.provider.NewAccessRequest(ctx, r, new(fosite.DefaultSession))
	if err != nil {
		s.tokenError(w, err)
		return
	}
	// A refresh may name a scope, but never one the grant does not hold
	// (RFC 6749 section 6); the new tokens keep the grant's scope, which
	// the answer's scope field states.
	if f.Get("grant_type") == "refresh_token" && f.Has("scope") {
		for _, sc := range strings.FieldsFunc(f.Get("scope"), func(c rune) bool { return c == ' ' || c == '+' }) {
			if !ar.GetGrantedScopes().Has(sc) {
				s.tokenError(w, fosite.ErrInvalidScope.WithHintf("The scope '%s' was not granted to this refresh token.", sc))
				return
			}
		}
	}
	resp, err := s.provider.NewAccessResponse(ctx, ar)
	if err != nil {
		s.tokenError(w, err)
		return
	}
	resp.SetTokenType("Bearer") // fosite writes "bearer"; the interface says "Bearer"
	// fosite computes expires_in as the expiry (issue time plus the
	// lifespan, rounded to the second) minus the time of writing,
	// truncated: 3599 as often as 3600. The lifespan is what it means.
	resp.SetExpiresIn(ams.AccessTokenLifetime)
	s.provider.WriteAccessResponse(ctx, w, ar, resp)
}

// revoke is POST /oauth/revoke (RFC 7009). Revoking a refresh token or an
// access token revokes every token of its grant. An unknown token is
// answered 200, like a revoked one; a token of another client is refused
// with unauthorized_client.
func (s *Server) revoke(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := parseForm(r); err != nil {
		s.tokenError(w, fosite.ErrInvalidRequest.WithHint("The request body must be form-encoded (application/x-www-form-urlencoded), in UTF-8 without NUL characters."))
		return
	}
	if r.PostForm.Get("token") == "" {
		s.tokenError(w, fosite.ErrInvalidRequest.WithHint("The request is missing the 'token' parameter."))
		return
	}
	if err := clientAuthPresent(r); err != nil {
		s.tokenError(w, err)
		return
	}
	if err := s.provider.NewRevocationRequest(r.Context(), r); err != nil {
		s.tokenError(w, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
	w.WriteHeader(http.StatusOK)
}

// clientAuthPresent returns invalid_client when r carries no client
// authentication, or one of an unsupported method (RFC 6749 section 5.2;
// fosite would say invalid_request). A public client authenticates with
// client_id alone.
func clientAuthPresent(r *http.Request) error {
	if h := r.Header.Get("Authorization"); h != "" {
		if _, _, ok := r.BasicAuth(); !ok {
			return fosite.ErrInvalidClient.WithHint("Client authentication must be HTTP Basic (client_secret_basic) or client_id and client_secret in the body (client_secret_post).")
		}
		return nil
	}
	if r.PostForm.Get("client_id") == "" {
		return fosite.ErrInvalidClient.WithHint("The request has no client authentication.")
	}
	return nil
}

// tokenErrorNames are the error codes of RFC 6749 section 5.2.
var tokenErrorNames = map[string]bool{
	"invalid_request": true, "invalid_client": true, "invalid_grant": true,
	"unauthorized_client": true, "unsupported_grant_type": true, "invalid_scope": true,
	"invalid_target": true, // RFC 8707
}

// tokenError writes an error of the token or revocation endpoint as RFC
// 6749 section 5.2 says: JSON {error, error_description}, 400, or 401 with
// WWW-Authenticate for invalid_client, never cached. Internal errors are
// logged and answered server_error without detail.
func (s *Server) tokenError(w http.ResponseWriter, err error) {
	rfc := fosite.ErrorToRFC6749Error(err)
	name, status, desc := rfc.ErrorField, http.StatusBadRequest, rfc.GetDescription()
	switch {
	case name == "invalid_client":
		status = http.StatusUnauthorized
		w.Header().Set("WWW-Authenticate", `Basic realm="ams", charset="UTF-8"`)
	case tokenErrorNames[name]:
	case name == "temporarily_unavailable":
		status = http.StatusServiceUnavailable
	case rfc.CodeField >= 500 || name == "server_error" || errors.Is(err, fosite.ErrServerError):
		s.logger.Error("oauth token endpoint", "err", err, "debug", rfc.DebugField)
		name, status, desc = "server_error", http.StatusInternalServerError, "The server could not complete the request. Try again later."
	default:
		name = "invalid_request"
	}
	h := w.Header()
	h.Set("Content-Type", "application/json;charset=UTF-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": name, "error_description": desc})
}

// metadata is GET /.well-known/oauth-authorization-server (RFC 8414).
func (s *Server) metadata(w http.ResponseWriter, _ *http.Request) {
	scopes := make([]string, len(ams.AllPermissions))
	for i, p := range ams.AllPermissions {
		scopes[i] = string(p)
	}
	auth := []string{"client_secret_basic", "client_secret_post", "none"}
	doc := map[string]any{
		"issuer":                                     s.base,
		"authorization_endpoint":                     s.base + "/oauth/authorize",
		"token_endpoint":                             s.base + "/oauth/token",
		"revocation_endpoint":                        s.base + "/oauth/revoke",
		"registration_endpoint":                      s.base + "/oauth/register",
		"response_types_supported":                   []string{"code"},
		"response_modes_supported":                   []string{"query"},
		"grant_types_supported":                      []string{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported":           []string{"S256"},
		"token_endpoint_auth_methods_supported":      auth,
		"revocation_endpoint_auth_methods_supported": auth,
		"scopes_supported":                           scopes,
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=3600")
	json.NewEncoder(w).Encode(doc)
}
