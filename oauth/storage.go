package oauth

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"time"

	"github.com/amsdev/ams"
	"github.com/ory/fosite"
	foauth2 "github.com/ory/fosite/handler/oauth2"
	"github.com/ory/fosite/handler/pkce"
)

// storage keeps fosite's state in ams.OAuthStore: one ams.OAuthToken per
// authorization code, access token, refresh token and PKCE challenge, keyed
// by the token's HMAC signature, with the fosite request serialized as JSON
// in Data.
//
// The clock. fosite reads time.Now itself: it sets a token's expiry to
// time.Now()+lifespan and compares it with time.Now() when the token comes
// back. ams runs on an injected clock (ams.Clock, moved by hand in tests).
// The adapter translates between the two frames: expiry times are stored
// in the service clock's frame (shifted by clock−wall when written), and
// shifted back into fosite's wall-clock frame (by wall−clock at that
// moment) when read. A token therefore expires when the service clock
// passes its stored expiry, whatever the wall clock says, and the
// expires_at column means service time, like every other stored time. In
// production the service clock is the wall clock and the shift is zero.
type storage struct {
	store Store
	clock ams.Clock
}

var (
	_ fosite.Storage                 = (*storage)(nil)
	_ foauth2.CoreStorage            = (*storage)(nil)
	_ foauth2.TokenRevocationStorage = (*storage)(nil)
	_ pkce.PKCERequestStorage        = (*storage)(nil)
)

// skew returns how far the service clock is ahead of the wall clock.
func (s *storage) skew() time.Duration {
	if s.clock == nil {
		return 0
	}
	return s.clock().Sub(time.Now())
}

func shift(t time.Time, d time.Duration) time.Time {
	if t.IsZero() {
		return t
	}
	return t.Add(d).UTC()
}

// record is the stored form of a fosite request. The client is stored by
// id and loaded again on read, so a token never outlives its client.
type record struct {
	ID                string                         `json:"id"`
	RequestedAt       time.Time                      `json:"requested_at"`
	ClientID          string                         `json:"client_id"`
	RequestedScope    []string                       `json:"requested_scope"`
	GrantedScope      []string                       `json:"granted_scope"`
	RequestedAudience []string                       `json:"requested_audience,omitempty"`
	GrantedAudience   []string                       `json:"granted_audience,omitempty"`
	Form              url.Values                     `json:"form"`
	Subject           string                         `json:"subject"` // the user id
	Username          string                         `json:"username,omitempty"`
	ExpiresAt         map[fosite.TokenType]time.Time `json:"expires_at"` // service-clock frame
}

// expiryKey is the session expiry that the stored row of each kind carries.
var expiryKey = map[string]fosite.TokenType{
	ams.TokenAuthorizeCode: fosite.AuthorizeCode,
	ams.TokenPKCE:          fosite.AuthorizeCode,
	ams.TokenAccess:        fosite.AccessToken,
	ams.TokenRefresh:       fosite.RefreshToken,
}

var lifetimeOf = map[string]time.Duration{
	ams.TokenAuthorizeCode: ams.AuthorizeCodeLifetime,
	ams.TokenPKCE:          ams.AuthorizeCodeLifetime,
	ams.TokenAccess:        ams.AccessTokenLifetime,
	ams.TokenRefresh:       ams.RefreshTokenLifetime,
}

// put stores req under (kind, signature). It does not modify req: fosite
// keeps using it (and its session) after the call.
func (s *storage) put(ctx context.Context, kind, signature string, req fosite.Requester) error {
	sess, ok := req.GetSession().(*fosite.DefaultSession)
	if !ok || sess == nil {
		return fmt.Errorf("oauth: unexpected session type %T", req.GetSession())
	}
	if sess.Subject == "" {
		return fmt.Errorf("oauth: session without subject")
	}
	d := s.skew()
	rec := record{
		ID: req.GetID(), RequestedAt: shift(req.GetRequestedAt(), d), ClientID: req.GetClient().GetID(),
		RequestedScope: req.GetRequestedScopes(), GrantedScope: req.GetGrantedScopes(),
		RequestedAudience: req.GetRequestedAudience(), GrantedAudience: req.GetGrantedAudience(),
		Form: req.GetRequestForm(), Subject: sess.Subject, Username: sess.Username,
		ExpiresAt: map[fosite.TokenType]time.Time{},
	}
	for k, exp := range sess.ExpiresAt {
		if !exp.IsZero() {
			rec.ExpiresAt[k] = shift(exp, d)
		}
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encode oauth request: %w", err)
	}
	now := s.clock.Now()
	exp := rec.ExpiresAt[expiryKey[kind]]
	if exp.IsZero() {
		exp = now.Add(lifetimeOf[kind])
	}
	return s.store.CreateOAuthToken(ctx, &ams.OAuthToken{
		Signature: signature, Kind: kind, RequestID: rec.ID, ClientID: rec.ClientID, UserID: rec.Subject,
		Scopes: rec.GrantedScope, Active: true, Data: data, ExpiresAt: exp, CreatedAt: now,
	})
}

