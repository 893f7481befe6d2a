package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/amsdev/ams/client"
)

// TestRegisterClientLive registers clients with RegisterClient (RFC 7591,
// POST /oauth/register) on a live server, on both engines: a public
// client gets no secret and starts the authorization code flow with PKCE
// (the authorize endpoint knows it and sends the user to sign in); a
// confidential one gets its secret once; invalid metadata is an
// *OAuthError 400 and stores nothing.
func TestRegisterClientLive(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			f := liveFixture(t, engine)
			ctx := context.Background()
			const redirect = "http://127.0.0.1:9999/callback"
			reg, err := client.RegisterClient(ctx, f.Server.URL, client.ClientMetadata{RedirectURIs: []string{redirect}, ClientName: "Go SDK test",
				TokenEndpointAuthMethod: client.AuthMethodNone})
			if err != nil || !strings.HasPrefix(reg.ClientID, "cli_") || reg.ClientSecret != "" || reg.ClientName != "Go SDK test" ||
				reg.TokenEndpointAuthMethod != client.AuthMethodNone || len(reg.RedirectURIs) != 1 || reg.RedirectURIs[0] != redirect ||
				reg.ClientIDIssuedAt == 0 || len(reg.GrantTypes) == 0 {
				t.Fatalf("public registration: %+v %v", reg, err)
			}
			stored, err := f.Data.FindOAuthClient(ctx, reg.ClientID)
			if err != nil || !stored.Public || stored.UserID != "" {
				t.Fatalf("stored: %+v %v", stored, err)
			}
			q := url.Values{"response_type": {"code"}, "client_id": {reg.ClientID}, "redirect_uri": {redirect}, "state": {"state-123456"},
				"code_challenge": {"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"}, "code_challenge_method": {"S256"}, "scope": {"read"}}
			noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			resp, err := noFollow.Get(f.Server.URL + "/oauth/authorize?" + q.Encode())
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/login?") {
				t.Fatalf("authorize with the registered client: %d %v", resp.StatusCode, resp.Header)
			}

			// Confidential, through a base URL ending in /v1.
			conf, err := client.RegisterClient(ctx, f.Server.URL+"/v1", client.ClientMetadata{RedirectURIs: []string{"https://app.example/cb"}},
				client.WithUserAgent("sdk-test/1"))
			if err != nil || conf.ClientSecret == "" || conf.TokenEndpointAuthMethod != client.AuthMethodClientSecretBasic || conf.ClientName != "app.example" {
				t.Fatalf("confidential registration: %+v %v", conf, err)
			}

			before, err := f.Data.PublicRedirectURIs(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				m    client.ClientMetadata
				code string
			}{
				{client.ClientMetadata{RedirectURIs: []string{"http://example.com/cb"}, TokenEndpointAuthMethod: client.AuthMethodNone}, "invalid_redirect_uri"},
				{client.ClientMetadata{}, "invalid_redirect_uri"},
				{client.ClientMetadata{RedirectURIs: []string{redirect}, GrantTypes: []string{"refresh_token"}, TokenEndpointAuthMethod: client.AuthMethodNone}, "invalid_client_metadata"},
			} {
				_, err := client.RegisterClient(ctx, f.Server.URL, c.m)
				var oe *client.OAuthError
				if !errors.As(err, &oe) || oe.StatusCode != 400 || oe.Code != c.code || oe.Description == "" || !strings.Contains(err.Error(), c.code) {
					t.Fatalf("%+v: %v, want %s", c.m, err, c.code)
				}
			}
			if after, err := f.Data.PublicRedirectURIs(ctx); err != nil || len(after) != len(before) {
				t.Fatalf("public clients: %d before the bad registrations, %d after (%v)", len(before), len(after), err)
			}
		})
	}
}
