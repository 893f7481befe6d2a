package pages_test

import (
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/clientaddr"
	"github.com/amsdev/ams/internal/testing/amstest"
	"github.com/amsdev/ams/oauth"
	"github.com/amsdev/ams/password"
	"golang.org/x/net/html"
)

// signUp creates an account through the sign-up page and returns the page
// it ends on ("Check your e-mail"; nobody is signed in).
func signUp(b *browser, email, pw string) *page {
	b.t.Helper()
	p := b.get("/signup")
	p.mustStatus(http.StatusOK)
	return b.submit(p, "/signup", url.Values{"email": {email}, "password": {pw}, "password_confirm": {pw}, "timezone": {"Europe/Berlin"}})
}

// signUpAndIn signs up, then signs in with the new password, and returns
// the account page.
func signUpAndIn(b *browser, email, pw string) *page {
	b.t.Helper()
	p := signUp(b, email, pw)
	p.mustStatus(http.StatusOK)
	p.mustContain("Check your e-mail")
	return b.signIn(email, pw)
}

// newKey creates a key on the keys page and returns the page that shows it.
func newKey(b *browser, name string, perms ...string) *page {
	b.t.Helper()
	p := b.get("/account/keys")
	return b.submit(p, "/account/keys", url.Values{"name": {name}, "permissions": perms})
}

// shownKey is the key in the read-only field of the page that shows a new key.
func shownKey(t *testing.T, p *page) string {
	t.Helper()
	in := p.byID("new-key")
	if in == nil {
		t.Fatalf("no key shown on %s (status %d):\n%s", p.url, p.status, p.text())
	}
	if !hasAttr(in, "readonly") {
		t.Error("the key's field is not read-only")
	}
	return attr(in, "value")
}

func apiStatus(t *testing.T, e *env, key string) int {
	t.Helper()
	return e.f.Do("GET", "/v1/assistants", key, "").Status
}

