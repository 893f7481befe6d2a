package oauth_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/sqlitetest"
	"github.com/amsdev/ams/oauth"
)

// TestCreateClient exercises oauth.CreateClient, what `ams oauth-clients
// create` runs.
func TestCreateClient(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := sqlitetest.Open(t)
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	u := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: "ann@example.com", Plan: ams.PlanStandard, Timezone: "UTC", CreatedAt: now, UpdatedAt: now}
	if err := db.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}

	c, secret, err := oauth.CreateClient(ctx, db, oauth.ClientParams{UserID: u.ID, Name: " My App ",
		RedirectURIs: []string{"https://app.example/cb", "http://127.0.0.1:8765/cb", "https://app.example/cb"}}, now)
	if err != nil {
		t.Fatal(err)
	}
	if !ams.HasPrefixID(c.ID, ams.PrefixClient) || !strings.HasPrefix(secret, oauth.PrefixClientSecret) || len(secret) < 40 {
		t.Errorf("id %q secret %q", c.ID, secret)
	}
	got, err := db.FindOAuthClient(ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "My App" || got.Public || got.UserID != u.ID || len(got.RedirectURIs) != 2 {
		t.Errorf("stored %+v", got)
	}
	if got.SecretHash != ams.HashSecret(secret) || strings.Contains(got.SecretHash, secret) {
		t.Errorf("secret not stored as its hash: %q", got.SecretHash)
	}

	pub, secret, err := oauth.CreateClient(ctx, db, oauth.ClientParams{UserID: u.ID, Name: "Phone", RedirectURIs: []string{"http://localhost/cb"}, Public: true}, now)
	if err != nil {
		t.Fatal(err)
	}
	if secret != "" || !pub.Public || pub.SecretHash != "" {
		t.Errorf("public client: secret %q %+v", secret, pub)
	}

	for name, p := range map[string]oauth.ClientParams{
		"no name":          {Name: " ", RedirectURIs: []string{"https://a.example/cb"}},
		"long name":        {Name: strings.Repeat("x", 101), RedirectURIs: []string{"https://a.example/cb"}},
		"no redirect URI":  {Name: "A"},
		"too many":         {Name: "A", RedirectURIs: strings.Split(strings.Repeat("https://a.example/cb,", 11), ",")[:11]},
		"http":             {Name: "A", RedirectURIs: []string{"http://a.example/cb"}},
		"relative":         {Name: "A", RedirectURIs: []string{"/cb"}},
		"fragment":         {Name: "A", RedirectURIs: []string{"https://a.example/cb#x"}},
		"user info":        {Name: "A", RedirectURIs: []string{"https://u:p@a.example/cb"}},
		"javascript":       {Name: "A", RedirectURIs: []string{"javascript:alert(1)"}},
		"custom scheme":    {Name: "A", RedirectURIs: []string{"myapp://cb"}},
		"one bad of two":   {Name: "A", RedirectURIs: []string{"https://a.example/cb", "ftp://a.example/cb"}},
		"http on 10.0.0.1": {Name: "A", RedirectURIs: []string{"http://10.0.0.1/cb"}},
	} {
		p.UserID = u.ID
		_, _, err := oauth.CreateClient(ctx, db, p, now)
		if e, ok := err.(*ams.Error); !ok || e.Kind != ams.EINVALID || e.Param == "" {
			t.Errorf("%s: %v, want EINVALID naming the parameter", name, err)
		}
	}
	list, err := db.ListOAuthClients(ctx, u.ID)
	if err != nil || len(list) != 2 {
		t.Errorf("clients stored: %d %v, want 2", len(list), err)
	}
}

