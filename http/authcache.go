package http

import (
	"context"
	"sync"
	"time"

	"github.com/amsdev/ams"
)

// Authentication without a query per request (issue 17, point 4).
//
// The server keeps the credentials it has authenticated — API keys and
// OAuth access tokens, keyed by the SHA-256 of the secret — with what the
// store said of them: the caller (account, permissions), the expiry, and
// for a key whether it is revoked. A cached credential is used only while
// the store's authentication generation (ams.AuthWatch) is the one read
// before it was looked up: every change that alters what a credential
// authenticates as (a key revoked or changed, a token revoked, an account
// changed) moves the generation, in its own transaction, in whichever
// process it is made, and the next request of every process sees the
// move and drops the whole cache. Expiry is compared with the clock on
// every request, from the cached value. Reading the generation costs no
// query in the common case: SQLite reads PRAGMA data_version on one
// connection, PostgreSQL keeps the value that its notifications bring.
//
// Unknown credentials are not cached (a new key or token is unknown until
// created), nor are tokens refused for another reason than expiry; a
// revoked key is, since revocation is final. The cache is bounded
// (AuthCacheSize) and every entry is dropped after authCacheTTL whatever
// the generation says: a safety net, not the mechanism.

// DefaultAuthCacheSize is how many credentials a server caches when
// Server.AuthCacheSize is 0.
const DefaultAuthCacheSize = 10_000

// authCacheTTL bounds how long a credential is used from the cache, on the
// service clock, even when the generation has not moved.
const authCacheTTL = time.Minute

// authEntry is what the store said of one credential.
type authEntry struct {
	auth    *ams.Auth // the caller; shared: copied before it is handed out
	revoked bool      // an API key that has been revoked
	token   bool      // an access token (else an API key)
	loaded  time.Time // when it was looked up, on the service clock
}

// authCache is the credentials of one generation, by secret hash.
type authCache struct {
	mu  sync.RWMutex
	gen int64
	m   map[string]*authEntry
	max int
}

func newAuthCache(max int) *authCache {
	return &authCache{gen: -1, m: map[string]*authEntry{}, max: max}
}

// get returns the entry of hash if it belongs to generation gen and is
// younger than authCacheTTL at now.
func (c *authCache) get(hash string, gen int64, now time.Time) *authEntry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if gen != c.gen {
		return nil
	}
	e := c.m[hash]
	if e == nil || now.Sub(e.loaded) >= authCacheTTL || now.Before(e.loaded) {
		return nil
	}
	return e
}

// put stores e, looked up after generation gen was read. A newer
// generation empties the cache first; an entry of an older one (the
// generation moved while it was looked up) is not stored.
func (c *authCache) put(hash string, gen int64, e *authEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen < c.gen {
		return
	}
	if gen > c.gen {
		c.gen = gen
		clear(c.m)
	}
	if _, ok := c.m[hash]; !ok && len(c.m) >= c.max {
		// Full: drop an eighth, at random (map order).
		n := len(c.m) - c.max + max(1, c.max/8)
		for k := range c.m {
			if n == 0 {
				break
			}
			delete(c.m, k)
			n--
		}
	}
	c.m[hash] = e
}

// len returns the number of entries (for tests).
func (c *authCache) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}

// credentials returns the server's cache, made on first use with
// AuthCacheSize entries; nil when AuthCacheSize is negative.
func (s *Server) credentials() *authCache {
	s.authOnce.Do(func() {
		switch {
		case s.AuthCacheSize < 0:
		case s.AuthCacheSize == 0:
			s.authCache = newAuthCache(DefaultAuthCacheSize)
		default:
			s.authCache = newAuthCache(s.AuthCacheSize)
		}
	})
	return s.authCache
}

// authenticateSecret resolves an API key (ams_sk_…) or, with token set, an
// access token (ams_at_…) to its caller, through the cache.
func (s *Server) authenticateSecret(ctx context.Context, secret string, token bool) (*ams.Auth, error) {
	c := s.credentials()
	if c == nil {
		e, err := s.lookupCredential(ctx, secret, token)
		if err != nil {
			return nil, err
		}
		return s.admit(ctx, e, s.now())
	}
	hash := ams.HashSecret(secret)
	gen, err := s.Records.AuthGeneration(ctx)
	if err != nil {
		// Without the generation nothing cached can be trusted: ask the
		// store, and cache nothing.
		s.Logger.WarnContext(ctx, "read the authentication generation; authenticating without the cache", "err", err)
		e, err := s.lookupCredential(ctx, secret, token)
		if err != nil {
			return nil, err
		}
		return s.admit(ctx, e, s.now())
	}
	now := s.now()
	e := c.get(hash, gen, now)
	if e == nil || e.token != token {
		if e, err = s.lookupCredential(ctx, secret, token); err != nil {
			return nil, err
		}
		e.loaded = now
		c.put(hash, gen, e)
	}
	return s.admit(ctx, e, now)
}

// lookupCredential asks the store (keys) or the authorization server
// (tokens) about a credential. Unknown keys and refused tokens are errors,
// which are not cached.
func (s *Server) lookupCredential(ctx context.Context, secret string, token bool) (*authEntry, error) {
	if token {
		auth, err := s.Tokens.AuthenticateToken(ctx, secret)
		if err != nil {
			return nil, err
		}
		return &authEntry{auth: auth, token: true}, nil
	}
	key, user, err := s.Records.AuthenticateKey(ctx, ams.HashSecret(secret))
	if ams.IsNotFound(err) {
		return nil, ams.Errorf(ams.EUNAUTHENTICATED, "invalid_api_key", "The API key or token is not valid.")
	} else if err != nil {
		return nil, err
	}
	return &authEntry{
		auth:    &ams.Auth{User: user, KeyID: key.ID, Permissions: key.Permissions, ExpiresAt: key.ExpiresAt},
		revoked: key.RevokedAt != nil,
	}, nil
}

// admit checks a credential's state at now and returns a copy of its
// caller: refused when revoked or expired; a key's use is recorded.
func (s *Server) admit(ctx context.Context, e *authEntry, now time.Time) (*ams.Auth, error) {
	if e.revoked {
		return nil, ams.Errorf(ams.EUNAUTHENTICATED, "api_key_revoked", "This API key has been revoked. Create a new one.")
	}
	if exp := e.auth.ExpiresAt; exp != nil && !now.Before(*exp) {
		if e.token {
			return nil, &ams.Error{Kind: ams.EUNAUTHENTICATED, Code: "token_expired",
				Message: "The access token has expired. Use the refresh token to get a new one."}
		}
		return nil, ams.Errorf(ams.EUNAUTHENTICATED, "api_key_expired", "This API key has expired. Create a new one.")
	}
	if !e.token {
		s.touch(ctx, e.auth.KeyID, now)
	}
	// A copy: handlers may not change what the next request is given.
	auth := *e.auth
	user := *e.auth.User
	auth.User = &user
	return &auth, nil
}
