package oauth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/clientaddr"
	"github.com/amsdev/ams/password"
)

// Cookies. The session cookie holds a random 32-byte id; the store keeps
// only its hash. The login cookie is the double-submit CSRF binding of the
// login form, before there is a session.
const (
	SessionCookie = "ams_session"
	loginCookie   = "ams_login"
)

// defaultReturnTo is where a login without return_to ends: the page that
// says who is signed in.
const defaultReturnTo = "/login"

// maxFormBytes bounds the body of every form and token request.
const maxFormBytes = 64 << 10

// getLogin shows the login form, or, to a signed-in user, sends them on to
// return_to (or says who they are).
func (s *Server) getLogin(w http.ResponseWriter, r *http.Request) error {
	ret := safeReturnTo(r.URL.Query().Get("return_to"))
	user, sid, err := s.session(r)
	if err != nil {
		return err
	}
	if user != nil {
		if ret != defaultReturnTo {
			http.Redirect(w, r, ret, http.StatusSeeOther)
			return nil
		}
		s.render(w, http.StatusOK, "signedin.html", view{Title: "Signed in", UserEmail: user.Email, CSRF: s.csrfToken("session", sid)})
		return nil
	}
	s.render(w, http.StatusOK, "login.html", view{Title: "Sign in", ReturnTo: ret, CSRF: s.csrfToken("login", s.loginBinding(w, r))})
	return nil
}

// postLogin checks the e-mail and password, throttled (throttle.go) per
// client address and account, per client address, and, slowed rather than
// blocked, per account; on success it starts a session and redirects to
// return_to.
func (s *Server) postLogin(w http.ResponseWriter, r *http.Request) error {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := parseForm(r); err != nil {
		return badForm()
	}
	ctx := r.Context()
	f := r.PostForm
	ret := safeReturnTo(f.Get("return_to"))
	binding := ""
	if c, err := r.Cookie(loginCookie); err == nil {
		binding = c.Value
	}
	if !s.checkCSRF("login", binding, f.Get("csrf_token")) {
		return forbidden("The sign-in form has expired. Go back, reload the page and sign in again.")
	}
	email := strings.ToLower(strings.TrimSpace(f.Get("email")))
	v := view{Title: "Sign in", Email: email, ReturnTo: ret, CSRF: f.Get("csrf_token")}
	// Counted per network (an IPv6 client's /64), as sign-ups are: a
	// client given a /64 has as many addresses as it likes.
	ip := clientaddr.Network(clientaddr.Of(r))
	pairKey, ipKey, accountKey := "pair:"+ip+" "+email, "ip:"+ip, "account:"+email
	now := s.clock.Now()
	var until time.Time
	for _, rule := range []struct {
		key string
		max int
	}{{pairKey, MaxLoginFailures}, {ipKey, MaxAddressFailures}} {
		u, err := blockedUntil(ctx, s.throttle, rule.key, now, rule.max)
		if err != nil {
			return err
		}
		if u.After(until) {
			until = u
		}
	}
	if !until.IsZero() {
		wait := until.Sub(now)
		setRetryAfter(w, wait)
		v.Error = fmt.Sprintf("Too many failed sign-in attempts. Try again after %s (in %s).",
			until.UTC().Format("15:04 UTC"), humanWait(wait))
		s.render(w, http.StatusTooManyRequests, "login.html", v)
		return nil
	}
	// The account's slowdown is checked and the attempt counted as one
	// of its failures in one step (Admit), so that attempts racing each
	// other take their turns; a success takes its count back.
	admitted := false
	if !s.knownDevice(r, email) {
		next, err := s.throttle.Admit(ctx, accountKey, now.Add(-LoginFailureWindow), now, ThrottleKeep, accountRule)
		if err != nil {
			return err
		}
		if !next.IsZero() {
			ts, err := s.throttle.Recent(ctx, accountKey, now.Add(-LoginFailureWindow), ThrottleKeep)
			if err != nil {
				return err
			}
			wait := next.Sub(now)
			setRetryAfter(w, wait)
			v.Error = fmt.Sprintf("This account has had many failed sign-in attempts, so its sign-ins are slowed down: "+
				"one attempt every %s. Try again in %s.", humanSeconds(AccountDelay(len(ts))), humanSeconds(wait))
			s.render(w, http.StatusTooManyRequests, "login.html", v)
			return nil
		}
		admitted = true
	}

	user, err := s.store.FindUserByEmail(ctx, email)
	if err != nil && !ams.IsNotFound(err) {
		return err
	}
	ok := false
	if user != nil && user.PasswordHash != "" {
		ok = password.Check(user.PasswordHash, f.Get("password"))
	} else {
		// Spend the same time as a real check, so that the answer time
		// does not tell which addresses have an account.
		password.Check(dummyHash, f.Get("password"))
	}
	if !ok {
		keys := []string{pairKey, ipKey}
		if !admitted {
			keys = append(keys, accountKey) // Admit has counted it otherwise
		}
		for _, k := range keys {
			if err := s.throttle.Failed(ctx, k, now); err != nil {
				return err
			}
		}
		v.Error = "The e-mail address or password is not correct."
		s.render(w, http.StatusOK, "login.html", v)
		return nil
	}
	if err := s.throttle.Reset(ctx, pairKey); err != nil {
		return err
	}
	if admitted {
		if err := s.throttle.Withdraw(ctx, accountKey, now); err != nil {
			return err
		}
	}
	if _, err := s.startSession(ctx, w, r, user); err != nil {
		return err
	}
	s.setKnownDevice(w, r, email)
	http.Redirect(w, r, ret, http.StatusSeeOther)
	return nil
}

