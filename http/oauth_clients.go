package http

import (
	"net/http"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/oauth"
)

// The account's OAuth clients over HTTP (/v1/oauth/clients), part of the
// management API (see account.go): package oauth's client functions.

// clientRequest is the body of POST /v1/oauth/clients.
type clientRequest struct {
	Name         *string   `json:"name"`
	RedirectURIs *[]string `json:"redirect_uris"`
	Public       *bool     `json:"public"`
}

// clientWithSecret is a client with its secret, shown once: on creation
// (confidential clients) and on rotation.
type clientWithSecret struct {
	*ams.OAuthClient
	ClientSecret *string `json:"client_secret"`
}

// withSecret is c answered with its new secret (none for "": a public
// client).
func withSecret(c *ams.OAuthClient, secret string) clientWithSecret {
	out := clientWithSecret{OAuthClient: c}
	if secret != "" {
		out.ClientSecret = &secret
	}
	return out
}

// MarshalJSON implements json.Marshaler: the client's own encoding and
// the secret (see createdKey.MarshalJSON).
func (c clientWithSecret) MarshalJSON() ([]byte, error) {
	return withField(c.OAuthClient, "client_secret", c.ClientSecret)
}

func (s *Server) createOAuthClient(w http.ResponseWriter, r *http.Request) error {
	var req clientRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if req.Name == nil {
		return ams.ParamError("parameter_missing", "name", "Missing required parameter 'name'.")
	}
	if req.RedirectURIs == nil {
		return ams.ParamError("parameter_missing", "redirect_uris", "Missing required parameter 'redirect_uris'.")
	}
	p := oauth.ClientParams{UserID: auth(r).User.ID, Name: *req.Name, RedirectURIs: *req.RedirectURIs}
	if req.Public != nil {
		p.Public = *req.Public
	}
	c, secret, err := s.OAuthClients.Create(r.Context(), p, s.now())
	if err != nil {
		return err
	}
	if secret != "" {
		noStore(w)
	}
	w.Header().Set("Location", "/v1/oauth/clients/"+c.ID)
	return writeJSON(w, http.StatusCreated, withSecret(c, secret))
}

func (s *Server) listOAuthClients(w http.ResponseWriter, r *http.Request) error {
	page, err := s.Store.ListOAuthClientPage(r.Context(), auth(r).User.ID, listOf(r))
	if err != nil {
		return err
	}
	return writeList(w, page, func(c *ams.OAuthClient) string { return c.ID })
}

func (s *Server) getOAuthClient(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	c, err := s.OAuthClients.Find(r.Context(), auth(r).User.ID, id)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, c)
}

func (s *Server) rotateOAuthClientSecret(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := noBody(r); err != nil {
		return err
	}
	c, secret, err := s.OAuthClients.RotateSecret(r.Context(), auth(r).User.ID, id, s.now())
	if err != nil {
		return err
	}
	noStore(w)
	return writeJSON(w, http.StatusOK, withSecret(c, secret))
}

func (s *Server) deleteOAuthClient(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := s.OAuthClients.Delete(r.Context(), auth(r).User.ID, id, s.now()); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