// get loads the request stored under (kind, signature), with its times in
// fosite's wall-clock frame, and whether the token is still active. It
// returns fosite.ErrNotFound if there is none.
//
// The stored session is loaded into into, when it is a session (fosite
// passes the session of the request it is handling and expects it
// hydrated: it validates the token's expiry against that request). As
// with json.Unmarshal into a session, expiry times of other token types
// that fosite already set on into are kept.
func (s *storage) get(ctx context.Context, kind, signature string, into fosite.Session) (fosite.Requester, bool, error) {
	if signature == "" {
		return nil, false, fosite.ErrNotFound
	}
	t, err := s.store.GetOAuthToken(ctx, kind, signature)
	if ams.IsNotFound(err) {
		return nil, false, fosite.ErrNotFound
	} else if err != nil {
		return nil, false, err
	}
	var rec record
	if err := json.Unmarshal(t.Data, &rec); err != nil {
		return nil, false, fmt.Errorf("decode oauth request: %w", err)
	}
	c, err := s.GetClient(ctx, rec.ClientID)
	if err != nil {
		return nil, false, err
	}
	d := -s.skew()
	sess, ok := into.(*fosite.DefaultSession)
	if !ok || sess == nil {
		sess = new(fosite.DefaultSession)
	}
	sess.Subject, sess.Username = rec.Subject, rec.Username
	for k, exp := range rec.ExpiresAt {
		sess.SetExpiresAt(k, shift(exp, d))
	}
	if rec.Form == nil {
		rec.Form = url.Values{}
	}
	return &fosite.Request{
		ID: rec.ID, RequestedAt: shift(rec.RequestedAt, d), Client: c,
		RequestedScope: rec.RequestedScope, GrantedScope: rec.GrantedScope,
		RequestedAudience: rec.RequestedAudience, GrantedAudience: rec.GrantedAudience,
		Form: rec.Form, Session: sess,
	}, t.Active, nil
}

// GetClient returns the client, or fosite.ErrNotFound.
func (s *storage) GetClient(ctx context.Context, id string) (fosite.Client, error) {
	if !ams.HasPrefixID(id, ams.PrefixClient) {
		return nil, fosite.ErrNotFound
	}
	c, err := s.store.FindOAuthClient(ctx, id)
	if ams.IsNotFound(err) {
		return nil, fosite.ErrNotFound
	} else if err != nil {
		return nil, err
	}
	return client{c}, nil
}

// ClientAssertionJWTValid and SetClientAssertionJWT serve the
// private_key_jwt client authentication, which ams does not offer (its
// clients are not fosite.OpenIDConnectClient, so fosite refuses client
// assertions before it gets here).
func (s *storage) ClientAssertionJWTValid(context.Context, string) error { return nil }

// SetClientAssertionJWT: see ClientAssertionJWTValid.
func (s *storage) SetClientAssertionJWT(context.Context, string, time.Time) error { return nil }

// CreateAuthorizeCodeSession stores a new code.
func (s *storage) CreateAuthorizeCodeSession(ctx context.Context, signature string, req fosite.Requester) error {
	return s.put(ctx, ams.TokenAuthorizeCode, signature, req)
}

// GetAuthorizeCodeSession returns a code's request. For a code already
// used it returns the request and fosite.ErrInvalidatedAuthorizeCode, on
// which fosite revokes the tokens issued with the code.
func (s *storage) GetAuthorizeCodeSession(ctx context.Context, signature string, session fosite.Session) (fosite.Requester, error) {
	req, active, err := s.get(ctx, ams.TokenAuthorizeCode, signature, session)
	if err != nil {
		return nil, err
	}
	if !active {
		return req, fosite.ErrInvalidatedAuthorizeCode
	}
	return req, nil
}

// InvalidateAuthorizeCodeSession marks a code used.
func (s *storage) InvalidateAuthorizeCodeSession(ctx context.Context, signature string) error {
	return s.store.DeactivateOAuthToken(ctx, ams.TokenAuthorizeCode, signature)
}

// CreatePKCERequestSession binds a code challenge to a code (by the code's
// signature).
func (s *storage) CreatePKCERequestSession(ctx context.Context, signature string, req fosite.Requester) error {
	return s.put(ctx, ams.TokenPKCE, signature, req)
}

// GetPKCERequestSession returns the challenge bound to a code, also after
// DeletePKCERequestSession.
func (s *storage) GetPKCERequestSession(ctx context.Context, signature string, session fosite.Session) (fosite.Requester, error) {
	req, _, err := s.get(ctx, ams.TokenPKCE, signature, session)
	return req, err
}