// The whole journey: sign up, wait on the waitlist (keys refused), get
// approved, create a key that works, see it once, revoke it and see it
// refused.
func TestSignUpWaitlistKeyJourney(t *testing.T) {
	e := newEnv(t)
	b := e.browser()

	p := signUpAndIn(b, "Zoe@Example.com", "correct horse battery")
	p.mustStatus(http.StatusOK)
	if p.url.Path != "/account" {
		t.Fatalf("sign-up ended on %s", p.url)
	}
	p.mustContain("zoe@example.com", "On the waitlist", "early-access waitlist", "Verify your e-mail address.", "Unverified")
	u, err := e.f.Store.FindUserByEmail(t.Context(), "zoe@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if u.Approved() || u.Admin || u.Timezone != "Europe/Berlin" || u.Plan != ams.PlanStandard {
		t.Fatalf("new account: approved %v admin %v tz %s plan %s", u.Approved(), u.Admin, u.Timezone, u.Plan)
	}
	if !password.Check(u.PasswordHash, "correct horse battery") {
		t.Fatal("the password was not stored")
	}

	// On the waitlist the keys page explains, offers no form, and a post
	// is refused.
	p = b.get("/account/keys")
	p.mustStatus(http.StatusOK)
	p.mustContain("Your account is on the early-access waitlist", "create API keys once your account is approved")
	if p.form("/account/keys") != nil {
		t.Fatal("the keys page offers the create form on the waitlist")
	}
	// (the header's sign-out form carries the page's CSRF token)
	tok := formValues(p.form("/logout")).Get("csrf_token")
	p = b.post("/account/keys", url.Values{"csrf_token": {tok}, "name": {"early"}, "permissions": {"read"}})
	p.mustStatus(http.StatusForbidden)
	p.mustContain("on the early-access waitlist")
	if keys, _ := e.f.Store.ListKeys(t.Context(), u.ID); len(keys) != 0 {
		t.Fatalf("a key was created on the waitlist: %v", keys)
	}

	// Approved (as `ams users approve` does), the form appears.
	now := e.f.Clock.Now()
	if _, err := e.f.Store.UpdateUser(t.Context(), u.ID, ams.UserUpdate{ApprovedAt: &now}, now); err != nil {
		t.Fatal(err)
	}
	b.get("/account").mustContain("Approved")
	p = newKey(b, "ci runner", "read", "messages")
	p.mustStatus(http.StatusOK)
	if !strings.HasPrefix(p.url.Path, "/account/keys/key_") || !strings.HasSuffix(p.url.Path, "/created") {
		t.Fatalf("created key shown at %s", p.url)
	}
	if cc := p.header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control %q on the page that shows the key", cc)
	}
	secret := shownKey(t, p)
	if !strings.HasPrefix(secret, ams.PrefixSecretKey) {
		t.Fatalf("shown key %q", secret)
	}
	p.mustContain("shown only this once", "read, messages", "Copy the key now")
	// Shown once: a reload no longer shows it.
	again := b.get(p.url.Path)
	again.mustStatus(http.StatusOK)
	again.mustContain("cannot be shown again")
	if strings.Contains(again.body, secret) {
		t.Fatal("the key is shown again on reload")
	}
	// Nor does the list.
	p = b.get("/account/keys")
	if strings.Contains(p.body, secret) {
		t.Fatal("the keys page shows the secret")
	}
	p.mustContain("ci runner", ams.KeyHint(secret), "read, messages", "Active", "never")

	// The key works.
	if st := apiStatus(t, e, secret); st != http.StatusOK {
		t.Fatalf("GET /v1/assistants with the new key: %d", st)
	}
	e.f.Clock.Add(2 * time.Minute)
	p = b.get("/account/keys")
	p.mustContain("ci runner", "2 minutes ago") // last used

	// Revoke, confirmed by the second button.
	keys, _ := e.f.Store.ListKeys(t.Context(), u.ID)
	p = b.submit(p, "/account/keys/"+keys[0].ID+"/revoke", nil)
	p.mustStatus(http.StatusOK)
	if p.url.Path != "/account/keys" {
		t.Fatalf("revoke ended on %s", p.url)
	}
	p.mustContain("was revoked", "Revoked")
	if p.form("/account/keys/"+keys[0].ID+"/revoke") != nil {
		t.Error("a revoked key still has a revoke button")
	}
	if st := apiStatus(t, e, secret); st != http.StatusUnauthorized {
		t.Fatalf("GET /v1/assistants with the revoked key: %d", st)
	}
}

func TestKeyFormChoices(t *testing.T) {
	e := newEnv(t)
	e.user("kim@example.com", "kims password 1", true, false)
	b := e.browser()
	b.signIn("kim@example.com", "kims password 1")

	// Errors are summarised and the form keeps what was typed.
	p := b.get("/account/keys")
	p = b.submit(p, "/account/keys", url.Values{"name": {"half done"}, "expires": {"date"}, "expires_on": {"2020-01-01"}})
	p.mustStatus(http.StatusUnprocessableEntity)
	p.mustContain("There is a problem", "Choose at least one permission.", "The expiry date must be in the future")
	if v := attr(p.byID("name"), "value"); v != "half done" {
		t.Errorf("name field after an error: %q", v)
	}
	p = b.submit(p, "/account/keys", url.Values{"name": {""}, "permissions": {"read"}})
	p.mustStatus(http.StatusUnprocessableEntity)
	p.mustContain("Enter a name for the key")
	if !hasAttr(p.byID("perm-read"), "checked") {
		t.Error("the checked permission was lost")
	}

	// An expiry date: the key works through that day in the user's zone.
	p = b.submit(p, "/account/keys", url.Values{"name": {"until december"}, "permissions": {"write", "admin"},
		"expires": {"date"}, "expires_on": {"2026-12-31"}})
	secret := shownKey(t, p)
	u, _ := e.f.Store.FindUserByEmail(t.Context(), "kim@example.com")
	keys, _ := e.f.Store.ListKeys(t.Context(), u.ID)
	if len(keys) != 1 || keys[0].ExpiresAt == nil || !keys[0].ExpiresAt.Equal(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)) ||
		keys[0].Permissions.String() != "write,admin" {
		t.Fatalf("stored key: %+v", keys[0])
	}
	b.get("/account/keys").mustContain("until december", "1 Jan 2027 00:00 UTC")
	if st := apiStatus(t, e, secret); st != http.StatusOK {
		t.Fatalf("key before expiry: %d", st)
	}

	// A key older than 90 days gets the rotation reminder.
	old := e.f.Clock.Now().Add(-91 * 24 * time.Hour)
	_, k := ams.NewAPIKey(u.ID, "old faithful", ams.Permissions{ams.PermRead}, old, nil)
	if err := e.f.Store.CreateKey(t.Context(), k); err != nil {
		t.Fatal(err)
	}
	p = b.get("/account/keys")
	p.mustContain("old faithful", "Older than 90 days: rotate it", "Rotation is recommended every 90 days")
	if n := strings.Count(p.text(), "Older than 90 days"); n != 1 {
		t.Errorf("%d rotation reminders, want 1 (only the old key)", n)
	}
}

