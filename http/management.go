package http

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/account"
	"github.com/amsdev/ams/oauth"
)

// The management API (permission admin): the account's API keys
// (/v1/keys), its OAuth clients (/v1/oauth/clients) and its settings
// (/v1/account). The rules live in the services the account pages and
// the CLI call too: account.Service for keys and the account, package
// oauth's client functions for clients; each change is written with its
// audit event (api_key.created, oauth_client.deleted, account.updated,
// ...) in one transaction.

// keyRequest is the body of POST /v1/keys.
type keyRequest struct {
	Name        *string   `json:"name"`
	Permissions *[]string `json:"permissions"`
	ExpiresAt   *string   `json:"expires_at"`
}

// createdKey is the answer of POST /v1/keys: the key's record and its
// secret, shown this once.
type createdKey struct {
	*ams.APIKeyRecord
	Secret string `json:"secret"`
}

// MarshalJSON implements json.Marshaler: the record's own encoding (its
// MarshalJSON would otherwise be promoted and drop the secret) and the
// secret.
func (k createdKey) MarshalJSON() ([]byte, error) {
	return withField(k.APIKeyRecord, "secret", k.Secret)
}

// noStore marks an answer that shows a secret once: no cache keeps it. An
// Idempotency-Key replays it (the same secret, sealed at rest with the
// key for ams.IdempotencyTTL; see storedAnswers).
func noStore(w http.ResponseWriter) { w.Header().Set("Cache-Control", "no-store") }

// credential returns what the caller's credential holds, for the rule
// that a credential never creates a key holding more (account.CheckHeld):
// its permissions, and its expiry (an API key's, read from the store; an
// access token's, from its authentication).
func (s *Server) credential(r *http.Request) (*account.Credential, error) {
	a := auth(r)
	c := &account.Credential{Permissions: a.Permissions, ExpiresAt: a.ExpiresAt, ClientID: a.ClientID, GrantID: a.GrantID}
	if a.KeyID != "" {
		k, err := s.Store.FindKey(r.Context(), a.KeyID)
		if err != nil {
			return nil, err
		}
		c.ExpiresAt = k.ExpiresAt
		c.ClientID, c.GrantID = k.OAuthClientID, k.OAuthGrantID // a key a grant made makes keys of that grant
	}
	return c, nil
}

func (s *Server) createKey(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r.URL.Query(), false); err != nil {
		return err
	}
	var req keyRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	in := account.NewKey{}
	if req.Name == nil {
		return ams.ParamError("parameter_missing", "name", "Missing required parameter 'name'.")
	}
	in.Name = *req.Name
	if req.Permissions == nil {
		return ams.ParamError("parameter_missing", "permissions", "Missing required parameter 'permissions'.")
	}
	in.Permissions = *req.Permissions
	exp, err := bodyTime(req.ExpiresAt, "expires_at")
	if err != nil {
		return err
	}
	in.ExpiresAt = exp
	if in.HeldBy, err = s.credential(r); err != nil {
		return err
	}
	secret, k, err := s.Accounts.CreateKey(r.Context(), auth(r).User.ID, in)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/keys/"+k.ID)
	noStore(w)
	return writeJSON(w, http.StatusCreated, createdKey{APIKeyRecord: k.Record(s.now()), Secret: secret})
}

func (s *Server) listKeys(w http.ResponseWriter, r *http.Request) error {
	p, err := listParams(r)
	if err != nil {
		return err
	}
	page, err := s.Store.ListKeyPage(r.Context(), auth(r).User.ID, p)
	if err != nil {
		return err
	}
	now := s.now()
	out := &ams.Page[*ams.APIKeyRecord]{HasMore: page.HasMore, Data: make([]*ams.APIKeyRecord, len(page.Data))}
	for i, k := range page.Data {
		out.Data[i] = k.Record(now)
	}
	return writeList(w, out, func(k *ams.APIKeyRecord) string { return k.ID })
}

// findKey returns the caller's key of the path's {id}; another account's
// is 404, as a missing one.
func (s *Server) findKey(r *http.Request) (*ams.APIKey, error) {
	id, err := pathID(r, "api_key", ams.PrefixAPIKey)
	if err != nil {
		return nil, err
	}
	k, err := s.Store.FindKey(r.Context(), id)
	if err == nil && k.UserID != auth(r).User.ID {
		err = ams.NotFound("api_key", id)
	}
	return k, err
}

func (s *Server) getKey(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r.URL.Query(), false); err != nil {
		return err
	}
	k, err := s.findKey(r)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, k.Record(s.now()))
}

