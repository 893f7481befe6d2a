package browser

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// TestSignUpApprovalAndKeys: a new user signs up in the browser and is told
// the account is on the waitlist (no key form); `ams users approve` lets it
// off; the user creates a key with checkboxes, reads it from the page (shown
// once), and a program uses it (GET /v1/assistants 200, a permission not
// granted 403); the user revokes it after confirmation and the same call is
// refused with 401.
func TestSignUpApprovalAndKeys(t *testing.T) {
	p := newPage(t)
	e := p.e
	const email = "ada@example.com"

	// Sign up.
	p.open("/signup")
	p.waitText("Create your ams account")
	p.fill("E-mail address", email)
	p.fill("Password", "correct horse battery")
	p.fill("Password again", "correct horse battery")
	p.choose("Time zone", "Europe/London")
	p.shot("signup")
	p.submit("Create account")
	p.waitText("Check your e-mail")
	// The address is verified by the e-mail's link (recovery_test.go
	// shows the pages of an unverified account).
	p.open(e.mailLink(t, email, "/verify-email/"))
	p.waitText("Your e-mail address is verified")

	// Signed in, on the waitlist.
	p.signIn(email, "correct horse battery", "/account")
	p.waitText("You are on the early-access waitlist.")
	p.waitText("On the waitlist")
	p.shot("account-waitlist")
	p.open("/account/keys")
	p.waitText("API keys")
	p.waitText("Your account is on the early-access waitlist.")
	if strings.Contains(p.bodyText(), "Create key") {
		t.Fatal("the key form is offered to an account on the waitlist")
	}
	p.shot("keys-waitlist")

	// Approved from the shell.
	e.ams(t, "users", "approve", "--email", email)
	p.open("/account")
	p.waitText("Approved")
	p.shot("account")

	// Create a key: a name, two permissions, no expiry.
	p.open("/account/keys")
	p.waitText("Create a key")
	p.fill("Name", "Calendar sync")
	for _, perm := range []string{"read", "write", "admin", "messages", "integrations"} {
		p.check(perm, perm == "read" || perm == "messages")
	}
	p.check("Never", true)
	p.shot("keys-create")
	p.submit("Create key")

	// Shown once, with a copy button.
	p.waitText("Copy the key now.")
	key := p.secret("the new API key", regexp.MustCompile(`ams_sk_[0-9A-Za-z]{40}`))
	// The copy button selects the key (and copies it; it says "Copied" for
	// two seconds, too short to wait for on a loaded machine).
	p.click("Copy")
	p.waitFor("the key selected by the copy button", `(function(){ const el = document.activeElement; return el && el.value && el.value.startsWith("ams_sk_") && el.selectionStart === 0 && el.selectionEnd === el.value.length; })()`)
	p.shot("key-created")
	created := p.location()

	// A program uses it (curl-equivalent calls).
	if st, body := e.api(t, "GET", "/v1/assistants", key, ""); st != http.StatusOK || !strings.Contains(body, `"object":"list"`) {
		t.Fatalf("GET /v1/assistants with the new key: %d %s", st, body)
	}
	if st, body := e.api(t, "POST", "/v1/assistants", key, `{"name":"Not allowed"}`); st != http.StatusForbidden {
		t.Fatalf("POST /v1/assistants with a key without write: %d %s, want 403", st, body)
	}

	// Not shown again.
	p.open(created)
	p.waitText("This key is no longer shown")
	if strings.Contains(p.bodyText()+p.fieldValues(), key) {
		t.Fatal("the key is shown a second time")
	}

	// Listed, then revoked after confirmation.
	p.submit("Done: back to API keys")
	p.waitPath("/account/keys")
	p.waitText("Calendar sync")
	p.waitText("read, messages")
	p.clickNear("Revoke…", "Calendar sync")
	p.waitText("Programs that use it are refused from their next request.")
	p.shot("keys-revoke")
	p.submitNear("Yes, revoke this key", "Calendar sync")
	p.waitText("was revoked")
	p.waitText("Revoked")
	p.shot("keys")

	st, body := e.api(t, "GET", "/v1/assistants", key, "")
	if st != http.StatusUnauthorized || !strings.Contains(body, "api_key_revoked") {
		t.Fatalf("GET /v1/assistants with the revoked key: %d %s, want 401 api_key_revoked", st, body)
	}
}
