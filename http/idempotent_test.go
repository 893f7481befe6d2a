package http_test

import (
	"bytes"
	"context"
	"reflect"
	"sync/atomic"
	"testing"

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

// TestIdempotentAnswerStoredWithChange (issue 26, M2): a keyed POST whose
// process dies after its change committed, before it stores its answer,
// is never made again by a retry: a POST whose change's event carries its
// answer (tasks, their completion, calendar events, key revocation)
// replays the same status, Location and fields as the first answer; any
// other POST (here an assistant) answers 409 idempotency_key_answer_lost;
// neither makes a second record. Without the crash, the replay is the
// first answer byte for byte. A request that committed nothing and failed
// frees its key; one whose answer showed a secret runs again, as
// documented.
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
	count := func(path string) int {
		t.Helper()
		r := f.Do("GET", path+"?limit=100", admin, "")
		if r.Status != 200 {
			t.Fatalf("GET %s: %d %s", path, r.Status, r.Body)
		}
		return len(r.JSON(t)["data"].([]any))
	}
	tasks, events := count("/v1/tasks"), count("/v1/calendar/events")

	st.dead.Store(true)
	for i, c := range []struct{ path, body string }{
		{"/v1/tasks", `{"assistant_id":"` + f.Assistant.ID + `","title":"keyed","metadata":{"a":"<&>"}}`},
		{"/v1/tasks/" + task + "/complete", ``},
		{"/v1/calendar/events", `{"assistant_id":"` + f.Assistant.ID + `","title":"keyed","starts_at":"2026-11-23T15:00:00Z"}`},
		{"/v1/keys/" + victim.ID + "/revoke", ``},
	} {
		key := "dies-" + string(rune('a'+i))
		first := f.Do("POST", c.path, admin, c.body, "Idempotency-Key", key)
		if first.Status >= 300 {
			t.Fatalf("%s: %d %s", c.path, first.Status, first.Body)
		}
		again := f.Do("POST", c.path, admin, c.body, "Idempotency-Key", key)
		if again.Status != first.Status || again.Header.Get("Idempotent-Replayed") != "true" ||
			again.Header.Get("Location") != first.Header.Get("Location") || !reflect.DeepEqual(again.JSON(t), first.JSON(t)) {
			t.Errorf("%s: retry after the answer was lost: %d %v %s\nfirst: %d %v %s", c.path, again.Status, again.Header, again.Body,
				first.Status, first.Header, first.Body)
		}
	}
	if n := count("/v1/tasks"); n != tasks+1 {
		t.Errorf("%d tasks, want %d", n, tasks+1)
	}
	if n := count("/v1/calendar/events"); n != events+1 {
		t.Errorf("%d calendar events, want %d", n, events+1)
	}
	assistants := count("/v1/assistants")
	body := `{"name":"keyed","model":"builtin"}`
	if r := f.Do("POST", "/v1/assistants", admin, body, "Idempotency-Key", "dies-asst"); r.Status != 201 {
		t.Fatalf("create assistant: %d %s", r.Status, r.Body)
	}
	wantError(t, f.do("POST", "/v1/assistants", body, "Idempotency-Key", "dies-asst"), 409, "invalid_request_error", "idempotency_key_answer_lost", "")
	if n := count("/v1/assistants"); n != assistants+1 {
		t.Errorf("%d assistants after the retry, want %d", n, assistants+1)
	}
	st.dead.Store(false)

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
	// An answer with a secret is not kept: a retry makes another key.
	kb := `{"name":"k","permissions":["read"]}`
	k1 := f.Do("POST", "/v1/keys", admin, kb, "Idempotency-Key", "secret")
	k2 := f.Do("POST", "/v1/keys", admin, kb, "Idempotency-Key", "secret")
	if k1.Status != 201 || k2.Status != 201 || k1.JSON(t)["id"] == k2.JSON(t)["id"] {
		t.Fatalf("keys: %d %s, then %d %s", k1.Status, k1.Body, k2.Status, k2.Body)
	}
}
