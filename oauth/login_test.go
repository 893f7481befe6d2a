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

// TestLoginThrottle: 5 failures of one account from one client address
// within 15 minutes, then 429 for that pair until the window has passed on
// the service clock; another account from the same address is not
// blocked by them.
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
	// The same client address with another account: not blocked (it is
	// the per-address rule's 20 failures that block an address).
	other := h.NewUser("other@example.com", ams.PlanStandard)
	if p := h.login(t, h.newBrowser(), other.Email, "whatever"); p.StatusCode != http.StatusOK {
		t.Errorf("same address, other account: %d, want 200 (the form again)", p.StatusCode)
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
	recent := func(key string, since time.Duration, n int) []time.Time {
		t.Helper()
		ts, err := m.Recent(ctx, key, at(since), n)
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	for _, d := range []time.Duration{0, time.Minute, 2 * time.Minute, 3 * time.Minute} {
		m.Failed(ctx, "k", at(d))
	}
	// Newest first, after since (exclusive), at most n, and at most keep
	// (3) are kept.
	if ts := recent("k", -time.Hour, 10); len(ts) != 3 || !ts[0].Equal(at(3*time.Minute)) || !ts[2].Equal(at(time.Minute)) {
		t.Errorf("Recent after 4 failures, keep 3: %v", ts)
	}
	if ts := recent("k", 2*time.Minute, 10); len(ts) != 1 || !ts[0].Equal(at(3*time.Minute)) {
		t.Errorf("Recent since +2m: %v, want the +3m failure only", ts)
	}
	if ts := recent("k", -time.Hour, 2); len(ts) != 2 || !ts[1].Equal(at(2*time.Minute)) {
		t.Errorf("Recent n=2: %v", ts)
	}
	if ts := recent("other", -time.Hour, 10); len(ts) != 0 {
		t.Errorf("keys are not separate: %v", ts)
	}
	// A clock that steps back keeps the times in order.
	m.Failed(ctx, "k", at(150*time.Second))
	if ts := recent("k", -time.Hour, 10); len(ts) != 3 || !ts[0].Equal(at(3*time.Minute)) || !ts[1].Equal(at(150*time.Second)) {
		t.Errorf("after a failure in the past: %v", ts)
	}
	// Failures out of retention are forgotten when the key fails again.
	m.Failed(ctx, "k", at(12*time.Minute+30*time.Second))
	if ts := recent("k", -time.Hour, 10); len(ts) != 2 {
		t.Errorf("after retention: %v, want +3m and +12m30s", ts)
	}
	m.Reset(ctx, "k")
	if ts := recent("k", -time.Hour, 10); len(ts) != 0 {
		t.Errorf("after Reset: %v", ts)
	}
}

// TestAccountDelay: the slowdown's minimum interval by failures.
func TestAccountDelay(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		n    int
		want time.Duration
	}{{0, 0}, {49, 0}, {50, 2 * time.Second}, {74, 2 * time.Second}, {75, 4 * time.Second}, {100, 8 * time.Second},
		{125, 16 * time.Second}, {150, 32 * time.Second}, {175, time.Minute}, {oauth.ThrottleKeep, time.Minute}, {1 << 30, time.Minute}} {
		if got := oauth.AccountDelay(c.n); got != c.want {
			t.Errorf("AccountDelay(%d) = %v, want %v", c.n, got, c.want)
		}
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
	// The session cookie and the device cookie (which exempts this
	// browser from the account's slowdown), both Secure.
	cs := w.Result().Cookies()
	if len(cs) != 2 || cs[0].Name != oauth.SessionCookie || cs[1].Name != "ams_device" || cs[1].Path != "/login" {
		t.Errorf("cookies %+v", cs)
	}
	for _, c := range cs {
		if !c.Secure || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode {
			t.Errorf("cookie %+v", c)
		}
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

// TestLoginLinksToSignup: the sign-in page links to the sign-up page
// (which links back), so a visitor without an account finds it.
func TestLoginLinksToSignup(t *testing.T) {
	t.Parallel()
	h := setup(t)
	p := h.get(t, h.newBrowser(), "/login")
	if p.StatusCode != http.StatusOK || !strings.Contains(p.Body, `<a href="/signup">Create one</a>`) {
		t.Fatalf("login page: %d, no link to /signup:\n%s", p.StatusCode, p.Body)
	}
}
