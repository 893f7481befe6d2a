package oauth

import (
	"context"
	"net/http"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/clientaddr"
)

// This file exports what the account pages (package pages) share with the
// login pages: the session, its CSRF tokens and keys derived from the
// server's secret.

// SessionUser returns the signed-in user of r and the session id, or a
// nil user and "" when r has no valid session.
func (s *Server) SessionUser(r *http.Request) (*ams.User, string, error) {
	return s.session(r)
}

// StartSession signs user in: it creates a login session, sets its
// cookie on w (as a successful POST /login does) and returns its id.
func (s *Server) StartSession(ctx context.Context, w http.ResponseWriter, r *http.Request, user *ams.User) (string, error) {
	return s.startSession(ctx, w, r, user)
}

// CSRFToken returns the token a form must carry: bound to the session
// sessionID when it is not empty (the token POST /logout and the consent
// page accept), else to the browser's login cookie, which it sets on w if
// missing (as the login form does).
func (s *Server) CSRFToken(w http.ResponseWriter, r *http.Request, sessionID string) string {
	if sessionID != "" {
		return s.csrfToken("session", sessionID)
	}
	return s.csrfToken("login", s.loginBinding(w, r))
}

// CheckCSRF reports whether token is the CSRFToken of sessionID, or, when
// sessionID is empty, of r's login cookie.
func (s *Server) CheckCSRF(r *http.Request, sessionID, token string) bool {
	if sessionID != "" {
		return s.checkCSRF("session", sessionID, token)
	}
	binding := ""
	if c, err := r.Cookie(loginCookie); err == nil {
		binding = c.Value
	}
	return s.checkCSRF("login", binding, token)
}

// DeriveKey returns a 32-byte key for purpose, derived from the server's
// secret (Config.Secret) and distinct from the keys the server itself
// uses, so that every process sharing the secret derives the same key.
func (s *Server) DeriveKey(purpose string) []byte {
	return deriveKey(s.secret, "ams derived key v1\x00"+purpose)
}

// SecureCookies reports whether cookies set in answer to r get the Secure
// attribute (the request came over TLS or the public URL is https).
func (s *Server) SecureCookies(r *http.Request) bool { return s.secureCookies(r) }

// Sign-ups are throttled per client network (clientaddr.Network of the
// client address, which behind --trusted-proxies is the address the
// proxies report: the address itself for IPv4, its /64 for IPv6, as one
// holder of a /64 can rotate through all of it) with the login throttle's
// figures and store: at most MaxLoginFailures accounts from one network
// within LoginFailureWindow.

// SignupBlocked reports whether r's client address has made too many
// accounts recently, and until when.
func (s *Server) SignupBlocked(ctx context.Context, r *http.Request) (time.Time, bool, error) {
	until, err := blockedUntil(ctx, s.throttle, signupKey(r), s.clock.Now(), MaxLoginFailures)
	return until, !until.IsZero(), err
}

// SignupDone counts an account made from r's client address.
func (s *Server) SignupDone(ctx context.Context, r *http.Request) error {
	return s.throttle.Failed(ctx, signupKey(r), s.clock.Now())
}

// signupKey is the throttle key of r's sign-ups: "signup-ip:" and the
// client's network.
func signupKey(r *http.Request) string {
	return "signup-ip:" + clientaddr.Network(clientaddr.Of(r))
}