// deviceCookie marks a browser that has signed in to an account: its
// value is an HMAC of the account's e-mail address, which only the server
// can compute. Such a browser is exempt from the account's slowdown, so
// that guessing from many addresses does not slow its owner.
const deviceCookie = "ams_device"

// deviceCookieAge is how long a browser is remembered.
const deviceCookieAge = 365 * 24 * time.Hour

// knownDevice reports whether r carries the device cookie of email.
func (s *Server) knownDevice(r *http.Request, email string) bool {
	c, err := r.Cookie(deviceCookie)
	return err == nil && c.Value != "" && hmac.Equal([]byte(c.Value), []byte(s.csrfToken("device", email)))
}

// setKnownDevice remembers the browser of r as one that signed in to
// email.
func (s *Server) setKnownDevice(w http.ResponseWriter, r *http.Request, email string) {
	http.SetCookie(w, &http.Cookie{Name: deviceCookie, Value: s.csrfToken("device", email), Path: "/login",
		MaxAge: int(deviceCookieAge / time.Second), HttpOnly: true, Secure: s.secureCookies(r), SameSite: http.SameSiteLaxMode})
}

// setRetryAfter sets Retry-After to wait in whole seconds, rounded up.
func setRetryAfter(w http.ResponseWriter, wait time.Duration) {
	w.Header().Set("Retry-After", strconv.FormatInt(int64((wait+time.Second-1)/time.Second), 10))
}

// humanSeconds writes d rounded up to whole seconds ("1 second", "45
// seconds", "a minute").
func humanSeconds(d time.Duration) string {
	n := int64((d + time.Second - 1) / time.Second)
	switch {
	case n <= 1:
		return "1 second"
	case n == 60:
		return "a minute"
	}
	return fmt.Sprintf("%d seconds", n)
}

// postLogout ends the session and returns to the login page (with
// return_to, so that another account can continue an authorization).
func (s *Server) postLogout(w http.ResponseWriter, r *http.Request) error {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := parseForm(r); err != nil {
		return badForm()
	}
	_, sid, err := s.session(r)
	if err != nil {
		return err
	}
	if sid != "" {
		if !s.checkCSRF("session", sid, r.PostForm.Get("csrf_token")) {
			return forbidden("The sign-out form has expired. Go back, reload the page and try again.")
		}
		if err := s.store.DeleteLoginSession(r.Context(), ams.HashSecret(sid)); err != nil {
			return err
		}
	}
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: s.secureCookies(r), SameSite: http.SameSiteLaxMode})
	to := "/login"
	if ret := safeReturnTo(r.PostForm.Get("return_to")); ret != defaultReturnTo {
		to += "?return_to=" + url.QueryEscape(ret)
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
	return nil
}

