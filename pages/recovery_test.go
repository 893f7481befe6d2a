package pages_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/clientaddr"
	"github.com/amsdev/ams/internal/testing/amstest"
	"github.com/amsdev/ams/internal/testing/smtptest"
	"github.com/amsdev/ams/mail"
	"github.com/amsdev/ams/password"
)

// inbox sends the queued e-mails through the real SMTP client to a test
// SMTP server, as ams serve --smtp-url does.
type inbox struct {
	t     *testing.T
	e     *env
	smtpd *smtptest.Server
	w     *mail.Worker
	seen  int
}

// mailed is one e-mail as the SMTP server received it.
type mailed struct {
	To, Subject, Text string
}

func newInbox(e *env) *inbox {
	e.t.Helper()
	smtpd := smtptest.Start(e.t)
	sender, err := mail.NewSMTP(smtpd.URL(), mail.DefaultFrom)
	if err != nil {
		e.t.Fatal(err)
	}
	return &inbox{t: e.t, e: e, smtpd: smtpd,
		w: &mail.Worker{Queue: e.f.Data, Sender: sender, Clock: e.f.Clock.Now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}}
}

// take sends what is queued and returns the e-mails mailed since the
// last call.
func (in *inbox) take() []mailed {
	in.t.Helper()
	if _, err := in.w.RunOnce(in.t.Context()); err != nil {
		in.t.Fatal(err)
	}
	msgs := in.smtpd.Messages()
	var out []mailed
	for _, m := range msgs[in.seen:] {
		out = append(out, mailed{To: strings.Join(m.To, ","), Subject: m.Parsed(in.t).Header.Get("Subject"), Text: m.Text(in.t)})
	}
	in.seen = len(msgs)
	return out
}

// one returns the only e-mail mailed since the last call, to to.
func (in *inbox) one(to string) mailed {
	in.t.Helper()
	got := in.take()
	if len(got) != 1 || got[0].To != to {
		in.t.Fatalf("want one e-mail to %s, got %+v", to, got)
	}
	return got[0]
}

// link returns the path of the link of the e-mail that starts with the
// server's URL and prefix (such as /reset-password/).
func (in *inbox) link(m mailed, prefix string) string {
	in.t.Helper()
	re := regexp.MustCompile(regexp.QuoteMeta(in.e.f.Server.URL+prefix) + `[A-Za-z0-9]+`)
	l := re.FindString(m.Text)
	if l == "" {
		in.t.Fatalf("no %s link in the e-mail %q:\n%s", prefix, m.Subject, m.Text)
	}
	return strings.TrimPrefix(l, in.e.f.Server.URL)
}

func (e *env) password(email string) string {
	e.t.Helper()
	u, err := e.f.Store.FindUserByEmail(e.t.Context(), email)
	if err != nil {
		e.t.Fatal(err)
	}
	return u.PasswordHash
}