func TestCSRF(t *testing.T) {
	e := newEnv(t)
	u := e.user("ann2@example.com", "anns password 1", true, false)
	b := e.browser()
	p := b.signIn("ann2@example.com", "anns password 1")
	tok := formValues(p.form("/logout")).Get("csrf_token")
	if tok == "" {
		t.Fatal("no CSRF token in the page")
	}
	form := url.Values{"name": {"sneaky"}, "permissions": {"admin"}}

	// No token, a wrong one, or the right one from another site: 403, and
	// nothing is created.
	p = b.post("/account/keys", form)
	p.mustStatus(http.StatusForbidden)
	p.mustContain("nothing was changed")
	form.Set("csrf_token", tok+"x")
	b.post("/account/keys", form).mustStatus(http.StatusForbidden)
	form.Set("csrf_token", tok)
	evil := *b
	evil.origin = "https://evil.example"
	evil.post("/account/keys", form).mustStatus(http.StatusForbidden)
	// The token of another session does not do either.
	other := e.browser()
	e.user("bob2@example.com", "bobs password 1", true, false)
	op := other.signIn("bob2@example.com", "bobs password 1")
	form.Set("csrf_token", formValues(op.form("/logout")).Get("csrf_token"))
	b.post("/account/keys", form).mustStatus(http.StatusForbidden)
	if keys, _ := e.f.Store.ListKeys(t.Context(), u.ID); len(keys) != 0 {
		t.Fatalf("keys created without a valid token: %d", len(keys))
	}
	// A password change without the token changes nothing.
	b.post("/account/password", url.Values{"current_password": {"anns password 1"}, "new_password": {"new password 12"},
		"new_password_confirm": {"new password 12"}}).mustStatus(http.StatusForbidden)
	got, _ := e.f.Store.FindUser(t.Context(), u.ID)
	if !password.Check(got.PasswordHash, "anns password 1") {
		t.Fatal("the password changed without a CSRF token")
	}
	// With the token it works (the check is not refusing everything).
	form.Set("csrf_token", tok)
	b.post("/account/keys", form).mustStatus(http.StatusOK)
	if keys, _ := e.f.Store.ListKeys(t.Context(), u.ID); len(keys) != 1 {
		t.Fatalf("%d keys after a valid post", len(keys))
	}
}

func TestSignedOut(t *testing.T) {
	e := newEnv(t)
	b := e.browser()
	for _, path := range []string{"/account", "/account/keys", "/account/password", "/account/admin/waitlist"} {
		p := b.get(path)
		if len(p.redirects) == 0 || p.redirects[0] != "/login?return_to="+url.QueryEscape(path) {
			t.Errorf("GET %s redirected through %v", path, p.redirects)
		}
		p.mustStatus(http.StatusOK)
		if p.form("/login") == nil {
			t.Errorf("GET %s did not end on the sign-in form", path)
		}
	}
	// A post without a session changes nothing and goes to sign in.
	p := b.post("/account/keys", url.Values{"name": {"x"}, "permissions": {"read"}})
	if p.url.Path != "/login" {
		t.Errorf("POST without a session ended on %s", p.url)
	}
	if keys, _ := e.f.Store.ListKeys(t.Context(), e.f.User.ID); len(keys) != 1 { // the fixture's own key
		t.Errorf("%d keys", len(keys))
	}
	// / goes to the account pages; sign-in returns there.
	p = b.get("/")
	if p.url.Path != "/login" || p.url.Query().Get("return_to") != "/account" {
		t.Errorf("GET / ended on %s", p.url)
	}
	// Sign out ends the session.
	e.user("out@example.com", "outs password 1", true, false)
	p = b.signIn("out@example.com", "outs password 1")
	b.submit(p, "/logout", nil)
	if p := b.get("/account/keys"); p.url.Path != "/login" {
		t.Errorf("after sign-out /account/keys ended on %s", p.url)
	}
}

