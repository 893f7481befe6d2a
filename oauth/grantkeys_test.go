package oauth_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/amstest"
	"github.com/amsdev/ams/internal/testing/pgtest"
	"github.com/amsdev/ams/internal/testing/wait"
)

// TestGrantKeysDieWithGrant (issue 26, M3): an API key that an access
// token granted admin creates through POST /v1/keys records the client
// that made it (oauth_client_id) and dies with the grant, at once (the
// key was served from the authentication cache just before) and with an
// api_key.revoked event: on RFC 7009 revocation of the token, on the
// reuse of a rotated refresh token (which revokes the whole grant), on
// the user's revocation of the app on the account page and on the
// client's deletion through the management API. A key that key makes
// belongs to the grant too. A plain refresh keeps the grant's keys, and
// the account holder's own key stays through it all. On both engines.
func TestGrantKeysDieWithGrant(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			var opts []amstest.Option
			if engine == "postgres" {
				u := pgtest.URL(t)
				opts = append(opts, amstest.OnStore(pgtest.OpenSchema(t, u, pgtest.FreshSchema(t, u))))
			}
			h := setup(t, opts...)
			plan, rpm := ams.PlanEnterprise, 100000 // the lists of events below poll
			if _, err := h.Data.UpdateUser(context.Background(), h.User.ID, ams.UserUpdate{Plan: &plan, RPM: &rpm}, h.Clock.Now()); err != nil {
				t.Fatal(err)
			}
			h.login(t, h.Browser, "ann@example.com", testPassword)
			other, otherSecret := h.newClient(t)
			tokens := func(clientID, secret string) (string, string) {
				t.Helper()
				c := h.Client
				if clientID == other.ID {
					c = other
				}
				r := h.tokenRequest(t, "", url.Values{"grant_type": {"authorization_code"}, "code": {h.code(t, c, "scope", "admin")},
					"redirect_uri": {redirectURI}}, clientID, secret)
				at, _ := r.JSON["access_token"].(string)
				rt, _ := r.JSON["refresh_token"].(string)
				if at == "" || rt == "" {
					t.Fatalf("tokens: %d %s", r.Status, r.Raw)
				}
				return at, rt
			}
			expires := h.Clock.Now().Add(30 * time.Minute).Format(time.RFC3339)
			makeKey := func(cred, clientID string) (secret, id string) {
				t.Helper()
				r := h.Do("POST", "/v1/keys", cred, `{"name":"made by an app","permissions":["admin"],"expires_at":"`+expires+`"}`)
				m := r.JSON(t)
				if r.Status != http.StatusCreated || m["oauth_client_id"] != clientID {
					t.Fatalf("create key: %d %v", r.Status, m)
				}
				return m["secret"].(string), m["id"].(string)
			}
			works := func(what string, keys ...string) {
				t.Helper()
				for _, k := range keys {
					for range 2 { // the second from the cache
						if st, code := h.apiStatus(t, k); st != http.StatusOK {
							t.Fatalf("%s: key refused: %d %s", what, st, code)
						}
					}
				}
			}
			refused := func(what string, keys ...string) {
				t.Helper()
				for _, k := range keys {
					if st, code := h.apiStatus(t, k); st != http.StatusUnauthorized {
						t.Errorf("%s: a key of the grant still works: %d %s", what, st, code)
					}
				}
			}
			// Audit events are read with admin (issue 26, L8).
			auditor := h.NewKey(h.User, "admin")
			revokedEvents := func(ids ...string) {
				t.Helper()
				seen := map[string]bool{}
				missing := 0
				if !wait.Until(func() bool {
					r := h.Do("GET", "/v1/events?type=api_key.revoked&limit=100", auditor, "")
					data, ok := r.JSON(t)["data"].([]any)
					if !ok {
						t.Fatalf("list events: %d %s", r.Status, r.Body)
					}
					for _, e := range data {
						seen[e.(map[string]any)["data"].(map[string]any)["id"].(string)] = true
					}
					missing = 0
					for _, id := range ids {
						if !seen[id] {
							missing++
						}
					}
					return missing == 0
				}) {
					t.Fatalf("%d of %d keys revoked without an api_key.revoked event", missing, len(ids))
				}
			}

			// RFC 7009: the app revokes its access token.
			at, _ := tokens(h.Client.ID, h.Secret)
			k1, id1 := makeKey(at, h.Client.ID)
			k1b, id1b := makeKey(k1, h.Client.ID) // made by a key the grant made
			works("before revocation", k1, k1b, h.Key)
			if r := h.tokenRequest(t, "/oauth/revoke", url.Values{"token": {at}}, h.Client.ID, h.Secret); r.Status != http.StatusOK {
				t.Fatalf("revoke: %d %s", r.Status, r.Raw)
			}
			refused("RFC 7009 revocation", k1, k1b)
			revokedEvents(id1, id1b)

			// A refresh keeps the grant; the reuse of the rotated refresh
			// token revokes it.
			at, rt := tokens(h.Client.ID, h.Secret)
			k2, id2 := makeKey(at, h.Client.ID)
			works("before refresh", k2)
			refresh := func() *tokenResponse {
				return h.tokenRequest(t, "", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}}, h.Client.ID, h.Secret)
			}
			if r := refresh(); r.Status != http.StatusOK {
				t.Fatalf("refresh: %d %s", r.Status, r.Raw)
			}
			works("after a refresh", k2)
			if r := refresh(); r.Status == http.StatusOK {
				t.Fatalf("reused refresh token accepted: %s", r.Raw)
			}
			refused("refresh-token reuse", k2)
			revokedEvents(id2)

			// The user revokes the app on the account page.
			at, _ = tokens(h.Client.ID, h.Secret)
			k3, id3 := makeKey(at, h.Client.ID)
			works("before the app's revocation", k3)
			action := "/account/apps/authorized/" + h.Client.ID + "/revoke"
			form := findForm(t, h.get(t, h.Browser, "/account/apps"), action)
			form.Values.Set("confirm", "yes")
			if p := h.post(t, h.Browser, action, form.Values); p.StatusCode >= 400 {
				t.Fatalf("revoke the app: %d %s", p.StatusCode, p.Body)
			}
			refused("the user's revocation of the app", k3)
			revokedEvents(id3)

			// The client is deleted through the management API.
			at, _ = tokens(other.ID, otherSecret)
			k4, id4 := makeKey(at, other.ID)
			works("before the client's deletion", k4)
			admin, ak := ams.NewAPIKey(h.User.ID, "admin", ams.Permissions{ams.PermAdmin}, h.Clock.Now(), nil)
			if err := h.Data.CreateKey(context.Background(), ak); err != nil {
				t.Fatal(err)
			}
			if r := h.Do("DELETE", "/v1/oauth/clients/"+other.ID, admin, ""); r.Status >= 300 {
				t.Fatalf("delete client: %d %s", r.Status, r.Body)
			}
			refused("the client's deletion", k4)
			revokedEvents(id4)

			works("the holder's own key", h.Key)
			if r := h.Do("GET", "/v1/keys/"+id4, admin, ""); r.JSON(t)["status"] != "revoked" || r.JSON(t)["oauth_client_id"] != other.ID {
				t.Errorf("the deleted client's key: %s", r.Body)
			}
		})
	}
}
