package http_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/amstest"
	"github.com/amsdev/ams/sqlite"
)

// dyingStore is the fixture's database, whose FinishIdempotent may be
// made to do nothing: the process "dies" after its change committed and
// before it stored the answer it gave.
type dyingStore struct {
	*sqlite.DB
	dead atomic.Bool
}

func (s *dyingStore) FinishIdempotent(ctx context.Context, rec *ams.IdempotencyRecord) error {
	if s.dead.Load() {
		return nil
	}
	return s.DB.FinishIdempotent(ctx, rec)
}

// TestIdempotentAnswerStoredWithChange (issue 26, M2 and point 5): a
// keyed POST whose process dies after its change committed, before it
// stores its answer, is never made again by a retry, and the retry
// replays the same status, Location and fields as the first answer: made
// in the transaction of the change from its event (tasks, their
// completion, calendar events and their restoring, key revocation) or
// from the record its service kept (assistants, conversations, actions,
// webhooks, pings, recoveries, redeliveries); none makes a second record.
// Without the crash, the replay is the first answer byte for byte. A
// request that committed nothing and failed frees its key; one whose
// answer showed a secret runs again, as documented.
func TestIdempotentAnswerStoredWithChange(t *testing.T) {
	t.Parallel()
	var st *dyingStore
	f := &fixture{amstest.New(t, amstest.WithStore(func(db *sqlite.DB) ams.Store {
		st = &dyingStore{DB: db}
		return st
	}))}
	ctx := context.Background()
	admin, ak := ams.NewAPIKey(f.User.ID, "admin", ams.Permissions{ams.PermAdmin}, f.Clock.Now(), nil)
	if err := f.Store.CreateKey(ctx, ak); err != nil {
		t.Fatal(err)
	}
	_, victim := ams.NewAPIKey(f.User.ID, "to revoke", ams.Permissions{ams.PermRead}, f.Clock.Now(), nil)
	if err := f.Store.CreateKey(ctx, victim); err != nil {
		t.Fatal(err)
	}
	task := f.do("POST", "/v1/tasks", `{"assistant_id":"`+f.Assistant.ID+`","title":"to complete"}`).json(t)["id"].(string)
	deleted := f.do("POST", "/v1/calendar/events", `{"assistant_id":"`+f.Assistant.ID+`","title":"to restore","starts_at":"2026-11-24T15:00:00Z"}`).json(t)["id"].(string)
	if r := f.do("DELETE", "/v1/calendar/events/"+deleted, ""); r.status != 204 {
		t.Fatalf("delete calendar event: %d %s", r.status, r.body)
	}
	hook := f.do("POST", "/v1/webhooks", `{"url":"`+hookURL+`","events":["task.created"],"secret":"0123456789abcdef"}`).json(t)["id"].(string)
	// A delivery to redeliver: the hook's first job, attempted.
	f.do("POST", "/v1/tasks", `{"assistant_id":"`+f.Assistant.ID+`","title":"delivered"}`)
	jobs, err := f.Store.ClaimJobs(ctx, f.Clock.Now().Add(time.Hour), ams.Claim{Lease: time.Minute, Limit: 1, PerWebhook: 1})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %d jobs, %v", len(jobs), err)
	}
	j, code := jobs[0], 200
	dlv := &ams.Delivery{ID: ams.NewID(ams.PrefixDelivery), UserID: j.UserID, WebhookID: j.WebhookID, EventID: j.Event.ID, EventType: j.Event.Type,
		Attempt: 1, URL: j.URL, Success: true, StatusCode: &code, DurationMS: 2, ResponseBody: "ok", CreatedAt: f.Clock.Now()}
	if _, err := f.Store.RecordAttempt(ctx, &ams.AttemptResult{Job: j, Delivery: dlv, Outcome: ams.JobSucceeded}, f.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	client := f.Do("POST", "/v1/oauth/clients", admin, `{"name":"to rotate","redirect_uris":["https://app.example.com/cb"]}`).JSON(t)["id"].(string)
	f.Clock.Add(time.Minute) // a new minute of the rate limit
	count := func(path string) int {
		t.Helper()
		r := f.Do("GET", path+"?limit=100", admin, "")
		if r.Status != 200 {
			t.Fatalf("GET %s: %d %s", path, r.Status, r.Body)
		}
		return len(r.JSON(t)["data"].([]any))
	}
	lists := []string{"/v1/tasks", "/v1/calendar/events", "/v1/assistants", "/v1/conversations", "/v1/webhooks",
		"/v1/assistants/" + f.Assistant.ID + "/actions", "/v1/keys", "/v1/oauth/clients", "/v1/integrations", "/v1/events"}
	before := map[string]int{}
	for _, l := range lists {
		before[l] = count(l)
	}
	pending := f.pending()

	st.dead.Store(true)
	f.Clock.Add(time.Minute)
	since := f.Clock.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	for i, c := range []struct{ path, body string }{
		{"/v1/tasks", `{"assistant_id":"` + f.Assistant.ID + `","title":"keyed","metadata":{"a":"<&>"}}`},
		{"/v1/tasks/" + task + "/complete", ``},
		{"/v1/calendar/events", `{"assistant_id":"` + f.Assistant.ID + `","title":"keyed","starts_at":"2026-11-23T15:00:00Z"}`},
		{"/v1/calendar/events/" + deleted + "/restore", ``},
		{"/v1/keys/" + victim.ID + "/revoke", ``},
		{"/v1/assistants", `{"name":"keyed <&>","model":"builtin","metadata":{"k":"v"}}`},
		{"/v1/conversations", `{"assistant_id":"` + f.Assistant.ID + `","title":"keyed"}`},
		{"/v1/assistants/" + f.Assistant.ID + "/actions", `{"type":"create_task","input":{"title":"by action"}}`},
		{"/v1/assistants/" + f.Assistant.ID + "/actions", `{"type":"list_tasks","input":{}}`},
		{"/v1/webhooks", `{"url":"` + hookURL + `","events":["task.created","task.deleted"],"secret":"0123456789abcdef","metadata":{"k":"v"}}`},
		{"/v1/webhooks/" + hook + "/ping", ``},
		{"/v1/webhooks/" + hook + "/recover", `{"since":"` + since + `"}`},
		{"/v1/webhooks/" + hook + "/deliveries/" + dlv.ID + "/redeliver", ``},
		{"/v1/keys", `{"name":"keyed","permissions":["read"]}`},
		{"/v1/oauth/clients", `{"name":"keyed","redirect_uris":["https://app.example.com/cb"]}`},
		{"/v1/oauth/clients", `{"name":"keyed public","redirect_uris":["https://app.example.com/cb"],"public":true}`},
		{"/v1/oauth/clients/" + client + "/rotate_secret", ``},
		{"/v1/calendar/feed", ``},
	} {
		key := "dies-" + string(rune('a'+i))
		first := f.Do("POST", c.path, admin, c.body, "Idempotency-Key", key)
		if first.Status >= 300 {
			t.Fatalf("%s: %d %s", c.path, first.Status, first.Body)
		}
		again := f.Do("POST", c.path, admin, c.body, "Idempotency-Key", key)
		if again.Status != first.Status || again.Header.Get("Idempotent-Replayed") != "true" ||
			again.Header.Get("Location") != first.Header.Get("Location") || again.Header.Get("Cache-Control") != first.Header.Get("Cache-Control") ||
			!reflect.DeepEqual(again.JSON(t), first.JSON(t)) {
			t.Errorf("%s: retry after the answer was lost: %d %v %s\nfirst: %d %v %s", c.path, again.Status, again.Header, again.Body,
				first.Status, first.Header, first.Body)
		}
	}
	st.dead.Store(false)
	f.Clock.Add(time.Minute)
	// Each change was made once: one more task by the API and one by the
	// action, one calendar event created and one restored, one assistant,
	// conversation and webhook, one action stored by each tool.
	want := map[string]int{"/v1/tasks": 2, "/v1/calendar/events": 2, "/v1/assistants": 1, "/v1/conversations": 1, "/v1/webhooks": 1,
		"/v1/assistants/" + f.Assistant.ID + "/actions": 2, "/v1/keys": 1, "/v1/oauth/clients": 2, "/v1/integrations": 1}
	for _, l := range lists[:len(lists)-1] {
		if n := count(l); n != before[l]+want[l] {
			t.Errorf("%s: %d records after the retries, want %d", l, n, before[l]+want[l])
		}
	}
	// The ping and the task.created of the API and of the action, each
	// queued once for the hook, the recovery's and the redelivery's jobs
	// once each.
	if n := f.pending(); n <= pending {
		t.Errorf("%d jobs pending, want more than %d", n, pending)
	}
	pings := 0
	for _, e := range f.Do("GET", "/v1/events?limit=100", admin, "").JSON(t)["data"].([]any) {
		if e.(map[string]any)["type"] == ams.EventWebhookPing {
			pings++
		}
	}
	if pings != 1 {
		t.Errorf("%d webhook.ping events, want 1", pings)
	}

	// A cancel whose answer was lost is run again: the turn has ended, so
	// it answers the turn as it is, and keeps that answer.
	turn := f.do("POST", "/v1/messages", `{"assistant_id":"`+f.Assistant.ID+`","message":"to cancel"}`).header.Get("X-Turn-Id")
	path := "/v1/turns/" + turn + "/cancel"
	sum := sha256.Sum256([]byte("POST " + path + "\n"))
	lost := &ams.IdempotencyRecord{UserID: f.User.ID, Key: "lost", RequestHash: hex.EncodeToString(sum[:]), CreatedAt: f.Clock.Now()}
	if old, err := f.Store.BeginIdempotent(ctx, lost); err != nil || old != nil {
		t.Fatalf("begin: %v %v", old, err)
	}
	lost.Done = true
	if err := f.Store.FinishIdempotent(ctx, lost); err != nil {
		t.Fatal(err)
	}
	rerun := f.Do("POST", path, admin, "", "Idempotency-Key", "lost")
	replayed := f.Do("POST", path, admin, "", "Idempotency-Key", "lost")
	if rerun.Status != 200 || rerun.JSON(t)["id"] != turn || rerun.Header.Get("Idempotent-Replayed") != "" ||
		replayed.Status != 200 || replayed.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(replayed.Body, rerun.Body) {
		t.Fatalf("cancel after a lost answer: %d %v %s, then %d %v %s", rerun.Status, rerun.Header, rerun.Body, replayed.Status, replayed.Header, replayed.Body)
	}
	// Another request under the key is still refused.
	r := f.Do("POST", path, admin, "{}", "Idempotency-Key", "lost")
	wantError(t, &response{r.Status, r.Header, r.Body}, 409, "invalid_request_error", "idempotency_key_reused", "")

	// Without a crash the first answer is replayed as it was.
	tb := `{"assistant_id":"` + f.Assistant.ID + `","title":"lives"}`
	first := f.do("POST", "/v1/tasks", tb, "Idempotency-Key", "lives")
	again := f.do("POST", "/v1/tasks", tb, "Idempotency-Key", "lives")
	if first.status != 201 || again.status != 201 || !bytes.Equal(first.body, again.body) || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %d %s, then %d %s", first.status, first.body, again.status, again.body)
	}
	// A failure that committed nothing frees the key.
	bad := `{"assistant_id":"ast_missing","title":"x"}`
	wantError(t, f.do("POST", "/v1/tasks", bad, "Idempotency-Key", "fails"), 404, "invalid_request_error", "resource_missing", "assistant_id")
	if r := f.do("POST", "/v1/tasks", tb, "Idempotency-Key", "fails"); r.status != 201 || r.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("after a failure the key is free: %d %s", r.status, r.body)
	}
	// An answer with a secret is kept, sealed: a retry shows the same key
	// and secret, and makes no other key.
	keys := count("/v1/keys")
	kb := `{"name":"k","permissions":["read"]}`
	k1 := f.Do("POST", "/v1/keys", admin, kb, "Idempotency-Key", "secret")
	k2 := f.Do("POST", "/v1/keys", admin, kb, "Idempotency-Key", "secret")
	if k1.Status != 201 || k2.Status != 201 || !bytes.Equal(k1.Body, k2.Body) || k2.Header.Get("Cache-Control") != "no-store" ||
		k2.Header.Get("Idempotent-Replayed") != "true" || count("/v1/keys") != keys+1 {
		t.Fatalf("keys: %d %v %s, then %d %v %s", k1.Status, k1.Header, k1.Body, k2.Status, k2.Header, k2.Body)
	}
	secret := k1.JSON(t)["secret"].(string)
	if r := f.Do("GET", "/v1/assistants", secret, ""); r.Status != 200 {
		t.Fatalf("the replayed key does not work: %d %s", r.Status, r.Body)
	}
	for _, name := range []string{st.Path(), st.Path() + "-wal"} {
		raw, err := os.ReadFile(name)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if bytes.Contains(raw, []byte(secret)) || bytes.Contains(raw, []byte(secret[len(secret)-20:])) {
			t.Fatalf("the key's secret is in %s in the clear", name)
		}
	}
}
