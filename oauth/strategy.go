package oauth

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"hash/fnv"
	"strings"
	"sync"
	"time"

	"github.com/amsdev/ams"
	"github.com/ory/fosite"
	foauth2 "github.com/ory/fosite/handler/oauth2"
)

// PrefixAuthorizeCode starts every authorization code, as ams.PrefixAccessToken
// and ams.PrefixRefreshToken start access and refresh tokens.
const PrefixAuthorizeCode = "ams_ac_"

// tokenStrategy is fosite's HMAC-SHA512/256 token strategy with the ams
// prefixes instead of fosite's hard-coded "ory_at_" ones. A token is
// prefix + base64url(random) + "." + base64url(HMAC(secret, random)); only
// the HMAC part (the signature) is stored. The prefix is required: a
// token presented with the wrong prefix (a refresh token as an access
// token, say) has no signature and is not found.
type tokenStrategy struct {
	base *foauth2.HMACSHAStrategyUnPrefixed
}

var _ foauth2.CoreStrategy = (*tokenStrategy)(nil)

func signatureOf(base func(context.Context, string) string, ctx context.Context, token, prefix string) string {
	t, ok := strings.CutPrefix(token, prefix)
	if !ok {
		return ""
	}
	return base(ctx, t)
}

func withPrefix(prefix, token, sig string, err error) (string, string, error) {
	if err != nil {
		return "", "", err
	}
	return prefix + token, sig, nil
}

func validate(v func(context.Context, fosite.Requester, string) error, ctx context.Context, r fosite.Requester, token, prefix string) error {
	t, ok := strings.CutPrefix(token, prefix)
	if !ok {
		return fosite.ErrInvalidTokenFormat
	}
	return v(ctx, r, t)
}

func (s *tokenStrategy) AccessTokenSignature(ctx context.Context, token string) string {
	return signatureOf(s.base.AccessTokenSignature, ctx, token, ams.PrefixAccessToken)
}

func (s *tokenStrategy) GenerateAccessToken(ctx context.Context, r fosite.Requester) (string, string, error) {
	t, sig, err := s.base.GenerateAccessToken(ctx, r)
	return withPrefix(ams.PrefixAccessToken, t, sig, err)
}

func (s *tokenStrategy) ValidateAccessToken(ctx context.Context, r fosite.Requester, token string) error {
	return validate(s.base.ValidateAccessToken, ctx, r, token, ams.PrefixAccessToken)
}

func (s *tokenStrategy) RefreshTokenSignature(ctx context.Context, token string) string {
	return signatureOf(s.base.RefreshTokenSignature, ctx, token, ams.PrefixRefreshToken)
}

func (s *tokenStrategy) GenerateRefreshToken(ctx context.Context, r fosite.Requester) (string, string, error) {
	t, sig, err := s.base.GenerateRefreshToken(ctx, r)
	return withPrefix(ams.PrefixRefreshToken, t, sig, err)
}

func (s *tokenStrategy) ValidateRefreshToken(ctx context.Context, r fosite.Requester, token string) error {
	return validate(s.base.ValidateRefreshToken, ctx, r, token, ams.PrefixRefreshToken)
}

func (s *tokenStrategy) AuthorizeCodeSignature(ctx context.Context, token string) string {
	return signatureOf(s.base.AuthorizeCodeSignature, ctx, token, PrefixAuthorizeCode)
}

func (s *tokenStrategy) GenerateAuthorizeCode(ctx context.Context, r fosite.Requester) (string, string, error) {
	t, sig, err := s.base.GenerateAuthorizeCode(ctx, r)
	return withPrefix(PrefixAuthorizeCode, t, sig, err)
}

func (s *tokenStrategy) ValidateAuthorizeCode(ctx context.Context, r fosite.Requester, token string) error {
	return validate(s.base.ValidateAuthorizeCode, ctx, r, token, PrefixAuthorizeCode)
}

// secretHasher stores client secrets as ams.HashSecret (SHA-256) and
// compares in constant time, instead of fosite's default bcrypt. Client
// secrets are 40 random base62 characters (about 238 bits), like API keys,
// so a slow hash adds no protection against guessing; it would only cost
// ~100 ms of CPU on every token request. Passwords, which are guessable,
// keep bcrypt.
type secretHasher struct{}

var errSecretMismatch = errors.New("client secret does not match")

func (secretHasher) Hash(_ context.Context, data []byte) ([]byte, error) {
	return []byte(ams.HashSecret(string(data))), nil
}

func (secretHasher) Compare(_ context.Context, hash, data []byte) error {
	if len(hash) == 0 || !ams.SecretsEqual(string(hash), ams.HashSecret(string(data))) {
		return errSecretMismatch
	}
	return nil
}

// deriveKey returns a key for one purpose from the server secret, so that
// the token HMAC key and the CSRF key are never the same bytes.
func deriveKey(secret []byte, purpose string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(purpose))
	return m.Sum(nil)
}

// grantLocks serialize the token requests that present the same code or
// refresh token. fosite reads a code or refresh token, then later marks it
// used; ams.OAuthStore has no transaction spanning both, so without the
// lock two simultaneous requests with one refresh token could both
// succeed. With it, the second one finds the token used and is refused
// (and, as a reuse, revokes the grant).
//
// The lock has two levels: a striped mutex within this process, so that
// requests of one process queue without touching the database, then a
// lease in the store (ams.OAuthStore.AcquireOAuthLock), so that requests
// that reach different processes serving one database are serialized too.
// The lease is named by a hash of the credential, never the credential.
type grantLocks struct {
	mu    [64]sync.Mutex
	owner string // this process, in the store's leases
}

const (
	// grantLease is how long a store lease is held at most: a token request
	// takes milliseconds, so a holder that died frees the name soon.
	grantLease = 30 * time.Second
	// grantWait is how long a request waits for a lease held elsewhere
	// before it is answered with a temporary error.
	grantWait = 10 * time.Second
)

// errGrantBusy is returned when the lease stayed held for grantWait.
var errGrantBusy = errors.New("the code or refresh token is being used by another request")

// lock takes both levels of the lock of credential and returns the
// function that releases them.
func (g *grantLocks) lock(ctx context.Context, store ams.OAuthStore, clock ams.Clock, credential string) (func(), error) {
	h := fnv.New32a()
	h.Write([]byte(credential))
	m := &g.mu[h.Sum32()%uint32(len(g.mu))]
	m.Lock()
	name := "grant:" + ams.HashSecret(credential)
	deadline := time.Now().Add(grantWait)
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 200*time.Millisecond) {
		now := clock.Now()
		ok, err := store.AcquireOAuthLock(ctx, name, g.owner, now, now.Add(grantLease))
		if err != nil {
			m.Unlock()
			return nil, err
		}
		if ok {
			break
		}
		if time.Now().Add(wait).After(deadline) {
			m.Unlock()
			return nil, errGrantBusy
		}
		select {
		case <-ctx.Done():
			m.Unlock()
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
	return func() {
		// Released even when the request was cancelled: otherwise the
		// name stays blocked for the whole lease.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		store.ReleaseOAuthLock(ctx, name, g.owner) //nolint:errcheck // the lease ends by itself
		m.Unlock()
	}, nil
}
