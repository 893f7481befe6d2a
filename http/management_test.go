package http_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

// admin is the fixture with an admin key of its account.
type admin struct {
	*fixture
	key string
}

func setupAdmin(t *testing.T) *admin {
	f := setup(t)
	return &admin{fixture: f, key: f.NewKey(f.User, "admin")}
}

// call sends a request with the admin key and checks its status.
func (a *admin) call(status int, method, path, body string, hdr ...string) *response {
	a.T.Helper()
	r := a.Do(method, path, a.key, body, hdr...)
	if r.Status != status {
		a.T.Fatalf("%s %s: %d, want %d: %s", method, path, r.Status, status, r.Body)
	}
	return &response{r.Status, r.Header, r.Body}
}

// adminEvents returns the events of type typ (newest first), read with the
// admin key.
func (a *admin) adminEvents(typ string) []map[string]any {
	a.T.Helper()
	l := a.call(200, "GET", "/v1/events?limit=100&type="+typ, "").json(a.T)
	var out []map[string]any
	for _, e := range l["data"].([]any) {
		out = append(out, e.(map[string]any))
	}
	return out
}

// TestManagementNeedsAdmin: every operation of the management API is
// refused to a credential without admin, with 403 insufficient_scope, and
// changes nothing.
func TestManagementNeedsAdmin(t *testing.T) {
	t.Parallel()
	a := setupAdmin(t)
	kid := a.call(201, "POST", "/v1/keys", `{"name":"k","permissions":["read"]}`).json(t)["id"].(string)
	cid := a.call(201, "POST", "/v1/oauth/clients", `{"name":"c","redirect_uris":["https://example.com/cb"]}`).json(t)["id"].(string)
	before := len(a.adminEvents(""))
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/v1/keys", ""},
		{"POST", "/v1/keys", `{"name":"x","permissions":["read"]}`},
		{"GET", "/v1/keys/" + kid, ""},
		{"POST", "/v1/keys/" + kid + "/revoke", ""},
		{"GET", "/v1/oauth/clients", ""},
		{"POST", "/v1/oauth/clients", `{"name":"x","redirect_uris":["https://example.com/cb"]}`},
		{"GET", "/v1/oauth/clients/" + cid, ""},
		{"POST", "/v1/oauth/clients/" + cid + "/rotate_secret", ""},
		{"DELETE", "/v1/oauth/clients/" + cid, ""},
		{"GET", "/v1/account", ""},
		{"PATCH", "/v1/account", `{"timezone":"Europe/Paris"}`},
	} {
		r := a.do(c.method, c.path, c.body) // read, write, messages, integrations: no admin
		wantError(t, r, 403, "permission_error", "insufficient_scope", "")
		if h := r.header.Get("WWW-Authenticate"); !strings.Contains(h, `insufficient_scope`) || !strings.Contains(h, `scope="admin"`) {
			t.Errorf("%s %s: WWW-Authenticate %q", c.method, c.path, h)
		}
	}
	if got := a.call(200, "GET", "/v1/keys/"+kid, "").json(t); got["status"] != "active" {
		t.Fatalf("the key changed: %v", got)
	}
	a.call(200, "GET", "/v1/oauth/clients/"+cid, "")
	if tz := a.call(200, "GET", "/v1/account", "").json(t)["timezone"]; tz != "UTC" {
		t.Fatalf("the account changed: %v", tz)
	}
	if n := len(a.adminEvents("")); n != before {
		t.Fatalf("refused requests emitted events: %d, then %d", before, n)
	}
}

