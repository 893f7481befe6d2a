package browser

import (
	"strings"
	"testing"
)

// TestWaitlistPageSignOutAndPassword: an administrator approves a new
// account on the waitlist page (in a browser of their own); the user signs
// out, signs in again, changes the password, and only the new one works.
func TestWaitlistPageSignOutAndPassword(t *testing.T) {
	user := newPage(t)
	e := user.e
	e.needPage(t, "/account/admin/waitlist")
	e.needPage(t, "/account/password")
	const email, pw1, pw2 = "grace@example.com", "first password 1", "second password 2"
	e.amsStdin(t, "admin password 1\n", "users", "create", "--email", "admin@example.com", "--admin", "--password-stdin")

	// Grace signs up, and is on the waitlist.
	user.open("/signup")
	user.fill("E-mail address", email)
	user.fill("Password", pw1)
	user.fill("Password again", pw1)
	user.submit("Create account")
	user.waitText("Check your e-mail")
	user.signIn(email, pw1, "/account")
	user.waitText("On the waitlist")

	// Signing out leads to the sign-in page; the account pages ask to sign in.
	user.submit("Sign out")
	user.waitPath("/login")
	user.open("/account/keys")
	user.waitPath("/login")
	user.waitText("Sign in to ams")

	// The administrator approves her on the waitlist page.
	admin := newPage(t)
	admin.signIn("admin@example.com", "admin password 1", "/account/admin/waitlist")
	admin.waitText("Early-access waitlist")
	admin.waitText(email)
	admin.shot("admin-waitlist")
	admin.submitNear("Approve", email)
	admin.waitPath("/account/admin/waitlist")
	admin.waitFor("grace gone from the waitlist", `!document.querySelector("main table") || !document.querySelector("main table").innerText.includes(`+jsString(email)+`)`)

	// Grace signs in again: approved, the key form is there.
	user.fill("E-mail address", email)
	user.fill("Password", pw1)
	user.submit("Sign in")
	user.waitPath("/account/keys")
	user.waitText("Create a key")

	// She changes her password.
	user.open("/account/password")
	user.waitText("Change your password")
	user.fill("Current password", pw1)
	user.fill("New password", pw2)
	user.fill("New password again", pw2)
	user.shot("password")
	user.submit("Change password")
	user.waitPath("/account")
	user.waitText("Your password was changed.")

	// Only the new password signs in.
	user.submit("Sign out")
	user.waitPath("/login")
	user.fill("E-mail address", email)
	user.fill("Password", pw1)
	user.submit("Sign in")
	user.waitText("The e-mail address or password is not correct.")
	user.shot("login-failed")
	user.fill("E-mail address", email)
	user.fill("Password", pw2)
	user.submit("Sign in")
	// Signed in (from a bare /login the page says so), and the account
	// pages know her.
	user.waitText(email)
	user.open("/account")
	user.waitPath("/account")
	if !strings.Contains(user.bodyText(), "Your account") {
		t.Fatalf("signed in with the new password, /account shows:\n%s", user.bodyText())
	}
}