// TestManageClients exercises what the OAuth apps page runs: rotating a
// client's secret, revoking an app's grants, deleting a client; another
// account's client is not found.
func TestManageClients(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := sqlitetest.Open(t)
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	var users []*ams.User
	for _, e := range []string{"ann@example.com", "bob@example.com"} {
		u := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: e, Plan: ams.PlanStandard, Timezone: "UTC", CreatedAt: now, UpdatedAt: now}
		if err := db.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		users = append(users, u)
	}
	ann, bob := users[0], users[1]
	c, old, err := oauth.CreateClient(ctx, db, oauth.ClientParams{UserID: ann.ID, Name: "App", RedirectURIs: []string{"https://app.example/cb"}}, now)
	if err != nil {
		t.Fatal(err)
	}
	pub, _, err := oauth.CreateClient(ctx, db, oauth.ClientParams{UserID: ann.ID, Name: "Phone", RedirectURIs: []string{"https://app.example/cb"}, Public: true}, now)
	if err != nil {
		t.Fatal(err)
	}

	// Rotation.
	if _, _, err := oauth.RotateClientSecret(ctx, db, ann.ID, pub.ID, now); ams.ErrorKindOf(err) != ams.ECONFLICT || oauth.CheckRotate(pub) == nil {
		t.Errorf("rotating a public client: %v", err)
	}
	if _, _, err := oauth.RotateClientSecret(ctx, db, bob.ID, c.ID, now); !ams.IsNotFound(err) {
		t.Errorf("bob rotating ann's client: %v", err)
	}
	if _, _, err := oauth.RotateClientSecret(ctx, db, ann.ID, "cli_missing", now); !ams.IsNotFound(err) {
		t.Errorf("missing client: %v", err)
	}
	if got, _ := db.FindOAuthClient(ctx, c.ID); got.SecretHash != ams.HashSecret(old) {
		t.Fatal("a refused rotation changed the secret")
	}
	rotated, secret, err := oauth.RotateClientSecret(ctx, db, ann.ID, c.ID, now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if secret == old || !strings.HasPrefix(secret, oauth.PrefixClientSecret) || rotated.SecretHash != ams.HashSecret(secret) {
		t.Errorf("rotated: %+v %q", rotated, secret)
	}
	if got, _ := db.FindOAuthClient(ctx, c.ID); got.SecretHash != ams.HashSecret(secret) {
		t.Error("the new secret is not stored")
	}

	// Grants: revoking takes back the app's tokens; again is no error.
	tok := &ams.OAuthToken{Kind: "access", Signature: "sig1", RequestID: "req1", ClientID: c.ID, UserID: ann.ID, Scopes: []string{"read"},
		Active: true, Data: []byte("{}"), ExpiresAt: now.Add(time.Hour), CreatedAt: now}
	if err := db.CreateOAuthToken(ctx, tok); err != nil {
		t.Fatal(err)
	}
	if gs, _ := db.ListGrants(ctx, ann.ID, now); len(gs) != 1 {
		t.Fatalf("grants %v", gs)
	}
	if err := oauth.RevokeGrants(ctx, db, bob.ID, c.ID, time.Now()); err != nil {
		t.Errorf("bob revoking (nothing of his): %v", err)
	}
	if gs, _ := db.ListGrants(ctx, ann.ID, now); len(gs) != 1 {
		t.Fatal("bob revoked ann's grant")
	}
	if err := oauth.RevokeGrants(ctx, db, ann.ID, c.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	if gs, _ := db.ListGrants(ctx, ann.ID, now); len(gs) != 0 {
		t.Errorf("grants after revoking: %v", gs)
	}
	if err := oauth.RevokeGrants(ctx, db, ann.ID, c.ID, time.Now()); err != nil {
		t.Errorf("revoking again: %v", err)
	}

	// Deletion.
	if err := oauth.DeleteClient(ctx, db, bob.ID, c.ID, now); !ams.IsNotFound(err) {
		t.Errorf("bob deleting ann's client: %v", err)
	}
	if err := oauth.DeleteClient(ctx, db, ann.ID, c.ID, now); err != nil {
		t.Fatal(err)
	}
	if _, err := db.FindOAuthClient(ctx, c.ID); !ams.IsNotFound(err) {
		t.Errorf("deleted client found: %v", err)
	}
	if err := oauth.DeleteClient(ctx, db, ann.ID, c.ID, now); !ams.IsNotFound(err) {
		t.Errorf("deleting again: %v", err)
	}
	// Each change is audited once (the account pages and the CLI call
	// these functions, as the management API does); refused ones are not,
	// and no event shows a secret.
	evs, err := db.ListEvents(ctx, ann.ID, ams.EventFilter{}, ams.ListParams{Limit: 100, Order: ams.OrderAsc})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range evs.Data {
		types = append(types, e.Type)
		if b, _ := json.Marshal(e.Data); strings.Contains(string(b), "ams_cs_") || strings.Contains(string(b), "secret") {
			t.Errorf("%s shows a secret: %s", e.Type, b)
		}
	}
	want := []string{ams.EventOAuthClientCreated, ams.EventOAuthClientCreated, ams.EventOAuthClientSecretRotated, ams.EventOAuthClientDeleted}
	if !slices.Equal(types, want) {
		t.Errorf("events %v, want %v", types, want)
	}
	if bobs, _ := db.ListEvents(ctx, bob.ID, ams.EventFilter{}, ams.ListParams{Limit: 100}); len(bobs.Data) != 0 {
		t.Errorf("bob's events: %d", len(bobs.Data))
	}
}
