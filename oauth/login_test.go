package oauth_test

import (
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/oauth"
)

func TestLogin(t *testing.T) {
	t.Parallel()
	h := setup(t)
	b := h.newBrowser()
	p := h.login(t, b, "Ann@Example.com ", testPassword) // e-mail matched case-insensitively
	if p.StatusCode != http.StatusOK || p.Request.URL.Path != "/login" || !strings.Contains(p.Body, "Signed in as") {
		t.Fatalf("after login without return_to: %d %s\n%s", p.StatusCode, p.Request.URL, p.Body)
	}
	// The session cookie, as the login answer set it.
	var c *http.Cookie
	for _, r := range []*http.Response{p.Response} {
		for r.Request.Response != nil && c == nil {
			r = r.Request.Response
			for _, ck := range r.Cookies() {
				if ck.Name == oauth.SessionCookie {
					c = ck
				}
			}
		}
	}
	if c == nil {
		t.Fatal("no session cookie set")
	}
	raw := c.Raw
	for _, want := range []string{"HttpOnly", "SameSite=Lax", "Path=/", "Max-Age=1209600"} {
		if !strings.Contains(raw, want) {
			t.Errorf("session cookie %q lacks %s", raw, want)
		}
	}
	if strings.Contains(raw, "Secure") {
		t.Errorf("Secure on an http base URL: %q", raw)
	}
	if len(c.Value) < 43 {
		t.Errorf("session id too short: %q", c.Value)
	}
	// Only its hash is stored.
	if _, err := h.Store.FindLoginSession(context.Background(), ams.HashSecret(c.Value), h.Clock.Now()); err != nil {
		t.Errorf("session not stored by hash: %v", err)
	}

	// Logout ends the session.
	lf := findForm(t, p, "/logout")
	p = h.post(t, b, "/logout", lf.Values)
	if p.StatusCode != http.StatusOK || !strings.Contains(p.Body, "Sign in to ams") {
		t.Fatalf("after logout: %d\n%s", p.StatusCode, p.Body)
	}
	if _, err := h.Store.FindLoginSession(context.Background(), ams.HashSecret(c.Value), h.Clock.Now()); !ams.IsNotFound(err) {
		t.Errorf("session still stored after logout: %v", err)
	}
	if p := h.get(t, b, h.authorizeURL(h.Client)); p.Request.URL.Path != "/login" {
		t.Errorf("authorize after logout: %s, want the login page", p.Request.URL)
	}

	// Sessions expire on the service clock.
	h.login(t, b, "ann@example.com", testPassword)
	h.Clock.Add(ams.LoginSessionLifetime + time.Second)
	if p := h.get(t, b, h.authorizeURL(h.Client)); p.Request.URL.Path != "/login" {
		t.Errorf("authorize with an expired session: %s, want the login page", p.Request.URL)
	}
}

func TestLoginFailures(t *testing.T) {
	t.Parallel()
	h := setup(t)
	b := h.newBrowser()
	// Wrong password, unknown address, an account without password: the
	// same answer.
	nopw := h.NewUser("nopassword@example.com", ams.PlanStandard)
	for _, c := range [][2]string{{"ann@example.com", "wrong password"}, {"nobody@example.com", testPassword}, {nopw.Email, ""}} {
		p := h.login(t, b, c[0], c[1])
		if p.StatusCode != http.StatusOK || !strings.Contains(p.Body, "The e-mail address or password is not correct.") {
			t.Errorf("login %s: %d\n%s", c[0], p.StatusCode, p.Body)
		}
		if strings.Contains(p.Body, c[1]) && c[1] != "" {
			t.Errorf("the page repeats the password")
		}
	}
	if p := h.get(t, b, h.authorizeURL(h.Client)); p.Request.URL.Path != "/login" {
		t.Errorf("a failed login made a session")
	}
}

// TestLoginThrottle: 5 failures per e-mail and per client IP within 15
// minutes, then 429 until the window has passed on the service clock.
func TestLoginThrottle(t *testing.T) {
	t.Parallel()
	h := setup(t)
	b := h.newBrowser()
	for i := range oauth.MaxLoginFailures {
		h.Clock.Add(time.Second)
		if p := h.login(t, b, "ann@example.com", "wrong password"); p.StatusCode != http.StatusOK {
			t.Fatalf("failure %d: %d", i+1, p.StatusCode)
		}
	}
	// Blocked now, even with the right password.
	p := h.login(t, b, "ann@example.com", testPassword)
	if p.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("6th attempt: %d, want 429", p.StatusCode)
	}
	// The first failure was at 10:00:01: blocked until 10:15:01.
	if !strings.Contains(p.Body, "Try again after 10:15 UTC") || p.Header.Get("Retry-After") != "896" {
		t.Errorf("429 page: Retry-After %q\n%s", p.Header.Get("Retry-After"), p.Body)
	}
	// The same client IP with another address: blocked too.
	other := h.NewUser("other@example.com", ams.PlanStandard)
	if p := h.login(t, h.newBrowser(), other.Email, "whatever"); p.StatusCode != http.StatusTooManyRequests {
		t.Errorf("same IP, other address: %d, want 429", p.StatusCode)
	}
	// Not yet at 10:15:00; allowed at 10:15:01.
	h.Clock.Add(15*time.Minute - 5*time.Second)
	if p := h.login(t, b, "ann@example.com", testPassword); p.StatusCode != http.StatusTooManyRequests {
		t.Errorf("at 10:15:00: %d, want 429", p.StatusCode)
	}
	h.Clock.Add(time.Second)
	if p := h.login(t, b, "ann@example.com", testPassword); p.StatusCode != http.StatusOK || !strings.Contains(p.Body, "Signed in as") {
		t.Errorf("after 15 minutes: %d\n%s", p.StatusCode, p.Body)
	}
}

