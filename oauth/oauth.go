// Package oauth is the OAuth 2.0 authorization server of ams: the
// authorization-code grant with PKCE (S256), refresh tokens that rotate on
// use, token revocation (RFC 7009) and server metadata (RFC 8414), with the
// browser side of the flow (login, consent, logout) as server-rendered
// pages. The protocol is github.com/ory/fosite; this package adapts it to
// the ams store, clock and conventions:
//
//   - tokens carry the ams prefixes (ams_at_, ams_rt_, ams_ac_) and are
//     stored by their HMAC signature only (strategy.go);
//   - fosite's state is kept in ams.OAuthStore (storage.go), so it works on
//     every storage engine;
//   - the service clock is injected (storage.go explains how);
//   - the /v1 API accepts access tokens through Server.AuthenticateToken.
//
// Routes (Server.Register): GET/POST /oauth/authorize, POST /oauth/token,
// POST /oauth/revoke, POST /oauth/register (RFC 7591 dynamic client
// registration, register.go), GET /.well-known/oauth-authorization-server,
// GET/POST /login and POST /logout.
package oauth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/amsdev/ams"
	"github.com/ory/fosite"
	"github.com/ory/fosite/compose"
	foauth2 "github.com/ory/fosite/handler/oauth2"
	"github.com/ory/fosite/token/hmac"
)

// SecretSize is the length in bytes of Config.Secret.
const SecretSize = 32

// Config holds what the authorization server needs.
type Config struct {
	// Store holds the accounts and the OAuth state; ams.Store satisfies it.
	Store Store
	// Clock is the service clock (nil: the wall clock). Token, code and
	// session expiry and login throttling follow it.
	Clock ams.Clock
	// Logger receives internal errors (nil: slog.Default()).
	Logger *slog.Logger
	// BaseURL is the public URL of the service, without a trailing slash:
	// the issuer of the metadata document. When it is https, cookies are
	// Secure.
	BaseURL string
	// Secret is a random key of SecretSize bytes, kept outside the
	// database: it signs tokens (HMAC) and CSRF tokens. Changing it
	// invalidates every issued token.
	Secret []byte
	// Throttle stores failed sign-ins for the rules of throttle.go (nil:
	// in memory, NewMemoryThrottle(ThrottleKeep, LoginFailureWindow)).
	Throttle LoginThrottle
}

// Store is the storage the authorization server uses: the OAuth state and
// the accounts that log in. ams.Store satisfies it.
type Store interface {
	ams.OAuthStore
	// FindUser and FindUserByEmail return ENOTFOUND when there is no such user.
	FindUser(ctx context.Context, id string) (*ams.User, error)
	FindUserByEmail(ctx context.Context, email string) (*ams.User, error)
}

// Server is the authorization server. It implements the API's
// TokenAuthenticator (AuthenticateToken) and serves the OAuth routes
// (Register).
type Server struct {
	store    Store
	clock    ams.Clock
	logger   *slog.Logger
	base     string
	secure   bool // cookies get the Secure attribute
	csrfKey  []byte
	secret   []byte // Config.Secret, for DeriveKey
	throttle LoginThrottle
	provider fosite.OAuth2Provider
	strategy *tokenStrategy
	locks    grantLocks
	cop      *http.CrossOriginProtection
}

// New returns an authorization server for cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("oauth: Config.Store is required")
	}
	if len(cfg.Secret) != SecretSize {
		return nil, fmt.Errorf("oauth: Config.Secret must be %d bytes, got %d", SecretSize, len(cfg.Secret))
	}
	base := strings.TrimRight(cfg.BaseURL, "/")
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("oauth: Config.BaseURL must be an absolute http(s) URL, got %q", cfg.BaseURL)
	}
	s := &Server{
		store:    cfg.Store,
		clock:    cfg.Clock,
		logger:   cfg.Logger,
		base:     base,
		secure:   u.Scheme == "https",
		csrfKey:  deriveKey(cfg.Secret, "ams oauth csrf v1"),
		secret:   append([]byte(nil), cfg.Secret...),
		throttle: cfg.Throttle,
		locks:    grantLocks{owner: ams.NewID("proc")},
	}
	if s.logger == nil {
		s.logger = slog.Default()
	}
	if s.throttle == nil {
		s.throttle = NewMemoryThrottle(ThrottleKeep, LoginFailureWindow)
	}

	// Every field fosite would otherwise fill lazily on first use is set
	// here, so that concurrent requests never write the configuration.
	fc := &fosite.Config{
		AccessTokenLifespan:      ams.AccessTokenLifetime,
		RefreshTokenLifespan:     ams.RefreshTokenLifetime,
		AuthorizeCodeLifespan:    ams.AuthorizeCodeLifetime,
		GlobalSecret:             append([]byte(nil), cfg.Secret...),
		ScopeStrategy:            fosite.ExactScopeStrategy,
		AudienceMatchingStrategy: fosite.DefaultAudienceMatchingStrategy,
		ClientSecretsHasher:      secretHasher{},
		// PKCE: S256 only; required for public clients, accepted for all.
		EnforcePKCEForPublicClients:    true,
		EnablePKCEPlainChallengeMethod: false,
		// Refresh tokens are always issued: no "offline" scope is needed.
		RefreshTokenScopes: []string{},
		TokenURL:           base + "/oauth/token",
	}
	s.strategy = &tokenStrategy{base: foauth2.NewHMACSHAStrategyUnPrefixed(&hmac.HMACStrategy{Config: fc}, fc)}
	st := &storage{store: cfg.Store, clock: cfg.Clock}
	// Handler order matters: the code handler issues the code that the
	// PKCE handler then binds the challenge to.
	s.provider = compose.Compose(fc, st, s.strategy,
		compose.OAuth2AuthorizeExplicitFactory,
		compose.OAuth2RefreshTokenGrantFactory,
		compose.OAuth2PKCEFactory,
		compose.OAuth2TokenRevocationFactory,
		compose.OAuth2TokenIntrospectionFactory,
	)

	s.cop = http.NewCrossOriginProtection()
	s.cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.renderError(w, r, http.StatusForbidden, "Request refused",
			"This form was sent from another site, so it was refused. Go back to the page, reload it, and try again.")
	}))
	return s, nil
}