// TestPasswordReset: "Forgot password?" on the sign-in page leads to the
// form; the e-mail, sent through SMTP, holds a link that sets a new
// password once, signs out every browser of the account, and is refused
// when reused, wrong, or an hour old.
func TestPasswordReset(t *testing.T) {
	e := newEnv(t)
	in := newInbox(e)
	e.user("pat@example.com", "old password 1", true, false)
	other := e.browser()
	other.signIn("pat@example.com", "old password 1")

	b := e.browser()
	login := b.get("/login?return_to=%2Faccount")
	if !strings.Contains(login.body, `<a href="/forgot-password">Forgot password?</a>`) || !strings.Contains(login.body, `href="/signup"`) {
		t.Fatalf("the sign-in page has no link to reset the password or sign up:\n%s", login.body)
	}
	p := b.get("/forgot-password")
	p.mustStatus(http.StatusOK)
	p.mustContain("Forgot your password?")
	p = b.submit(p, "/forgot-password", url.Values{"email": {" PAT@example.com "}})
	p.mustStatus(http.StatusOK)
	p.mustContain("Check your e-mail", "pat@example.com", "within an hour")

	m := in.one("pat@example.com")
	if m.Subject != "Reset your ams password" {
		t.Fatalf("subject %q", m.Subject)
	}
	link := in.link(m, "/reset-password/")
	secret := strings.TrimPrefix(link, "/reset-password/")
	// Stored hashed: the link's secret is in no row.
	if _, err := e.f.Store.FindAccountToken(t.Context(), secret, ams.TokenPasswordReset); !ams.IsNotFound(err) {
		t.Fatal("the token is stored as it is in the link")
	}

	// The form: wrong fields are shown, and the link stays usable.
	p = b.get(link)
	p.mustStatus(http.StatusOK)
	p.mustContain("Choose a new password")
	p = b.submit(p, link, url.Values{"new_password": {"short"}, "new_password_confirm": {"short"}})
	p.mustStatus(http.StatusUnprocessableEntity)
	p.mustContain("at least 10 characters")
	p = b.submit(p, link, url.Values{"new_password": {"a new password 2"}, "new_password_confirm": {"another one 2"}})
	p.mustStatus(http.StatusUnprocessableEntity)
	p.mustContain("not the same")
	if !password.Check(e.password("pat@example.com"), "old password 1") {
		t.Fatal("a refused form changed the password")
	}
	p = b.submit(p, link, url.Values{"new_password": {"a new password 2"}, "new_password_confirm": {"a new password 2"}})
	p.mustStatus(http.StatusOK)
	p.mustContain("Your password was changed", "signed out")
	if !password.Check(e.password("pat@example.com"), "a new password 2") {
		t.Fatal("the new password was not stored")
	}

	// The other browser was signed out; only the new password signs in.
	if p := other.get("/account"); p.url.Path != "/login" {
		t.Fatalf("a browser signed in before the reset still sees %s", p.url.Path)
	}
	fresh := e.browser()
	fresh.submit(fresh.get("/login"), "/login", url.Values{"email": {"pat@example.com"}, "password": {"old password 1"}}).mustContain("not correct")
	e.browser().signIn("pat@example.com", "a new password 2")

	// Used once: the link is refused (410), and sets nothing.
	p = b.get(link)
	p.mustStatus(http.StatusGone)
	p.mustContain("used already")
	tok := formValues(b.get("/forgot-password").form("/forgot-password")).Get("csrf_token")
	p = b.post(link, url.Values{"csrf_token": {tok}, "new_password": {"third password 3"}, "new_password_confirm": {"third password 3"}})
	p.mustStatus(http.StatusGone)
	if !password.Check(e.password("pat@example.com"), "a new password 2") {
		t.Fatal("a used link changed the password")
	}
	// A wrong token: 404. (Its last character changed: to "x", unless it
	// is "x" already, one secret in 62, which made the test fail then.)
	wrong := secret[:len(secret)-1] + "x"
	if wrong == secret {
		wrong = secret[:len(secret)-1] + "y"
	}
	p = b.get("/reset-password/" + wrong)
	p.mustStatus(http.StatusNotFound)
	p.mustContain("not valid")
	b.post("/reset-password/nope", url.Values{"csrf_token": {tok}, "new_password": {"third password 3"}, "new_password_confirm": {"third password 3"}}).
		mustStatus(http.StatusNotFound)

	// Expiry: a new link works until an hour has passed, not after.
	b.submit(b.get("/forgot-password"), "/forgot-password", url.Values{"email": {"pat@example.com"}}).mustStatus(http.StatusOK)
	late := in.link(in.one("pat@example.com"), "/reset-password/")
	e.f.Clock.Add(59 * time.Minute)
	b.get(late).mustStatus(http.StatusOK)
	form := b.get(late)
	e.f.Clock.Add(time.Minute)
	p = b.submit(form, late, url.Values{"new_password": {"third password 3"}, "new_password_confirm": {"third password 3"}})
	p.mustStatus(http.StatusGone)
	p.mustContain("expired")
	b.get(late).mustStatus(http.StatusGone)
	if !password.Check(e.password("pat@example.com"), "a new password 2") {
		t.Fatal("an expired link changed the password")
	}
}