func TestManagementKeys(t *testing.T) {
	t.Parallel()
	a := setupAdmin(t)
	ctx := context.Background()
	r := a.call(201, "POST", "/v1/keys", `{"name":" nightly export ","permissions":["messages","read"],"expires_at":"2027-01-31T00:00:00Z"}`,
		"Idempotency-Key", "create-1")
	k := r.json(t)
	id, secret := k["id"].(string), k["secret"].(string)
	if !strings.HasPrefix(id, "key_") || !strings.HasPrefix(secret, ams.PrefixSecretKey) || k["object"] != "api_key" || k["name"] != "nightly export" ||
		k["prefix"] != "ams_sk_" || k["last4"] != secret[len(secret)-4:] || k["status"] != "active" || k["expires_at"] != "2027-01-31T00:00:00.000Z" ||
		k["revoked_at"] != nil || k["last_used_at"] != nil || r.header.Get("Location") != "/v1/keys/"+id {
		t.Fatalf("created key: %s (Location %q)", r.body, r.header.Get("Location"))
	}
	if perms, _ := json.Marshal(k["permissions"]); string(perms) != `["read","messages"]` {
		t.Fatalf("permissions %s", perms)
	}
	if cc := r.header.Get("Cache-Control"); cc != "no-store" {
		t.Fatalf("Cache-Control %q", cc)
	}
	// Hashed at rest, shown once: the record never has it; a retry with
	// the same Idempotency-Key replays the answer (the same key and secret,
	// no second key).
	stored, err := a.Data.FindKey(ctx, id)
	if err != nil || stored.Hash != ams.HashSecret(secret) || strings.Contains(stored.Hash, secret) {
		t.Fatalf("stored key %+v %v", stored, err)
	}
	again := a.call(201, "POST", "/v1/keys", `{"name":" nightly export ","permissions":["messages","read"],"expires_at":"2027-01-31T00:00:00Z"}`,
		"Idempotency-Key", "create-1")
	if again.header.Get("Idempotent-Replayed") != "true" || again.json(t)["secret"] != secret || again.json(t)["id"] != id ||
		again.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("the retry did not replay the answer: %v %s", again.header, again.body)
	}
	got := a.call(200, "GET", "/v1/keys/"+id, "")
	if strings.Contains(string(got.body), secret) || strings.Contains(string(got.body), `"secret"`) || strings.Contains(string(got.body), stored.Hash) {
		t.Fatalf("GET shows the secret: %s", got.body)
	}
	// The new key works, with its permissions only.
	if r := a.Do("GET", "/v1/assistants", secret, ""); r.Status != 200 {
		t.Fatalf("new key: %d %s", r.Status, r.Body)
	}
	if r := a.Do("POST", "/v1/assistants", secret, `{"name":"x"}`); r.Status != 403 {
		t.Fatalf("new key writes: %d %s", r.Status, r.Body)
	}

	// The list: cursor-paginated, newest first, the fixture's keys too.
	l := a.call(200, "GET", "/v1/keys?limit=1", "").json(t)
	if ids(l)[0] != id || l["has_more"] != true || l["object"] != "list" {
		t.Fatalf("first page: %v", l)
	}
	l = a.call(200, "GET", "/v1/keys?limit=1&after="+ids(l)[0], "").json(t)
	if len(ids(l)) != 1 || ids(l)[0] == id {
		t.Fatalf("second page: %v", l)
	}
	all := a.call(200, "GET", "/v1/keys?limit=100", "")
	if n := len(ids(all.json(t))); n != 3 || strings.Contains(string(all.body), secret) { // the fixture's two, and the one made here
		t.Fatalf("all keys (%d): %s", n, all.body)
	}

	// Revocation: the key stops working; a second revocation changes
	// nothing and emits nothing.
	rev := a.call(200, "POST", "/v1/keys/"+id+"/revoke", "").json(t)
	if rev["status"] != "revoked" || rev["revoked_at"] != ams.FormatTime(a.Clock.Now()) {
		t.Fatalf("revoked: %v", rev)
	}
	if r := a.Do("GET", "/v1/assistants", secret, ""); r.Status != 401 {
		t.Fatalf("revoked key: %d %s", r.Status, r.Body)
	}
	a.Clock.Add(time.Minute)
	if again := a.call(200, "POST", "/v1/keys/"+id+"/revoke", "{}").json(t); again["revoked_at"] != rev["revoked_at"] {
		t.Fatalf("second revocation: %v", again)
	}
	if r := a.Do("DELETE", "/v1/keys/"+id, a.key, ""); r.Status != 405 || r.Header.Get("Allow") != "GET" {
		t.Fatalf("DELETE /v1/keys/{id}: %d, Allow %q", r.Status, r.Header.Get("Allow"))
	}

	// Audited: one api_key.created per key, one api_key.revoked; no secret
	// or hash in any event.
	created, revoked := a.adminEvents(ams.EventAPIKeyCreated), a.adminEvents(ams.EventAPIKeyRevoked)
	if len(created) != 1 || len(revoked) != 1 { // the key made here, once
		t.Fatalf("events: %d created, %d revoked", len(created), len(revoked))
	}
	d := revoked[0]["data"].(map[string]any)
	if d["id"] != id || d["status"] != "revoked" || d["name"] != "nightly export" || d["last4"] != secret[len(secret)-4:] {
		t.Fatalf("api_key.revoked data: %v", d)
	}
	if d := created[0]["data"].(map[string]any); d["id"] != id || d["status"] != "active" {
		t.Fatalf("api_key.created data: %v", d)
	}
	evs := a.call(200, "GET", "/v1/events?limit=100", "").body
	if strings.Contains(string(evs), secret) || strings.Contains(string(evs), stored.Hash) || strings.Contains(string(evs), `"secret"`) {
		t.Fatalf("an event shows a secret: %s", evs)
	}

	// Another account's key is not found.
	bob := a.NewUser("bob@example.com", ams.PlanStandard)
	bobKey := a.NewKey(bob, "admin")
	a.call(404, "GET", "/v1/keys/"+id+"x", "")
	if r := a.Do("GET", "/v1/keys/"+id, bobKey, ""); r.Status != 404 {
		t.Fatalf("bob reads ann's key: %d", r.Status)
	}
	live := a.call(201, "POST", "/v1/keys", `{"name":"live","permissions":["read"]}`).json(t)["id"].(string)
	if r := a.Do("POST", "/v1/keys/"+live+"/revoke", bobKey, ""); r.Status != 404 {
		t.Fatalf("bob revokes ann's key: %d", r.Status)
	}
	if k, _ := a.Data.FindKey(ctx, live); k.RevokedAt != nil {
		t.Fatal("bob revoked ann's key")
	}
}

