package browser

import (
	"io"
	"mime/quotedprintable"
	"net/mail"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// mailLink waits until the server's outbox (ams serve without --smtp-url
// writes each e-mail as a .eml file under <data-dir>/outbox) holds an
// e-mail to to with a link whose path starts with prefix that is not in
// seen, and returns the link's path.
func (e *env) mailLink(t *testing.T, to, prefix string, seen ...string) string {
	t.Helper()
	re := regexp.MustCompile(regexp.QuoteMeta(prefix) + `[A-Za-z0-9]+`)
	deadline := time.Now().Add(stepTimeout)
	for {
		files, _ := filepath.Glob(filepath.Join(e.dir, "outbox", "*.eml"))
		slices.Sort(files)
		slices.Reverse(files) // newest first
		for _, f := range files {
			fh, err := os.Open(f)
			if err != nil {
				continue
			}
			m, err := mail.ReadMessage(fh)
			if err != nil {
				fh.Close()
				continue
			}
			body, _ := io.ReadAll(quotedprintable.NewReader(m.Body))
			fh.Close()
			if !strings.Contains(m.Header.Get("To"), to) {
				continue
			}
			if l := re.FindString(string(body)); l != "" && !slices.Contains(seen, l) {
				return l
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no e-mail to %s with a new %s link in the outbox after %s", to, prefix, stepTimeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestSignUpVerifyAndResetPassword: a new user signs up and is asked to
// check the e-mail; signed in, the account page asks to verify the
// address and sends a new link on request; the link from the e-mail
// verifies it (once). Later the user forgot the password: "Forgot
// password?" on the sign-in page, the e-mail's link, a new password, and
// only that one signs in.
func TestSignUpVerifyAndResetPassword(t *testing.T) {
	p := newPage(t)
	e := p.e
	e.needPage(t, "/forgot-password")
	const email, pw1, pw2 = "lin@example.com", "first password 1", "second password 2"

	p.open("/signup")
	p.fill("E-mail address", email)
	p.fill("Password", pw1)
	p.fill("Password again", pw1)
	p.submit("Create account")
	p.waitText("Check your e-mail")
	p.waitText("We have sent a message to " + email)
	p.shot("signup-check-email")
	first := e.mailLink(t, email, "/verify-email/")

	// Signed in, the account is unverified: a banner, and a new link on
	// request.
	p.signIn(email, pw1, "/account")
	p.waitText("Verify your e-mail address.")
	p.waitText("Unverified")
	p.shot("account-unverified")
	p.submit("Send a new link")
	p.waitText("We sent a new verification link to " + email)
	second := e.mailLink(t, email, "/verify-email/", first)

	// The link verifies the address, once.
	p.open(second)
	p.waitText("Your e-mail address is verified")
	p.shot("verify-email")
	p.click("Go to your account")
	p.waitPath("/account")
	p.waitText("Verified")
	if strings.Contains(p.bodyText(), "Verify your e-mail address.") {
		t.Fatal("the banner is still shown once verified")
	}
	p.open(second)
	p.waitText("This link cannot be used")
	p.waitText("used already")
	p.shot("link-used")

	// Signed out, the password forgotten.
	p.open("/account")
	p.submit("Sign out")
	p.waitPath("/login")
	p.click("Forgot password?")
	p.waitPath("/forgot-password")
	p.waitText("Forgot your password?")
	p.fill("E-mail address", email)
	p.shot("forgot-password")
	p.submit("Send the link")
	p.waitText("Check your e-mail")
	p.waitText("within an hour")
	p.shot("forgot-password-sent")

	reset := e.mailLink(t, email, "/reset-password/")
	p.open(reset)
	p.waitText("Choose a new password")
	p.fill("New password", pw2)
	p.fill("New password again", pw2)
	p.shot("reset-password")
	p.submit("Set the new password")
	p.waitText("Your password was changed")
	p.shot("reset-password-done")

	// Only the new password signs in; the link does not work again.
	p.click("Sign in with the new password")
	p.waitPath("/login")
	p.fill("E-mail address", email)
	p.fill("Password", pw1)
	p.submit("Sign in")
	p.waitText("The e-mail address or password is not correct.")
	p.signIn(email, pw2, "/account")
	p.open(reset)
	p.waitText("used already")
}