// TestPasswordResetEnumeration: a reset asked for an address with an
// account and for one without gets the same status and the same page,
// byte for byte; only the first gets an e-mail. A malformed address is a
// form error whatever it is. At most three links an hour go to one
// account, with the same answer.
func TestPasswordResetEnumeration(t *testing.T) {
	e := newEnv(t)
	in := newInbox(e)
	e.user("known@example.com", "known password 1", true, false)
	ask := func(email string) *page {
		b := e.browser()
		return b.submit(b.get("/forgot-password"), "/forgot-password", url.Values{"email": {email}})
	}
	known, unknown := ask("known@example.com"), ask("unknown@example.com")
	if known.status != http.StatusOK || unknown.status != known.status {
		t.Fatalf("statuses %d and %d", known.status, unknown.status)
	}
	same := func(a, b *page, what string) {
		t.Helper()
		x := strings.ReplaceAll(a.body, "known@example.com", "X")
		y := strings.ReplaceAll(b.body, "unknown@example.com", "X")
		if x != y {
			t.Fatalf("%s: the answers differ:\n%s\n----\n%s", what, x, y)
		}
	}
	same(known, unknown, "reset")
	got := in.take()
	if len(got) != 1 || got[0].To != "known@example.com" {
		t.Fatalf("e-mails: %+v", got)
	}
	ask("not an address").mustStatus(http.StatusUnprocessableEntity)
	// The cap: the 2nd and 3rd links go out, the 4th not; the answer is the
	// same.
	for range 2 {
		ask("known@example.com")
	}
	capped := ask("known@example.com")
	same(capped, unknown, "capped reset")
	if got := in.take(); len(got) != 2 {
		t.Fatalf("%d e-mails after 3 more requests, want 2 (the cap is 3 an hour)", len(got))
	}
}

// TestSignUpEnumeration: signing up with a taken address gets the same
// status and page as a free one, hashes the password all the same (so it
// takes as long), changes nothing of the account, and e-mails its owner a
// notice; the new address gets a verification link.
func TestSignUpEnumeration(t *testing.T) {
	e := newEnv(t)
	in := newInbox(e)
	e.user("taken@example.com", "owners password 1", true, false)
	var hashes atomic.Int32
	hash := e.f.App.Accounts.Hash
	e.f.App.Accounts.Hash = func(pw string) (string, error) { hashes.Add(1); return hash(pw) }

	fresh := signUp(e.browser(), "fresh@example.com", "long enough 1")
	if n := hashes.Swap(0); n != 1 {
		t.Fatalf("a sign-up hashed %d passwords", n)
	}
	taken := signUp(e.browser(), "Taken@example.com", "long enough 1")
	if n := hashes.Swap(0); n != 1 {
		t.Fatalf("a sign-up with a taken address hashed %d passwords, want 1 as for a free one", n)
	}
	if fresh.status != http.StatusOK || taken.status != http.StatusOK || fresh.url.Path != taken.url.Path {
		t.Fatalf("statuses %d %s and %d %s", fresh.status, fresh.url.Path, taken.status, taken.url.Path)
	}
	if x, y := strings.ReplaceAll(fresh.body, "fresh@example.com", "X"), strings.ReplaceAll(taken.body, "taken@example.com", "X"); x != y {
		t.Fatalf("the answers differ:\n%s\n----\n%s", x, y)
	}
	fresh.mustContain("Check your e-mail")
	if !password.Check(e.password("taken@example.com"), "owners password 1") {
		t.Fatal("a sign-up with a taken address changed the password")
	}
	got := in.take()
	if len(got) != 2 {
		t.Fatalf("e-mails: %+v", got)
	}
	for _, m := range got {
		switch m.To {
		case "fresh@example.com":
			if m.Subject != "Verify your e-mail address for ams" {
				t.Errorf("to the new address: %q", m.Subject)
			}
			in.link(m, "/verify-email/")
		case "taken@example.com":
			if !strings.Contains(m.Subject, "Someone tried to create an ams account") || !strings.Contains(m.Text, e.f.Server.URL+"/forgot-password") ||
				strings.Contains(m.Text, "/verify-email/") {
				t.Errorf("notice to the owner: %q\n%s", m.Subject, m.Text)
			}
		default:
			t.Errorf("e-mail to %s", m.To)
		}
	}
}