func TestRevokeAnotherUsersKey(t *testing.T) {
	e := newEnv(t)
	victim := e.f.User // the fixture's account and its key
	keys, _ := e.f.Store.ListKeys(t.Context(), victim.ID)
	e.user("mallory@example.com", "mallorys pass 1", true, false)
	b := e.browser()
	p := b.signIn("mallory@example.com", "mallorys pass 1")
	tok := formValues(p.form("/logout")).Get("csrf_token")
	p = b.post("/account/keys/"+keys[0].ID+"/revoke", url.Values{"csrf_token": {tok}})
	p.mustStatus(http.StatusNotFound)
	k, _ := e.f.Store.FindKey(t.Context(), keys[0].ID)
	if k.RevokedAt != nil {
		t.Fatal("another user's key was revoked")
	}
	if st := apiStatus(t, e, e.f.Key); st != http.StatusOK {
		t.Fatalf("the victim's key: %d", st)
	}
	// Nor is another user's new key shown.
	b.get("/account/keys/" + keys[0].ID + "/created").mustStatus(http.StatusNotFound)
}

func TestPasswordChange(t *testing.T) {
	e := newEnv(t)
	e.user("pat@example.com", "old password 1", true, false)
	b := e.browser()
	p := b.signIn("pat@example.com", "old password 1")
	// Another browser signed in with the old password.
	elsewhere := e.browser()
	elsewhere.signIn("pat@example.com", "old password 1")
	p = b.get("/account/password")
	p = b.submit(p, "/account/password", url.Values{"current_password": {"wrong password"},
		"new_password": {"new password 12"}, "new_password_confirm": {"new password 12"}})
	p.mustStatus(http.StatusUnprocessableEntity)
	p.mustContain("The current password is not correct.")
	if attr(p.byID("current_password"), "aria-invalid") != "true" {
		t.Error("the wrong field is not marked invalid")
	}
	p = b.submit(p, "/account/password", url.Values{"current_password": {"old password 1"},
		"new_password": {"short"}, "new_password_confirm": {"short"}})
	p.mustStatus(http.StatusUnprocessableEntity)
	p.mustContain("at least 10 characters")
	p = b.submit(p, "/account/password", url.Values{"current_password": {"old password 1"},
		"new_password": {"new password 12"}, "new_password_confirm": {"new password 13"}})
	p.mustStatus(http.StatusUnprocessableEntity)
	p.mustContain("not the same")
	u, _ := e.f.Store.FindUserByEmail(t.Context(), "pat@example.com")
	if !password.Check(u.PasswordHash, "old password 1") {
		t.Fatal("a refused change changed the password")
	}

	p = b.submit(p, "/account/password", url.Values{"current_password": {"old password 1"},
		"new_password": {"new password 12"}, "new_password_confirm": {"new password 12"}})
	p.mustStatus(http.StatusOK)
	p.mustContain("Your password was changed.")
	// This browser stays signed in; the other one is signed out.
	b.get("/account").mustStatus(http.StatusOK)
	if ep := elsewhere.get("/account"); ep.url.Path != "/login" {
		t.Fatalf("the other browser still sees %s after the password change", ep.url.Path)
	}
	e.browser().signIn("pat@example.com", "new password 12")
	fresh := e.browser()
	lp := fresh.get("/login")
	lp = fresh.submit(lp, "/login", url.Values{"email": {"pat@example.com"}, "password": {"old password 1"}})
	lp.mustContain("not correct")
}

