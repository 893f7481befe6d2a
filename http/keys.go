package http

import (
	"net/http"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/account"
)

// The account's API keys over HTTP (/v1/keys), part of the management API
// (permission admin; see account.go).

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
	page, err := s.Store.ListKeyPage(r.Context(), auth(r).User.ID, listOf(r))
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
	id := r.PathValue("id")
	k, err := s.Store.FindKey(r.Context(), id)
	if err == nil && k.UserID != auth(r).User.ID {
		err = ams.NotFound("api_key", id)
	}
	return k, err
}

func (s *Server) getKey(w http.ResponseWriter, r *http.Request) error {
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
	id := r.PathValue("id")
	if err := noBody(r); err != nil {
		return err
	}
	k, err := s.Accounts.RevokeKey(r.Context(), auth(r).User.ID, id)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, k.Record(s.now()))
}