// TestEmailVerification: a new account is unverified, and the pages say
// so with a button that sends a new link; the link verifies the address
// once; a wrong one is 404, a used or expired one 410. Accounts made by
// an operator (the CLI, --dev, the fixture) are verified.
func TestEmailVerification(t *testing.T) {
	e := newEnv(t)
	in := newInbox(e)
	b := e.browser()
	signUp(b, "new@example.com", "long enough 1")
	first := in.link(in.one("new@example.com"), "/verify-email/")
	p := b.signIn("new@example.com", "long enough 1")
	p.mustContain("Verify your e-mail address.", "Unverified")

	// A new link, by the button of the banner.
	tok := formValues(p.form("/account/verify-email")).Get("csrf_token")
	p = b.post("/account/verify-email", url.Values{"csrf_token": {tok}})
	p.mustStatus(http.StatusOK)
	p.mustContain("We sent a new verification link to new@example.com")
	second := in.link(in.one("new@example.com"), "/verify-email/")
	if second == first {
		t.Fatal("the new link is the old one")
	}

	// The first link still works (within 24 hours), once.
	e.f.Clock.Add(23 * time.Hour)
	p = b.get(first)
	p.mustStatus(http.StatusOK)
	p.mustContain("Your e-mail address is verified", "new@example.com")
	p = b.get("/account")
	p.mustContain("Verified")
	p.mustNotContain("Verify your e-mail address.", "Unverified")
	p = b.get(first)
	p.mustStatus(http.StatusGone)
	p.mustContain("used already")
	b.get("/verify-email/wrong").mustStatus(http.StatusNotFound)
	// Verified: the button sends nothing.
	p = b.post("/account/verify-email", url.Values{"csrf_token": {tok}})
	p.mustContain("verified already")
	if got := in.take(); len(got) != 0 {
		t.Fatalf("e-mails to a verified account: %+v", got)
	}

	// An expired link verifies nothing (in another browser, signed out).
	anon := e.browser()
	signUp(anon, "late@example.com", "long enough 1")
	late := in.link(in.one("late@example.com"), "/verify-email/")
	e.f.Clock.Add(24 * time.Hour)
	p = anon.get(late)
	p.mustStatus(http.StatusGone)
	p.mustContain("expired")
	if u, _ := e.f.Store.FindUserByEmail(t.Context(), "late@example.com"); u.Verified() {
		t.Fatal("an expired link verified the address")
	}
	// Operators' accounts are verified.
	if !e.f.User.Verified() {
		t.Fatal("the fixture's account is not verified")
	}
}

// TestSignUpTakenNoticeCapped (issue 26, M4): sign-ups with a registered
// address, from many client addresses (so the per-network sign-up
// throttle does not stop them), e-mail its owner at most the cap of
// notices a day (ams.EmailCaps), and every answer is the same page as a
// sign-up with a free address: the cap does not tell that the address
// is registered.
func TestSignUpTakenNoticeCapped(t *testing.T) {
	e := newEnv(t, amstest.WithTrustedProxies(clientaddr.Proxies{netip.MustParsePrefix("127.0.0.0/8")}),
		amstest.WithClientAddressHeader("X-Forwarded-For"))
	in := newInbox(e)
	e.user("owner@example.com", "owners password 1", true, false)
	from := func(i int) *browser {
		b := e.browser()
		b.header = http.Header{"X-Forwarded-For": {fmt.Sprintf("203.0.113.%d", i+1)}}
		return b
	}
	fresh := signUp(from(200), "fresh@example.com", "long enough 1")
	fresh.mustStatus(http.StatusOK)
	want := strings.ReplaceAll(fresh.body, "fresh@example.com", "X")
	const tries = 20
	for i := range tries {
		p := signUp(from(i), "owner@example.com", "long enough 1")
		if p.status != fresh.status || strings.ReplaceAll(p.body, "owner@example.com", "X") != want {
			t.Fatalf("sign-up %d with the taken address: %d, an answer unlike a free address's:\n%s", i+1, p.status, p.body)
		}
	}
	notices := 0
	for _, m := range in.take() {
		if m.To == "owner@example.com" {
			notices++
		}
	}
	if c := ams.EmailCaps[ams.EmailSignupTaken]; notices != c.Max {
		t.Fatalf("%d of %d sign-ups with a taken address e-mailed its owner, want the cap %d", notices, tries, c.Max)
	}
	// A day later the owner may be told again.
	e.f.Clock.Add(ams.EmailCaps[ams.EmailSignupTaken].Window)
	signUp(from(100), "owner@example.com", "long enough 1").mustStatus(http.StatusOK)
	if got := in.take(); len(got) != 1 || got[0].To != "owner@example.com" {
		t.Fatalf("after the window: %+v", got)
	}
}
