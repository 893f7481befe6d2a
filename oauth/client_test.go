package oauth_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/oauth"
	"github.com/amsdev/ams/sqlite"
)

// TestCreateClient exercises oauth.CreateClient, what `ams oauth-clients
// create` runs.
func TestCreateClient(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ams.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
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