func TestSignUpErrors(t *testing.T) {
	e := newEnv(t)
	b := e.browser()
	p := b.get("/signup")
	if sel := formValues(p.form("/signup")).Get("timezone"); sel != "UTC" {
		t.Errorf("time zone defaults to %q", sel)
	}
	p = b.submit(p, "/signup", url.Values{"email": {"not-an-address"}, "password": {"short"}, "password_confirm": {"short"}})
	p.mustStatus(http.StatusUnprocessableEntity)
	p.mustContain("There is a problem", "Enter an e-mail address like name@example.com.", "at least 10 characters")
	if attr(p.byID("email"), "value") != "not-an-address" {
		t.Error("the typed address was not kept")
	}
	p = b.submit(p, "/signup", url.Values{"email": {"ok@example.com"}, "password": {"long enough 1"}, "password_confirm": {"long enough 2"},
		"timezone": {"Mars/Olympus"}})
	p.mustStatus(http.StatusUnprocessableEntity)
	p.mustContain("not the same", "Choose a time zone from the list.")
	// A taken address (any case) gets "check your e-mail", as a free one
	// does (TestSignUpEnumeration compares them).
	p = b.submit(p, "/signup", url.Values{"email": {"ANN@example.com"}, "password": {"long enough 1"}, "password_confirm": {"long enough 1"}})
	p.mustStatus(http.StatusOK)
	p.mustContain("Check your e-mail")
	// Nothing was created, and nobody is signed in.
	if _, err := e.f.Store.FindUserByEmail(t.Context(), "ok@example.com"); !ams.IsNotFound(err) {
		t.Fatalf("account created by a refused sign-up: %v", err)
	}
	if p := b.get("/account"); p.url.Path != "/login" {
		t.Fatal("signed in after a refused sign-up")
	}
	// A signed-in user is sent on from /signup.
	signUpAndIn(b, "new@example.com", "long enough 1")
	if p := b.get("/signup"); p.url.Path != "/account" {
		t.Errorf("signed in, /signup ended on %s", p.url)
	}
}

func TestWaitlistAdminPage(t *testing.T) {
	e := newEnv(t)
	e.user("admin@example.com", "admins password", true, true)
	e.user("plain@example.com", "plains password", true, false)
	signUp(e.browser(), "waiting@example.com", "waiting password")

	plain := e.browser()
	plain.signIn("plain@example.com", "plains password")
	plain.get("/account/admin/waitlist").mustStatus(http.StatusForbidden)
	waiting, _ := e.f.Store.FindUserByEmail(t.Context(), "waiting@example.com")
	p := plain.get("/account")
	tok := formValues(p.form("/logout")).Get("csrf_token")
	plain.post("/account/admin/waitlist/"+waiting.ID+"/approve", url.Values{"csrf_token": {tok}}).mustStatus(http.StatusForbidden)
	if u, _ := e.f.Store.FindUser(t.Context(), waiting.ID); u.Approved() {
		t.Fatal("a non-admin approved an account")
	}

	admin := e.browser()
	admin.signIn("admin@example.com", "admins password")
	p = admin.get("/account/admin/waitlist")
	p.mustStatus(http.StatusOK)
	p.mustContain("waiting@example.com Unverified")
	p.mustNotContain("plain@example.com")
	p = admin.submit(p, "/account/admin/waitlist/"+waiting.ID+"/approve", nil)
	p.mustStatus(http.StatusOK)
	p.mustContain("waiting@example.com was approved")
	if p.form("/account/admin/waitlist/"+waiting.ID+"/approve") != nil {
		t.Error("the approved account is still listed")
	}
	if u, _ := e.f.Store.FindUser(t.Context(), waiting.ID); !u.Approved() {
		t.Fatal("not approved")
	}
}

func TestNamesAreEscaped(t *testing.T) {
	e := newEnv(t)
	e.user("esc@example.com", "escs password 1", true, false)
	b := e.browser()
	b.signIn("esc@example.com", "escs password 1")
	name := `<script>alert("x")</script>`
	p := newKey(b, name, "read")
	p.mustContain(name) // shown as text...
	if strings.Contains(p.body, name) {
		t.Fatal("the key's name is in the page unescaped")
	}
	p = b.get("/account/keys")
	p.mustContain(name)
	if strings.Contains(p.body, name) || !strings.Contains(p.body, "&lt;script&gt;") {
		t.Fatal("the key's name is in the list unescaped")
	}
}