// session returns the signed-in user of r and the session id, or a nil
// user when there is no valid session.
func (s *Server) session(r *http.Request) (*ams.User, string, error) {
	c, err := r.Cookie(SessionCookie)
	if err != nil || c.Value == "" {
		return nil, "", nil
	}
	ls, err := s.store.FindLoginSession(r.Context(), ams.HashSecret(c.Value), s.clock.Now())
	if ams.IsNotFound(err) {
		return nil, "", nil
	} else if err != nil {
		return nil, "", err
	}
	u, err := s.store.FindUser(r.Context(), ls.UserID)
	if ams.IsNotFound(err) {
		return nil, "", nil
	} else if err != nil {
		return nil, "", err
	}
	return u, c.Value, nil
}

// startSession creates a login session for user, sets its cookie and
// returns its id.
func (s *Server) startSession(ctx context.Context, w http.ResponseWriter, r *http.Request, user *ams.User) (string, error) {
	id := randomToken()
	now := s.clock.Now()
	if err := s.store.CreateLoginSession(ctx, &ams.LoginSession{
		IDHash: ams.HashSecret(id), UserID: user.ID, CreatedAt: now, ExpiresAt: now.Add(ams.LoginSessionLifetime),
	}); err != nil {
		return "", err
	}
	http.SetCookie(w, &http.Cookie{
		Name: SessionCookie, Value: id, Path: "/", MaxAge: int(ams.LoginSessionLifetime / time.Second),
		HttpOnly: true, Secure: s.secureCookies(r), SameSite: http.SameSiteLaxMode,
	})
	return id, nil
}

// secureCookies reports whether cookies get the Secure attribute: when the
// request came over TLS or the service's public URL is https.
func (s *Server) secureCookies(r *http.Request) bool { return s.secure || r.TLS != nil }

// loginBinding returns the value of the login cookie, setting a new one if
// the browser has none.
func (s *Server) loginBinding(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(loginCookie); err == nil && len(c.Value) >= 32 {
		return c.Value
	}
	v := randomToken()
	http.SetCookie(w, &http.Cookie{Name: loginCookie, Value: v, Path: "/", HttpOnly: true,
		Secure: s.secureCookies(r), SameSite: http.SameSiteLaxMode})
	return v
}

// csrfToken returns the CSRF token of a form: an HMAC of what the form is
// bound to, the session id (kind "session") or, before login, the login
// cookie (kind "login"). A page of another site can neither read the
// cookie nor compute the token.
func (s *Server) csrfToken(kind, binding string) string {
	m := hmac.New(sha256.New, s.csrfKey)
	m.Write([]byte(kind + "\x00" + binding))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func (s *Server) checkCSRF(kind, binding, token string) bool {
	return binding != "" && token != "" && hmac.Equal([]byte(s.csrfToken(kind, binding)), []byte(token))
}

// safeReturnTo returns ret if it is a path on this site, defaultReturnTo
// otherwise: never another site (an open redirect), nor "//host" or
// "/\host", which browsers read as another site.
func safeReturnTo(ret string) string {
	if ret == "" || ret[0] != '/' || len(ret) > 4096 || strings.HasPrefix(ret, "//") || strings.HasPrefix(ret, "/\\") ||
		strings.ContainsAny(ret, "\\\r\n\t\x00") {
		return defaultReturnTo
	}
	u, err := url.Parse(ret)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
		return defaultReturnTo
	}
	return ret
}

func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand since Go 1.24)
	return base64.RawURLEncoding.EncodeToString(b)
}

// dummyHash is a bcrypt hash at the password cost (password.Cost) of a
// random password nobody knows, compared against when the account does not
// exist or has no password.
const dummyHash = "$2a$12$dToMwFpMBZ88ZHSw6HcUmeTV/p9FJ4tVFiAxYgikSvuE4ckfLK8aO"

func humanWait(d time.Duration) string {
	m := int((d + time.Minute - 1) / time.Minute)
	if m <= 1 {
		return "a minute"
	}
	return fmt.Sprintf("%d minutes", m)
}