// DeletePKCERequestSession only marks the challenge inactive: it stays
// bound to its code for the code's whole life (the purge removes it with
// the code). fosite calls this before it checks the verifier, so deleting
// would let a request with a wrong verifier strip PKCE from the code, and a
// second request without any verifier would then pass for a confidential
// client. The code itself is single-use, so keeping the challenge costs
// nothing.
func (s *storage) DeletePKCERequestSession(ctx context.Context, signature string) error {
	return s.store.DeactivateOAuthToken(ctx, ams.TokenPKCE, signature)
}

// CreateAccessTokenSession stores a new access token.
func (s *storage) CreateAccessTokenSession(ctx context.Context, signature string, req fosite.Requester) error {
	return s.put(ctx, ams.TokenAccess, signature, req)
}

// GetAccessTokenSession returns an active access token's request. A
// revoked one is fosite.ErrInactiveToken.
func (s *storage) GetAccessTokenSession(ctx context.Context, signature string, session fosite.Session) (fosite.Requester, error) {
	req, active, err := s.get(ctx, ams.TokenAccess, signature, session)
	if err != nil {
		return nil, err
	}
	if !active {
		return nil, fosite.ErrInactiveToken
	}
	return req, nil
}

// DeleteAccessTokenSession removes an access token.
func (s *storage) DeleteAccessTokenSession(ctx context.Context, signature string) error {
	return s.store.DeleteOAuthToken(ctx, ams.TokenAccess, signature)
}

// CreateRefreshTokenSession stores a new refresh token.
func (s *storage) CreateRefreshTokenSession(ctx context.Context, signature, _ string, req fosite.Requester) error {
	return s.put(ctx, ams.TokenRefresh, signature, req)
}

// GetRefreshTokenSession returns a refresh token's request. For a token
// already rotated or revoked it returns the request and
// fosite.ErrInactiveToken: fosite takes that as reuse and revokes the
// whole grant.
func (s *storage) GetRefreshTokenSession(ctx context.Context, signature string, session fosite.Session) (fosite.Requester, error) {
	req, active, err := s.get(ctx, ams.TokenRefresh, signature, session)
	if err != nil {
		return nil, err
	}
	if !active {
		return req, fosite.ErrInactiveToken
	}
	return req, nil
}

// DeleteRefreshTokenSession removes a refresh token.
func (s *storage) DeleteRefreshTokenSession(ctx context.Context, signature string) error {
	return s.store.DeleteOAuthToken(ctx, ams.TokenRefresh, signature)
}

// RotateRefreshToken retires the grant's refresh and access tokens when a
// refresh token is used; the new pair is stored right after.
// The grant goes on (its API keys stay), unlike with RevokeRefreshToken.
func (s *storage) RotateRefreshToken(ctx context.Context, requestID, _ string) error {
	if err := s.store.DeactivateGrant(ctx, ams.TokenRefresh, requestID); err != nil {
		return err
	}
	return s.store.DeactivateGrant(ctx, ams.TokenAccess, requestID)
}

// RevokeRefreshToken marks every refresh token of the grant inactive and
// revokes the API keys the grant made. fosite calls it (with
// RevokeAccessToken) only to end a grant: RFC 7009 revocation, and the
// reuse of a refresh token or an authorization code.
func (s *storage) RevokeRefreshToken(ctx context.Context, requestID string) error {
	return s.store.RevokeGrant(ctx, ams.TokenRefresh, requestID, s.clock.Now())
}

// RevokeAccessToken marks every access token of the grant inactive and
// revokes the API keys the grant made (see RevokeRefreshToken).
func (s *storage) RevokeAccessToken(ctx context.Context, requestID string) error {
	return s.store.RevokeGrant(ctx, ams.TokenAccess, requestID, s.clock.Now())
}

// client is an ams.OAuthClient as fosite sees it: every client may use the
// authorization-code and refresh-token grants and request any of the five
// scopes (the user decides on the consent page).
type client struct{ c *ams.OAuthClient }

var (
	clientGrantTypes    = fosite.Arguments{"authorization_code", "refresh_token"}
	clientResponseTypes = fosite.Arguments{"code"}
	allScopes           = func() fosite.Arguments {
		a := make(fosite.Arguments, len(ams.AllPermissions))
		for i, p := range ams.AllPermissions {
			a[i] = string(p)
		}
		return a
	}()
)

func (c client) GetID() string                   { return c.c.ID }
func (c client) GetHashedSecret() []byte         { return []byte(c.c.SecretHash) }
func (c client) GetRedirectURIs() []string       { return c.c.RedirectURIs }
func (c client) GetGrantTypes() fosite.Arguments { return clientGrantTypes }
func (c client) GetResponseTypes() fosite.Arguments {
	return clientResponseTypes
}
func (c client) GetScopes() fosite.Arguments   { return allScopes }
func (c client) IsPublic() bool                { return c.c.Public }
func (c client) GetAudience() fosite.Arguments { return nil }