// TestManagementKeysBadInput: each wrong field is the documented 400,
// and nothing is stored nor emitted.
func TestManagementKeysBadInput(t *testing.T) {
	t.Parallel()
	a := setupAdmin(t)
	count := func() (int, int) {
		keys, _ := a.Data.ListKeys(context.Background(), a.User.ID)
		return len(keys), len(a.adminEvents(""))
	}
	k0, e0 := count()
	for _, c := range []struct{ body, code, param string }{
		{`{"permissions":["read"]}`, "parameter_missing", "name"},
		{`{"name":"x"}`, "parameter_missing", "permissions"},
		{`{"name":"","permissions":["read"]}`, "parameter_invalid", "name"},
		{`{"name":"` + strings.Repeat("n", 101) + `","permissions":["read"]}`, "parameter_invalid", "name"},
		{`{"name":"x","permissions":[]}`, "parameter_invalid", "permissions"},
		{`{"name":"x","permissions":["root"]}`, "parameter_invalid", "permissions"},
		{`{"name":"x","permissions":"read"}`, "invalid_type", "permissions"},
		{`{"name":"x","permissions":["read"],"expires_at":"2020-01-01T00:00:00Z"}`, "parameter_invalid", "expires_at"},
		{`{"name":"x","permissions":["read"],"expires_at":"tomorrow"}`, "parameter_invalid", "expires_at"},
		{`{"name":"x","permissions":["read"],"secret":"ams_sk_mine"}`, "unknown_parameter", "secret"},
	} {
		r := a.Do("POST", "/v1/keys", a.key, c.body)
		wantError(t, &response{r.Status, r.Header, r.Body}, 400, "invalid_request_error", c.code, c.param)
	}
	if k, e := count(); k != k0 || e != e0 {
		t.Fatalf("bad requests stored %d keys, %d events", k-k0, e-e0)
	}
}