func TestPageHeaders(t *testing.T) {
	e := newEnv(t)
	e.user("hdr@example.com", "hdrs password 1", true, false)
	b := e.browser()
	p := b.signIn("hdr@example.com", "hdrs password 1")
	for k, want := range map[string]string{"Cache-Control": "no-store", "X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff"} {
		if got := p.header.Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
	if csp := p.header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("CSP %q", csp)
	}
	// The stylesheet the page links is served, cacheable.
	var css string
	walk(p.doc, func(n *html.Node) bool {
		if n.Data == "link" && attr(n, "rel") == "stylesheet" {
			css = attr(n, "href")
		}
		return true
	})
	s := b.get(css)
	s.mustStatus(http.StatusOK)
	if !strings.HasPrefix(s.header.Get("Content-Type"), "text/css") || !strings.Contains(s.header.Get("Cache-Control"), "max-age") {
		t.Errorf("stylesheet %s: %s, %s", css, s.header.Get("Content-Type"), s.header.Get("Cache-Control"))
	}
	// The navigation marks the current page; unknown pages are 404 pages.
	p = b.get("/account/keys")
	cur := ""
	walk(p.doc, func(n *html.Node) bool {
		if n.Data == "a" && attr(n, "aria-current") == "page" {
			cur = attr(n, "href")
		}
		return true
	})
	if cur != "/account/keys" {
		t.Errorf("current nav entry %q", cur)
	}
	b.get("/account/keys/key_nope/created").mustStatus(http.StatusNotFound)
}

// TestSignUpThrottled: at most five accounts from one address within the
// window; the sixth is refused (429) and not created, and the window's
// end lets sign-ups through again.
func TestSignUpThrottled(t *testing.T) {
	e := newEnv(t)
	for i := range oauth.MaxLoginFailures {
		p := signUp(e.browser(), fmt.Sprintf("user%d@example.com", i), "long enough 1")
		p.mustStatus(http.StatusOK)
	}
	p := signUp(e.browser(), "one-too-many@example.com", "long enough 1")
	p.mustStatus(http.StatusTooManyRequests)
	p.mustContain("Too many accounts were created from your network recently")
	if _, err := e.f.Store.FindUserByEmail(t.Context(), "one-too-many@example.com"); !ams.IsNotFound(err) {
		t.Fatalf("the refused sign-up made an account: %v", err)
	}
	e.f.Clock.Add(oauth.LoginFailureWindow + time.Second)
	signUp(e.browser(), "later@example.com", "long enough 1").mustStatus(http.StatusOK)
}

