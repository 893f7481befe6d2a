package browser

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/oauth2"
)

// TestOAuthAppsPage: the user registers an OAuth app on /account/apps, sees
// its secret once, authorizes it through the consent page, finds it among
// the authorized apps and revokes it there: its token is refused. Then the
// secret is rotated.
func TestOAuthAppsPage(t *testing.T) {
	p := newPage(t)
	e := p.e
	cb, got := callbackServer(t)

	p.signIn("dev@example.com", e.devPass, "/account/apps")
	p.waitText("Register an app")

	// Register a confidential app.
	p.fill("Name", "Example Notes App")
	p.fill("Redirect URIs", cb.URL+"/callback")
	p.check("Confidential", true)
	p.shot("oauth-apps-register")
	p.submit("Register app")

	// Its page shows the client id and, once, the secret.
	p.waitText("Copy this secret now.")
	if !strings.HasPrefix(p.location(), e.base+"/account/apps/cli_") {
		t.Fatalf("after registering: at %s, want the app's page", p.location())
	}
	secret := p.secret("the client secret", regexp.MustCompile(`ams_cs_\w+`))
	clientID := p.secret("the client id", regexp.MustCompile(`cli_\w+`))
	p.shot("oauth-app-created")
	appPage := p.location()

	// Shown once: the app's page no longer has it.
	p.open(appPage)
	p.waitText("Client id")
	if strings.Contains(p.bodyText()+p.fieldValues(), "ams_cs_") {
		t.Fatal("the client secret is shown again")
	}

	// The app works: an authorization through the consent page (already
	// signed in: straight to consent), the code exchanged with the secret
	// from the page.
	conf := &oauth2.Config{
		ClientID: clientID, ClientSecret: secret,
		Endpoint:    oauth2.Endpoint{AuthURL: e.base + "/oauth/authorize", TokenURL: e.base + "/oauth/token"},
		RedirectURL: cb.URL + "/callback",
		Scopes:      []string{"read"},
	}
	tok := p.authorize(conf, got)
	if st, body := e.api(t, "GET", "/v1/assistants", tok.AccessToken, ""); st != http.StatusOK {
		t.Fatalf("GET /v1/assistants with the app's token: %d %s", st, body)
	}

	// Authorized apps: listed with its scope; revoked after confirmation.
	p.open("/account/apps")
	p.waitText("Authorized apps")
	p.waitText("Example Notes App")
	p.clickNear("Revoke…", "Example Notes App")
	p.shot("oauth-apps")
	p.submitNear("Revoke access", "Example Notes App")
	p.waitText("Example Notes App no longer has access to your account.")
	if st, body := e.api(t, "GET", "/v1/assistants", tok.AccessToken, ""); st != http.StatusUnauthorized {
		t.Fatalf("GET /v1/assistants with the token of a revoked app: %d %s, want 401", st, body)
	}
	if _, err := conf.TokenSource(context.Background(), &oauth2.Token{RefreshToken: tok.RefreshToken}).Token(); err == nil {
		t.Fatal("the refresh token of a revoked app still works")
	}

	// Rotate the secret: a new one, shown once; the old one is refused.
	p.open(appPage)
	p.click("Rotate the client secret…")
	p.submit("Rotate secret")
	p.waitText("New client secret made.")
	secret2 := p.secret("the new client secret", regexp.MustCompile(`ams_cs_\w+`))
	if secret2 == secret {
		t.Fatal("rotating kept the secret")
	}
	verifier := oauth2.GenerateVerifier()
	code := p.authorizeCode(conf, got, verifier)
	if _, err := conf.Exchange(context.Background(), code, oauth2.VerifierOption(verifier)); err == nil {
		t.Fatal("the old client secret still works after rotation")
	}
	conf.ClientSecret = secret2
	if _, err := conf.Exchange(context.Background(), p.authorizeCode(conf, got, verifier), oauth2.VerifierOption(verifier)); err != nil {
		t.Fatalf("exchange with the rotated secret: %v", err)
	}
}