// TestManagementNoEscalation: a credential never creates a key holding
// more than itself. Only admin reaches the API, and admin holds every
// permission, so through the API the rule bites on lifetime: a key that
// expires cannot create one that outlives it. (The permission half is
// account.CheckHeld's, tested in package account with narrower sets.)
func TestManagementNoEscalation(t *testing.T) {
	t.Parallel()
	a := setupAdmin(t)
	ctx := context.Background()
	exp := a.Clock.Now().Add(7 * 24 * time.Hour)
	secret, k := ams.NewAPIKey(a.User.ID, "expiring admin", ams.Permissions{ams.PermAdmin}, a.Clock.Now(), &exp)
	if err := a.Data.CreateKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	before := len(a.adminEvents(ams.EventAPIKeyCreated))
	for _, body := range []string{
		`{"name":"forever","permissions":["read"]}`,
		`{"name":"later","permissions":["read"],"expires_at":"` + exp.Add(time.Second).Format(time.RFC3339) + `"}`,
	} {
		r := a.Do("POST", "/v1/keys", secret, body)
		wantError(t, &response{r.Status, r.Header, r.Body}, 403, "permission_error", "lifetime_not_held", "expires_at")
		if h := r.Header.Get("WWW-Authenticate"); h != "" {
			t.Fatalf("WWW-Authenticate %q on a refused escalation", h)
		}
	}
	if n := len(a.adminEvents(ams.EventAPIKeyCreated)); n != before {
		t.Fatal("a refused key was created")
	}
	// No later than the creator: allowed, with any permission (admin
	// holds them all).
	r := a.Do("POST", "/v1/keys", secret, `{"name":"within","permissions":["admin","integrations"],"expires_at":"`+exp.Format(time.RFC3339)+`"}`)
	if r.Status != 201 {
		t.Fatalf("key within the creator's life: %d %s", r.Status, r.Body)
	}
	// The account holder's own admin key, which never expires, may.
	a.call(201, "POST", "/v1/keys", `{"name":"forever","permissions":["read"]}`)
}