// TestFormFieldNotText: a form field with a NUL character or invalid
// UTF-8 (which no browser sends, but a script may) gets the form's page
// again, 400, with a form error naming the field, and nothing is stored;
// a page id that is not text is the page that does not exist (404).
func TestFormFieldNotText(t *testing.T) {
	e := newEnv(t)
	u := e.user("pat@example.com", "long enough 1", true, false)
	b := e.browser()
	b.signIn("pat@example.com", "long enough 1")
	refused := func(p *page, field, action string) {
		t.Helper()
		p.mustStatus(http.StatusBadRequest)
		p.mustContain("There is a problem", "The field “"+field+"” holds a character that cannot be stored", "nothing was changed")
		found := false
		walk(p.doc, func(n *html.Node) bool {
			if n.Data == "a" && attr(n, "href") == "#"+field {
				found = true
			}
			return !found
		})
		if !found {
			t.Errorf("no error linked to #%s", field)
		}
		if p.form(action) == nil {
			t.Errorf("the form %s is not on the page again:\n%s", action, p.text())
		}
	}

	for _, name := range []string{"a\x00b", "a\xffb", "\xc3\x28"} {
		p := b.submit(b.get("/account/keys"), "/account/keys", url.Values{"name": {name}, "permissions": {"read"}})
		refused(p, "name", "/account/keys")
	}
	if keys, err := e.f.Store.ListKeys(t.Context(), u.ID); err != nil || len(keys) != 0 {
		t.Fatalf("keys after refused forms: %d, %v", len(keys), err)
	}
	// A field name that is not text: an error of the whole form.
	p := b.post("/account/keys", url.Values{"csrf_token": formValues(b.get("/account/keys").form("/account/keys"))["csrf_token"],
		"na\xffme": {"x"}, "permissions": {"read"}})
	p.mustStatus(http.StatusBadRequest)
	p.mustContain("The name of a field of the form holds a character that cannot be stored")

	p = b.submit(b.get("/account/webhooks/new"), "/account/webhooks", url.Values{"url": {"https://example.com/\xff"}, "events": {"task.created"}})
	refused(p, "url", "/account/webhooks")
	if page, err := e.f.Store.ListWebhooks(t.Context(), u.ID, ams.ListParams{Limit: 10}); err != nil || len(page.Data) != 0 {
		t.Fatalf("webhooks after a refused form: %v", err)
	}

	// The sign-up form, signed out.
	anon := e.browser()
	p = anon.submit(anon.get("/signup"), "/signup", url.Values{"email": {"new\x00@example.com"}, "password": {"long enough 1"}, "password_confirm": {"long enough 1"}})
	refused(p, "email", "/signup")
	for _, email := range []string{"new\x00@example.com", "new@example.com"} {
		if _, err := e.f.Store.FindUserByEmail(t.Context(), email); !ams.IsNotFound(err) {
			t.Fatalf("account %q created by a refused sign-up: %v", email, err)
		}
	}

	// Page ids: 404, the page that does not exist, on GET and on a form.
	for _, path := range []string{"/account/webhooks/%FF", "/account/webhooks/wh_%00/edit", "/account/apps/%00"} {
		b.get(path).mustStatus(http.StatusNotFound)
	}
	csrf := formValues(b.get("/account/keys").form("/account/keys"))["csrf_token"]
	p = b.post("/account/keys/key_%00/revoke", url.Values{"csrf_token": csrf})
	p.mustStatus(http.StatusNotFound)
	p.mustContain("Not found")
}

// TestSignUpThrottledPerNetwork (issue 26, point 7): behind a trusted
// proxy, sign-ups are counted per /64 for IPv6 clients, so rotating
// addresses within one's /64 does not escape the cap, while another /64
// is not affected; an IPv4 client is counted per address.
func TestSignUpThrottledPerNetwork(t *testing.T) {
	e := newEnv(t, amstest.WithTrustedProxies(clientaddr.Proxies{netip.MustParsePrefix("127.0.0.0/8")}),
		amstest.WithClientAddressHeader("X-Forwarded-For"))
	from := func(addr string) *browser {
		b := e.browser()
		b.header = http.Header{"X-Forwarded-For": {addr}}
		return b
	}
	for i := range oauth.MaxLoginFailures {
		signUp(from(fmt.Sprintf("2001:db8:1:2::%x", i+1)), fmt.Sprintf("v6-%d@example.com", i), "long enough 1").mustStatus(http.StatusOK)
	}
	p := signUp(from("2001:db8:1:2:ffff:ffff:ffff:ffff"), "rotated@example.com", "long enough 1")
	p.mustStatus(http.StatusTooManyRequests)
	p.mustContain("Too many accounts were created from your network recently")
	if _, err := e.f.Store.FindUserByEmail(t.Context(), "rotated@example.com"); !ams.IsNotFound(err) {
		t.Fatalf("the refused sign-up made an account: %v", err)
	}
	signUp(from("2001:db8:1:3::1"), "other-net@example.com", "long enough 1").mustStatus(http.StatusOK)

	for i := range oauth.MaxLoginFailures {
		signUp(from("203.0.113.7"), fmt.Sprintf("v4-%d@example.com", i), "long enough 1").mustStatus(http.StatusOK)
	}
	signUp(from("203.0.113.7"), "v4-more@example.com", "long enough 1").mustStatus(http.StatusTooManyRequests)
	signUp(from("203.0.113.8"), "v4-neighbour@example.com", "long enough 1").mustStatus(http.StatusOK)
}