func TestMemoryThrottle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	m := oauth.NewMemoryThrottle(3, 10*time.Minute)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	blocked := func(d time.Duration) (time.Time, bool) {
		u, b, err := m.Blocked(ctx, "k", at(d))
		if err != nil {
			t.Fatal(err)
		}
		return u, b
	}
	for _, d := range []time.Duration{0, time.Minute, 2 * time.Minute} {
		if _, b := blocked(d); b {
			t.Fatalf("blocked before the 3rd failure at %v", d)
		}
		m.Failed(ctx, "k", at(d))
	}
	for _, c := range []struct {
		at      time.Duration
		blocked bool
		until   time.Duration
	}{
		{2 * time.Minute, true, 10 * time.Minute},
		{10*time.Minute - time.Nanosecond, true, 10 * time.Minute},
		{10 * time.Minute, false, 0}, // the first failure left the window
		{12*time.Minute + time.Second, false, 0},
	} {
		u, b := blocked(c.at)
		if b != c.blocked || (b && !u.Equal(at(c.until))) {
			t.Errorf("at +%v: blocked %v until %v, want %v until +%v", c.at, b, u, c.blocked, c.until)
		}
	}
	if _, b, _ := m.Blocked(ctx, "other", at(2*time.Minute)); b {
		t.Error("keys are not separate")
	}
	m.Failed(ctx, "k", at(11*time.Minute))
	m.Reset(ctx, "k")
	if _, b := blocked(11 * time.Minute); b {
		t.Error("blocked after Reset")
	}
}

// TestSecureCookie: with an https base URL the cookies are Secure.
func TestSecureCookie(t *testing.T) {
	t.Parallel()
	h := setup(t)
	secret := make([]byte, oauth.SecretSize)
	rand.Read(secret)
	srv, err := oauth.New(oauth.Config{Store: h.Store, Clock: h.Clock.Now, BaseURL: "https://ams.example", Secret: secret,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	srv.Register(mux)
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest("GET", "https://ams.example/login", nil))
	lf := findForm(t, &page{Response: w.Result(), Body: w.Body.String()}, "/login")
	lf.Values.Set("email", "ann@example.com")
	lf.Values.Set("password", testPassword)
	req := httptest.NewRequest("POST", "https://ams.example/login", strings.NewReader(lf.Values.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for _, c := range w.Result().Cookies() {
		if !c.Secure {
			t.Errorf("cookie %s not Secure", c.Name)
		}
		req.AddCookie(c)
	}
	w = httptest.NewRecorder()
	mux.ServeHTTP(w, req)
	if w.Code != http.StatusSeeOther {
		t.Fatalf("login: %d %s", w.Code, w.Body)
	}
	cs := w.Result().Cookies()
	if len(cs) != 1 || cs[0].Name != oauth.SessionCookie || !cs[0].Secure || !cs[0].HttpOnly || cs[0].SameSite != http.SameSiteLaxMode {
		t.Errorf("session cookie %+v", cs)
	}
}

// TestReturnTo: login returns only to paths of this site.
func TestReturnTo(t *testing.T) {
	t.Parallel()
	h := setup(t)
	for ret, want := range map[string]string{
		"/oauth/authorize?client_id=x": "/oauth/authorize?client_id=x",
		"https://evil.example/":        "/login",
		"//evil.example/":              "/login",
		"/\\evil.example/":             "/login",
		"javascript:alert(1)":          "/login",
		"":                             "/login",
	} {
		b := h.newBrowser()
		p := h.get(t, b, "/login?return_to="+url.QueryEscape(ret))
		f := findForm(t, p, "/login")
		f.Values.Set("email", "ann@example.com")
		f.Values.Set("password", testPassword)
		f.Values.Set("return_to", ret) // as an attacker would post it
		b.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		p = h.post(t, b, "/login", f.Values)
		if p.StatusCode != http.StatusSeeOther || p.Header.Get("Location") != want {
			t.Errorf("return_to %q: %d Location %q, want %q", ret, p.StatusCode, p.Header.Get("Location"), want)
		}
	}
}