// Register adds the OAuth and login routes to mux. The HTML form posts are
// refused when they come from another origin (http.CrossOriginProtection)
// and also carry a CSRF token.
func (s *Server) Register(mux *http.ServeMux) {
	forms := func(h func(http.ResponseWriter, *http.Request) error) http.Handler {
		return s.cop.Handler(s.page(h))
	}
	mux.Handle("GET /oauth/authorize", s.page(s.getAuthorize))
	mux.Handle("POST /oauth/authorize", forms(s.postAuthorize))
	mux.Handle("POST /oauth/token", http.HandlerFunc(s.token))
	mux.Handle("POST /oauth/revoke", http.HandlerFunc(s.revoke))
	mux.Handle("POST /oauth/register", http.HandlerFunc(s.register)) // RFC 7591 (register.go)
	mux.Handle("GET /.well-known/oauth-authorization-server", http.HandlerFunc(s.metadata))
	mux.Handle("GET /login", s.page(s.getLogin))
	mux.Handle("POST /login", forms(s.postLogin))
	mux.Handle("POST /logout", forms(s.postLogout))
}

// AuthenticateToken resolves an access token (ams_at_...) to its caller: the
// user who granted it, the client, and the granted scopes as permissions.
// It introspects the token through fosite (signature, storage, expiry on
// the service clock). An unknown, malformed or revoked token is
// EUNAUTHENTICATED with code invalid_token; an expired one has code
// token_expired.
func (s *Server) AuthenticateToken(ctx context.Context, token string) (*ams.Auth, error) {
	use, ar, err := s.provider.IntrospectToken(ctx, token, fosite.AccessToken, new(fosite.DefaultSession))
	switch {
	case err == nil && use == fosite.AccessToken:
	case err == nil:
		return nil, invalidToken("The access token is not valid.")
	case errors.Is(err, fosite.ErrTokenExpired):
		return nil, &ams.Error{Kind: ams.EUNAUTHENTICATED, Code: "token_expired",
			Message: "The access token has expired. Use the refresh token to get a new one."}
	case errors.Is(err, fosite.ErrInactiveToken):
		return nil, invalidToken("The access token has been revoked.")
	case errors.Is(err, fosite.ErrNotFound), errors.Is(err, fosite.ErrInvalidTokenFormat),
		errors.Is(err, fosite.ErrTokenSignatureMismatch):
		return nil, invalidToken("The access token is not valid.")
	default:
		return nil, fmt.Errorf("introspect access token: %w", err)
	}
	user, err := s.store.FindUser(ctx, ar.GetSession().GetSubject())
	if ams.IsNotFound(err) {
		return nil, invalidToken("The access token is not valid.")
	} else if err != nil {
		return nil, err
	}
	perms, err := ams.ParsePermissions(strings.Join(ar.GetGrantedScopes(), " "))
	if err != nil {
		return nil, invalidToken("The access token is not valid.")
	}
	a := &ams.Auth{User: user, ClientID: ar.GetClient().GetID(), GrantID: ar.GetID(), Permissions: perms}
	if exp := ar.GetSession().GetExpiresAt(fosite.AccessToken); !exp.IsZero() {
		// fosite's frame is the wall clock's (storage.go): shift the
		// expiry back into the service clock's.
		if s.clock != nil {
			exp = exp.Add(s.clock().Sub(time.Now()))
		}
		exp = exp.UTC().Truncate(time.Millisecond)
		a.ExpiresAt = &exp
	}
	return a, nil
}

func invalidToken(msg string) error {
	return &ams.Error{Kind: ams.EUNAUTHENTICATED, Code: "invalid_token", Message: msg}
}