func TestManagementOAuthClients(t *testing.T) {
	t.Parallel()
	a := setupAdmin(t)
	ctx := context.Background()
	r := a.call(201, "POST", "/v1/oauth/clients", `{"name":"Planner","redirect_uris":["https://planner.example/cb","http://localhost:8000/cb"]}`)
	c := r.json(t)
	id, secret := c["id"].(string), c["client_secret"].(string)
	if !strings.HasPrefix(id, "cli_") || !strings.HasPrefix(secret, "ams_cs_") || c["public"] != false || c["object"] != "oauth_client" ||
		r.header.Get("Location") != "/v1/oauth/clients/"+id || r.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("created client: %s", r.body)
	}
	if stored, err := a.Data.FindOAuthClient(ctx, id); err != nil || stored.SecretHash != ams.HashSecret(secret) {
		t.Fatalf("stored client %+v %v", stored, err)
	}
	pub := a.call(201, "POST", "/v1/oauth/clients", `{"name":"Phone","redirect_uris":["https://phone.example/cb"],"public":true}`).json(t)
	if pub["client_secret"] != nil || pub["public"] != true {
		t.Fatalf("public client: %v", pub)
	}
	l := a.call(200, "GET", "/v1/oauth/clients?limit=1", "").json(t)
	if ids(l)[0] != pub["id"] || l["has_more"] != true {
		t.Fatalf("first page: %v", l)
	}
	if l := a.call(200, "GET", "/v1/oauth/clients?limit=1&after="+pub["id"].(string), "").json(t); ids(l)[0] != id || l["has_more"] != false {
		t.Fatalf("second page: %v", l)
	}
	got := a.call(200, "GET", "/v1/oauth/clients/"+id, "")
	if strings.Contains(string(got.body), "secret") {
		t.Fatalf("GET shows a secret: %s", got.body)
	}

	rot := a.call(200, "POST", "/v1/oauth/clients/"+id+"/rotate_secret", "")
	newSecret, _ := rot.json(t)["client_secret"].(string)
	if !strings.HasPrefix(newSecret, "ams_cs_") || newSecret == secret || rot.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("rotated: %s", rot.body)
	}
	if stored, _ := a.Data.FindOAuthClient(ctx, id); stored.SecretHash != ams.HashSecret(newSecret) {
		t.Fatal("the new secret is not the stored one")
	}
	pr := a.Do("POST", "/v1/oauth/clients/"+pub["id"].(string)+"/rotate_secret", a.key, "")
	wantError(t, &response{pr.Status, pr.Header, pr.Body}, 409, "invalid_request_error", "public_client", "")

	// Bad input stores nothing.
	before := len(ids(a.call(200, "GET", "/v1/oauth/clients", "").json(t)))
	for _, c := range []struct{ body, code, param string }{
		{`{"redirect_uris":["https://x.example/cb"]}`, "parameter_missing", "name"},
		{`{"name":"x"}`, "parameter_missing", "redirect_uris"},
		{`{"name":"x","redirect_uris":[]}`, "parameter_invalid", "redirect_uris"},
		{`{"name":"x","redirect_uris":["http://evil.example/cb"]}`, "parameter_invalid", "redirect_uris"},
		{`{"name":"x","redirect_uris":["https://x.example/cb#f"]}`, "parameter_invalid", "redirect_uris"},
		{`{"name":"x","redirect_uris":["https://x.example/cb"],"public":"yes"}`, "invalid_type", "public"},
	} {
		r := a.Do("POST", "/v1/oauth/clients", a.key, c.body)
		wantError(t, &response{r.Status, r.Header, r.Body}, 400, "invalid_request_error", c.code, c.param)
	}
	if n := len(ids(a.call(200, "GET", "/v1/oauth/clients", "").json(t))); n != before {
		t.Fatalf("bad requests stored %d clients", n-before)
	}

	bob := a.NewUser("bob@example.com", ams.PlanStandard)
	bobKey := a.NewKey(bob, "admin")
	for _, m := range []struct{ method, path string }{{"GET", "/v1/oauth/clients/" + id}, {"POST", "/v1/oauth/clients/" + id + "/rotate_secret"}, {"DELETE", "/v1/oauth/clients/" + id}} {
		if r := a.Do(m.method, m.path, bobKey, ""); r.Status != 404 {
			t.Fatalf("bob %s %s: %d", m.method, m.path, r.Status)
		}
	}
	a.call(204, "DELETE", "/v1/oauth/clients/"+id, "")
	a.call(404, "GET", "/v1/oauth/clients/"+id, "")
	a.call(404, "DELETE", "/v1/oauth/clients/"+id, "")

	// Audited, without secrets.
	for typ, n := range map[string]int{ams.EventOAuthClientCreated: 2, ams.EventOAuthClientSecretRotated: 1, ams.EventOAuthClientDeleted: 1} {
		evs := a.adminEvents(typ)
		if len(evs) != n {
			t.Fatalf("%s: %d events, want %d", typ, len(evs), n)
		}
		if typ != ams.EventOAuthClientCreated && evs[0]["data"].(map[string]any)["id"] != id {
			t.Fatalf("%s data: %v", typ, evs[0]["data"])
		}
	}
	all := a.call(200, "GET", "/v1/events?limit=100", "").body
	if strings.Contains(string(all), secret) || strings.Contains(string(all), newSecret) || strings.Contains(string(all), "secret_hash") {
		t.Fatalf("an event shows a secret: %s", all)
	}
}

