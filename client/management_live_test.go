package client_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/client"
	"github.com/amsdev/ams/internal/testing/wait"
)

// TestManagementLive manages API keys, OAuth clients and the account
// through the client against the server, on both engines, and reads the
// audit events the changes emitted.
func TestManagementLive(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			f := liveFixture(t, engine)
			ctx := context.Background()
			var apiErr *client.Error
			// The fixture's key lacks admin: the management API refuses it.
			if _, err := client.New(f.Server.URL, f.Key).ListAPIKeys(ctx, nil); !errors.As(err, &apiErr) || apiErr.StatusCode != 403 || apiErr.Code != "insufficient_scope" {
				t.Fatalf("non-admin ListAPIKeys: %v", err)
			}
			c := client.New(f.Server.URL, f.NewKey(f.User, "admin"))

			exp := f.Clock.Now().Add(30 * 24 * time.Hour)
			k, err := c.CreateAPIKey(ctx, client.CreateAPIKeyParams{Name: "export", Permissions: []string{"read", "messages"}, ExpiresAt: &exp})
			if err != nil || !strings.HasPrefix(k.ID, "key_") || !strings.HasPrefix(k.Secret, "ams_sk_") || k.Last4 != k.Secret[len(k.Secret)-4:] ||
				k.Status != "active" || !slices.Equal(k.Permissions, []string{"read", "messages"}) || k.ExpiresAt == nil || !k.ExpiresAt.Equal(exp) {
				t.Fatalf("CreateAPIKey: %+v %v", k, err)
			}
			if _, err := client.New(f.Server.URL, k.Secret).ListAssistants(ctx, nil); err != nil {
				t.Fatalf("the new key: %v", err)
			}
			if got, err := c.GetAPIKey(ctx, k.ID); err != nil || got.Name != "export" || got.Prefix != "ams_sk_" {
				t.Fatalf("GetAPIKey: %+v %v", got, err)
			}
			var listed []string
			for key, err := range c.AllAPIKeys(ctx, &client.ListParams{Limit: 1}) {
				if err != nil {
					t.Fatal(err)
				}
				listed = append(listed, key.ID)
			}
			if len(listed) != 3 || listed[0] != k.ID { // the fixture's key, the admin key, and this one
				t.Fatalf("AllAPIKeys: %v", listed)
			}
			if _, err := c.CreateAPIKey(ctx, client.CreateAPIKeyParams{Name: "x", Permissions: []string{"root"}}); !errors.As(err, &apiErr) ||
				apiErr.StatusCode != 400 || apiErr.Param != "permissions" {
				t.Fatalf("bad permission: %v", err)
			}
			// An expiring key may not create one that outlives it.
			if _, err := client.New(f.Server.URL, adminUntil(t, c, exp)).CreateAPIKey(ctx, client.CreateAPIKeyParams{Name: "x", Permissions: []string{"read"}}); !errors.As(err, &apiErr) ||
				apiErr.StatusCode != 403 || apiErr.Code != "lifetime_not_held" || apiErr.Param != "expires_at" {
				t.Fatalf("escalation: %v", err)
			}
			if r, err := c.RevokeAPIKey(ctx, k.ID); err != nil || r.Status != "revoked" || r.RevokedAt == nil {
				t.Fatalf("RevokeAPIKey: %+v %v", r, err)
			}

			cl, err := c.CreateOAuthClient(ctx, client.CreateOAuthClientParams{Name: "Planner", RedirectURIs: []string{"https://planner.example/cb"}})
			if err != nil || !strings.HasPrefix(cl.ID, "cli_") || cl.ClientSecret == nil || !strings.HasPrefix(*cl.ClientSecret, "ams_cs_") || cl.Public {
				t.Fatalf("CreateOAuthClient: %+v %v", cl, err)
			}
			pub, err := c.CreateOAuthClient(ctx, client.CreateOAuthClientParams{Name: "Phone", RedirectURIs: []string{"http://localhost/cb"}, Public: true})
			if err != nil || pub.ClientSecret != nil || !pub.Public {
				t.Fatalf("public client: %+v %v", pub, err)
			}
			if l, err := c.ListOAuthClients(ctx, nil); err != nil || len(l.Data) != 2 || l.Data[0].ID != pub.ID {
				t.Fatalf("ListOAuthClients: %+v %v", l, err)
			}
			if got, err := c.GetOAuthClient(ctx, cl.ID); err != nil || got.Name != "Planner" {
				t.Fatalf("GetOAuthClient: %+v %v", got, err)
			}
			rot, err := c.RotateOAuthClientSecret(ctx, cl.ID)
			if err != nil || rot.ClientSecret == nil || *rot.ClientSecret == *cl.ClientSecret {
				t.Fatalf("RotateOAuthClientSecret: %+v %v", rot, err)
			}
			if _, err := c.RotateOAuthClientSecret(ctx, pub.ID); !errors.As(err, &apiErr) || apiErr.StatusCode != 409 || apiErr.Code != "public_client" {
				t.Fatalf("rotating a public client: %v", err)
			}
			if err := c.DeleteOAuthClient(ctx, pub.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := c.GetOAuthClient(ctx, pub.ID); !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
				t.Fatalf("deleted client: %v", err)
			}

			acct, err := c.GetAccount(ctx)
			if err != nil || acct.ID != f.User.ID || acct.Timezone != "UTC" || !acct.EmailNotifications.KeyReminders || acct.Limits.RequestsPerMinute != 60 {
				t.Fatalf("GetAccount: %+v %v", acct, err)
			}
			tz, off := "Europe/Paris", false
			if acct, err = c.UpdateAccount(ctx, client.UpdateAccountParams{Timezone: &tz, WebhookFailing: &off}); err != nil ||
				acct.Timezone != tz || acct.EmailNotifications.WebhookFailing || !acct.EmailNotifications.KeyReminders {
				t.Fatalf("UpdateAccount: %+v %v", acct, err)
			}
			bad := "Atlantis/Capital"
			if _, err := c.UpdateAccount(ctx, client.UpdateAccountParams{Timezone: &bad}); !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Param != "timezone" {
				t.Fatalf("bad time zone: %v", err)
			}

			// Every change is in the events (read by id: a list may show
			// a PostgreSQL event a moment after its commit).
			want := map[string]int{client.EventAPIKeyCreated: 2, client.EventAPIKeyRevoked: 1, client.EventOAuthClientCreated: 2,
				client.EventOAuthClientSecretRotated: 1, client.EventOAuthClientDeleted: 1, client.EventAccountUpdated: 1}
			for typ, n := range want {
				// Wait on the store, then read the API once: polling it
				// would spend the account's 60 requests a minute.
				wait.Until(func() bool {
					pg, err := f.Data.ListEvents(ctx, f.User.ID, ams.EventFilter{Type: typ}, ams.ListParams{Limit: 100})
					return err == nil && len(pg.Data) >= n
				})
				l, err := c.ListEvents(ctx, &client.ListEventsParams{Type: typ})
				if err != nil {
					t.Fatal(err)
				}
				if len(l.Data) != n {
					t.Fatalf("%s: %d events, want %d", typ, len(l.Data), n)
				}
			}
		})
	}
}

// adminUntil creates an admin key that expires at exp and returns its
// secret.
func adminUntil(t *testing.T, c *client.Client, exp time.Time) string {
	t.Helper()
	k, err := c.CreateAPIKey(context.Background(), client.CreateAPIKeyParams{Name: "expiring admin", Permissions: []string{"admin"}, ExpiresAt: &exp})
	if err != nil {
		t.Fatal(err)
	}
	return k.Secret
}