// revokeKey revokes a key (POST /v1/keys/{id}/revoke; a revoked key is
// not deleted, so there is no DELETE): the record stays, listed as
// revoked, and is answered with 200. Revoking a revoked key answers it
// again, unchanged, and emits nothing.
func (s *Server) revokeKey(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "api_key", ams.PrefixAPIKey)
	if err != nil {
		return err
	}
	if err := checkQuery(r.URL.Query(), false); err != nil {
		return err
	}
	if err := noBody(r); err != nil {
		return err
	}
	k, err := s.Accounts.RevokeKey(r.Context(), auth(r).User.ID, id)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, k.Record(s.now()))
}

// clientRequest is the body of POST /v1/oauth/clients.
type clientRequest struct {
	Name         *string   `json:"name"`
	RedirectURIs *[]string `json:"redirect_uris"`
	Public       *bool     `json:"public"`
}

// clientWithSecret is a client with its secret, shown once: on creation
// (confidential clients) and on rotation.
// withSecret is c answered with its new secret (none for "": a public
// client).
func withSecret(c *ams.OAuthClient, secret string) clientWithSecret {
	out := clientWithSecret{OAuthClient: c}
	if secret != "" {
		out.ClientSecret = &secret
	}
	return out
}

type clientWithSecret struct {
	*ams.OAuthClient
	ClientSecret *string `json:"client_secret"`
}

// MarshalJSON implements json.Marshaler: the client's own encoding and
// the secret (see createdKey.MarshalJSON).
func (c clientWithSecret) MarshalJSON() ([]byte, error) {
	return withField(c.OAuthClient, "client_secret", c.ClientSecret)
}

// withField returns rec's JSON object with one more field, name: value,
// at its end.
func withField(rec any, name string, value any) ([]byte, error) {
	b, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return nil, fmt.Errorf("withField: %T does not encode as an object", rec)
	}
	v, err := json.Marshal(value)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(b)+len(name)+len(v)+4)
	out = append(out, b[:len(b)-1]...)
	if len(b) > 2 {
		out = append(out, ',')
	}
	out = append(out, '"')
	out = append(out, name...)
	out = append(out, '"', ':')
	out = append(out, v...)
	return append(out, '}'), nil
}

func (s *Server) createOAuthClient(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r.URL.Query(), false); err != nil {
		return err
	}
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
	c, secret, err := oauth.CreateClient(r.Context(), s.Store, p, s.now())
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
	p, err := listParams(r)
	if err != nil {
		return err
	}
	page, err := s.Store.ListOAuthClientPage(r.Context(), auth(r).User.ID, p)
	if err != nil {
		return err
	}
	return writeList(w, page, func(c *ams.OAuthClient) string { return c.ID })
}

// clientID returns the path's {id}: a client id, else 404.
func clientID(r *http.Request) (string, error) {
	return pathID(r, "oauth_client", ams.PrefixClient)
}

func (s *Server) getOAuthClient(w http.ResponseWriter, r *http.Request) error {
	id, err := clientID(r)
	if err != nil {
		return err
	}
	if err := checkQuery(r.URL.Query(), false); err != nil {
		return err
	}
	c, err := oauth.FindClient(r.Context(), s.Store, auth(r).User.ID, id)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, c)
}

func (s *Server) rotateOAuthClientSecret(w http.ResponseWriter, r *http.Request) error {
	id, err := clientID(r)
	if err != nil {
		return err
	}
	if err := checkQuery(r.URL.Query(), false); err != nil {
		return err
	}
	if err := noBody(r); err != nil {
		return err
	}
	c, secret, err := oauth.RotateClientSecret(r.Context(), s.Store, auth(r).User.ID, id, s.now())
	if err != nil {
		return err
	}
	noStore(w)
	return writeJSON(w, http.StatusOK, withSecret(c, secret))
}

func (s *Server) deleteOAuthClient(w http.ResponseWriter, r *http.Request) error {
	id, err := clientID(r)
	if err != nil {
		return err
	}
	if err := checkQuery(r.URL.Query(), false); err != nil {
		return err
	}
	if err := oauth.DeleteClient(r.Context(), s.Store, auth(r).User.ID, id, s.now()); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// accountRequest is the body of PATCH /v1/account.
type accountRequest struct {
	Timezone           *string `json:"timezone"`
	EmailNotifications *struct {
		KeyReminders   *bool `json:"key_reminders"`
		WebhookFailing *bool `json:"webhook_failing"`
	} `json:"email_notifications"`
}

func (s *Server) getAccount(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r.URL.Query(), false); err != nil {
		return err
	}
	u, err := s.Store.FindUser(r.Context(), auth(r).User.ID)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, u.Account())
}

func (s *Server) updateAccount(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r.URL.Query(), false); err != nil {
		return err
	}
	var req accountRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	in := account.AccountUpdate{Timezone: req.Timezone}
	if n := req.EmailNotifications; n != nil {
		in.KeyReminders, in.WebhookFailing = n.KeyReminders, n.WebhookFailing
	}
	u, err := s.Accounts.UpdateAccount(r.Context(), auth(r).User.ID, in)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, u.Account())
}