func TestManagementAccount(t *testing.T) {
	t.Parallel()
	a := setupAdmin(t)
	acct := a.call(200, "GET", "/v1/account", "").json(t)
	notify, _ := acct["email_notifications"].(map[string]any)
	if acct["id"] != a.User.ID || acct["object"] != "account" || acct["email"] != a.User.Email || acct["plan"] != "standard" ||
		acct["timezone"] != "UTC" || notify["key_reminders"] != true || notify["webhook_failing"] != true || acct["approved"] != true {
		t.Fatalf("account: %v", acct)
	}
	if l := acct["limits"].(map[string]any); l["requests_per_minute"] != 60.0 || l["requests_per_day"] != 10000.0 {
		t.Fatalf("limits: %v", l)
	}
	if strings.Contains(string(a.call(200, "GET", "/v1/account", "").body), "password") {
		t.Fatal("the account shows its password hash")
	}
	for _, c := range []struct{ body, code, param string }{
		{`{"timezone":"Mars/Olympus_Mons"}`, "parameter_invalid", "timezone"},
		{`{"timezone":""}`, "parameter_invalid", "timezone"},
		{`{"timezone":"Local"}`, "parameter_invalid", "timezone"},
		{`{"email_notifications":{"key_reminders":"no"}}`, "invalid_type", "email_notifications.key_reminders"},
		{`{"email_notifications":{"sms":true}}`, "unknown_parameter", "sms"},
		{`{"email_notifications":null}`, "invalid_type", "email_notifications"},
		{`{"plan":"enterprise"}`, "unknown_parameter", "plan"},
	} {
		r := a.Do("PATCH", "/v1/account", a.key, c.body)
		wantError(t, &response{r.Status, r.Header, r.Body}, 400, "invalid_request_error", c.code, c.param)
	}
	if u, _ := a.Data.FindUser(context.Background(), a.User.ID); u.Timezone != "UTC" || len(a.adminEvents(ams.EventAccountUpdated)) != 0 {
		t.Fatalf("a refused update stored something: %+v", u)
	}

	a.Clock.Add(time.Minute)
	up := a.call(200, "PATCH", "/v1/account", `{"timezone":"Europe/Paris","email_notifications":{"key_reminders":false}}`).json(t)
	notify = up["email_notifications"].(map[string]any)
	if up["timezone"] != "Europe/Paris" || notify["key_reminders"] != false || notify["webhook_failing"] != true || up["updated_at"] == acct["updated_at"] {
		t.Fatalf("updated: %v", up)
	}
	if u, _ := a.Data.FindUser(context.Background(), a.User.ID); !u.KeyReminderEmailsOff || u.WebhookFailingEmailsOff || u.Timezone != "Europe/Paris" {
		t.Fatalf("stored: %+v", u)
	}
	evs := a.adminEvents(ams.EventAccountUpdated)
	if len(evs) != 1 {
		t.Fatalf("account.updated events: %d", len(evs))
	}
	d := evs[0]["data"].(map[string]any)
	prev, _ := json.Marshal(d["previous_attributes"])
	if d["timezone"] != "Europe/Paris" || string(prev) != `{"email_notifications":{"key_reminders":true},"timezone":"UTC"}` {
		t.Fatalf("account.updated data: %v (previous %s)", d, prev)
	}
	// The same values again change nothing and emit nothing.
	a.call(200, "PATCH", "/v1/account", `{"timezone":"Europe/Paris","email_notifications":{"key_reminders":false}}`)
	a.call(200, "PATCH", "/v1/account", `{}`)
	if n := len(a.adminEvents(ams.EventAccountUpdated)); n != 1 {
		t.Fatalf("no-op updates emitted: %d events", n)
	}
	a.call(200, "PATCH", "/v1/account", `{"email_notifications":{"webhook_failing":false,"key_reminders":true}}`)
	if n := len(a.adminEvents(ams.EventAccountUpdated)); n != 2 {
		t.Fatalf("account.updated events: %d", n)
	}
}
