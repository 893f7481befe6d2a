package http_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/amstest"
	"github.com/amsdev/ams/internal/testing/pgtest"
	"github.com/amsdev/ams/internal/testing/wait"
)

// Conversations as resources, metadata and the deletion events over HTTP,
// on SQLite and on PostgreSQL (when AMS_TEST_DATABASE_URL is set).

func onBothEngines(t *testing.T, fn func(t *testing.T, f *fixture)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, &fixture{amstest.New(t)}) })
	t.Run("postgres", func(t *testing.T) { fn(t, &fixture{amstest.New(t, amstest.OnStore(pgtest.Open(t)))}) })
}

// eventsN returns the data of the n events of type typ, newest first,
// waiting for them to be listed (on PostgreSQL an event is listed a
// moment after its commit); fails on more or fewer. It waits on the store,
// then reads the API once: polling the API would count against the
// account's 60 requests a minute on a slow machine.
func (f *fixture) eventsN(typ string, n int) []map[string]any {
	f.T.Helper()
	wait.Until(func() bool {
		pg, err := f.Data.ListEvents(context.Background(), f.User.ID, ams.EventFilter{Type: typ}, ams.ListParams{Limit: 100})
		if err != nil {
			f.T.Fatal(err)
		}
		return len(pg.Data) >= n
	})
	got := f.events(typ)
	if len(got) != n {
		f.T.Fatalf("%d %s events, want %d: %v", len(got), typ, n, got)
	}
	return got
}

func TestConversationResources(t *testing.T) {
	t.Parallel()
	onBothEngines(t, func(t *testing.T, f *fixture) {
		ast := f.Assistant.ID
		body := fmt.Sprintf(`{"assistant_id":%q,"title":"  Trip planning ","metadata":{"crm":"T-1","empty":""}}`, ast)
		c := f.create("/v1/conversations", body)
		id := c["id"].(string)
		if !strings.HasPrefix(id, "conv_") || c["object"] != "conversation" || c["assistant_id"] != ast || c["title"] != "Trip planning" ||
			c["message_count"] != 0.0 || fmt.Sprint(c["metadata"]) != "map[crm:T-1]" {
			t.Fatalf("created: %v", c)
		}
		sameRecord(t, f.ok(200, "GET", "/v1/conversations/"+id, ""), c)

		// Idempotency-Key on the new POST: a replay answers the same
		// conversation, another body with the key is 409.
		r1 := f.do("POST", "/v1/conversations", fmt.Sprintf(`{"assistant_id":%q}`, ast), "Idempotency-Key", "conv-1")
		r2 := f.do("POST", "/v1/conversations", fmt.Sprintf(`{"assistant_id":%q}`, ast), "Idempotency-Key", "conv-1")
		if r1.status != 201 || r2.status != 201 || r2.header.Get("Idempotent-Replayed") != "true" || r1.json(t)["id"] != r2.json(t)["id"] {
			t.Fatalf("idempotent create: %d %s / %d %s", r1.status, r1.body, r2.status, r2.body)
		}
		if r := f.do("POST", "/v1/conversations", fmt.Sprintf(`{"assistant_id":%q,"title":"x"}`, ast), "Idempotency-Key", "conv-1"); r.status != 409 {
			t.Fatalf("same key, another body: %d %s", r.status, r.body)
		}

		// Messages go into it; metadata on POST /v1/messages is the
		// inbound message's, in its message.created too.
		f.Clock.Add(time.Minute)
		r := f.do("POST", "/v1/messages", fmt.Sprintf(`{"assistant_id":%q,"conversation_id":%q,"message":"Remind me to call Bob tomorrow at 9","metadata":{"source":"sms"}}`, ast, id))
		if r.status != 201 {
			t.Fatalf("send: %d %s", r.status, r.body)
		}
		reply := r.json(t)
		if reply["conversation_id"] != id || fmt.Sprint(reply["metadata"]) != "map[]" {
			t.Fatalf("reply: %v", reply)
		}
		msgs := f.ok(200, "GET", "/v1/conversations/"+id+"/messages?order=asc", "")["data"].([]any)
		if len(msgs) != 2 || fmt.Sprint(msgs[0].(map[string]any)["metadata"]) != "map[source:sms]" {
			t.Fatalf("messages: %v", msgs)
		}
		created := f.eventsN("message.created", 2)
		if fmt.Sprint(created[1]["metadata"]) != "map[source:sms]" || fmt.Sprint(created[0]["metadata"]) != "map[]" {
			t.Fatalf("message.created data: %v", created)
		}
		if c := f.ok(200, "GET", "/v1/conversations/"+id, ""); c["title"] != "Trip planning" || c["message_count"] != 2.0 {
			t.Fatalf("after a turn: %v", c)
		}

		// PATCH: title and a metadata merge (null and "" remove).
		f.Clock.Add(time.Minute)
		c = f.ok(200, "PATCH", "/v1/conversations/"+id, `{"title":"Lisbon","metadata":{"crm":null,"stage":"2","gone":""}}`)
		if c["title"] != "Lisbon" || fmt.Sprint(c["metadata"]) != "map[stage:2]" || c["updated_at"] != "2026-11-21T10:02:00.000Z" {
			t.Fatalf("patched: %v", c)
		}
		f.Clock.Add(time.Minute)
		if same := f.ok(200, "PATCH", "/v1/conversations/"+id, `{"metadata":{"stage":"2"}}`); same["updated_at"] != c["updated_at"] {
			t.Fatalf("a no-op PATCH moved updated_at: %v", same)
		}
		sameRecord(t, f.ok(200, "GET", "/v1/conversations/"+id, ""), c)

		// The actions of the conversation: conversation_id filters them.
		actions := "/v1/assistants/" + ast + "/actions"
		acts := f.ok(200, "GET", actions+"?conversation_id="+id, "")["data"].([]any)
		if len(acts) != 1 || acts[0].(map[string]any)["conversation_id"] != id {
			t.Fatalf("actions of the conversation: %v", acts)
		}
		f.ok(201, "POST", actions, `{"type":"list_tasks","input":{}}`) // run directly: no conversation
		if n := len(f.ok(200, "GET", actions, "")["data"].([]any)); n != 2 {
			t.Fatalf("%d actions in all", n)
		}
		if got := f.ok(200, "GET", actions+"?conversation_id=conv_nothere0000000000000000", "")["data"].([]any); len(got) != 0 {
			t.Fatalf("actions of another conversation: %v", got)
		}
		wantError(t, f.do("GET", actions+"?conversation_id=task_x", ""), 400, "invalid_request_error", "parameter_invalid", "conversation_id")

		// Refusals, nothing stored.
		nconv := len(f.ok(200, "GET", "/v1/conversations?limit=100", "")["data"].([]any))
		for _, c := range []struct {
			method, path, body string
			status             int
			code, param        string
		}{
			{"POST", "/v1/conversations", `{"title":"x"}`, 400, "parameter_missing", "assistant_id"},
			{"POST", "/v1/conversations", `{"assistant_id":"conv_x"}`, 400, "parameter_invalid", "assistant_id"},
			{"POST", "/v1/conversations", `{"assistant_id":"ast_nothere000000000000000"}`, 404, "resource_missing", "assistant_id"},
			{"POST", "/v1/conversations", fmt.Sprintf(`{"assistant_id":%q,"title":%q}`, ast, strings.Repeat("t", 201)), 400, "parameter_invalid", "title"},
			{"POST", "/v1/conversations", fmt.Sprintf(`{"assistant_id":%q,"message_count":3}`, ast), 400, "unknown_parameter", "message_count"},
			{"PATCH", "/v1/conversations/" + id, fmt.Sprintf(`{"assistant_id":%q}`, ast), 400, "parameter_invalid", "assistant_id"},
			{"PATCH", "/v1/conversations/" + id, `{"metadata":{"a":1}}`, 400, "parameter_invalid", "metadata.a"},
			{"PATCH", "/v1/conversations/conv_nothere000000000000000", `{"title":"x"}`, 404, "resource_missing", ""},
		} {
			wantError(t, f.do(c.method, c.path, c.body), c.status, "invalid_request_error", c.code, c.param)
		}
		if n := len(f.ok(200, "GET", "/v1/conversations?limit=100", "")["data"].([]any)); n != nconv {
			t.Fatalf("refused requests stored conversations: %d, was %d", n, nconv)
		}

		// Permissions: messages (or admin) to write, read to read.
		reader := f.NewKey(f.User, "read")
		if r := f.Do("POST", "/v1/conversations", reader, fmt.Sprintf(`{"assistant_id":%q}`, ast)); r.Status != 403 {
			t.Fatalf("POST with read: %d", r.Status)
		}
		if r := f.Do("DELETE", "/v1/conversations/"+id, reader, ""); r.Status != 403 {
			t.Fatalf("DELETE with read: %d", r.Status)
		}
		if r := f.Do("GET", "/v1/conversations/"+id, reader, ""); r.Status != 200 {
			t.Fatalf("GET with read: %d", r.Status)
		}

		// DELETE: the messages go with it, one message.deleted each, in
		// the deletion's transaction; the actions keep their
		// conversation_id.
		f.Clock.Add(time.Minute)
		f.ok(204, "DELETE", "/v1/conversations/"+id, "")
		wantError(t, f.do("GET", "/v1/conversations/"+id, ""), 404, "invalid_request_error", "resource_missing", "")
		wantError(t, f.do("GET", "/v1/messages/"+reply["id"].(string), ""), 404, "invalid_request_error", "resource_missing", "")
		wantError(t, f.do("DELETE", "/v1/conversations/"+id, ""), 404, "invalid_request_error", "resource_missing", "")
		del := f.eventsN("message.deleted", 2)
		seen := map[any]bool{}
		for _, d := range del {
			if d["conversation_id"] != id {
				t.Fatalf("message.deleted of another conversation: %v", d)
			}
			seen[d["message_id"]] = true
		}
		if !seen[msgs[0].(map[string]any)["id"]] || !seen[msgs[1].(map[string]any)["id"]] {
			t.Fatalf("message.deleted events %v, want the conversation's two messages", del)
		}
		if got := f.ok(200, "GET", actions+"?conversation_id="+id, "")["data"].([]any); len(got) != 1 {
			t.Fatalf("the action of the deleted conversation: %v", got)
		}
		wantError(t, f.do("POST", "/v1/messages", fmt.Sprintf(`{"assistant_id":%q,"conversation_id":%q,"message":"hi"}`, ast, id)),
			404, "invalid_request_error", "resource_missing", "conversation_id")
	})
}

func TestMetadata(t *testing.T) {
	t.Parallel()
	onBothEngines(t, func(t *testing.T, f *fixture) {
		ast := f.Assistant.ID
		md := `{"order_id":"A-17","note":"ünïcode ✓"}`
		want := "map[note:ünïcode ✓ order_id:A-17]"
		wh := f.create("/v1/webhooks", `{"url":"https://127.0.0.1:9/hook","events":["task.updated","task.deleted","event.deleted"],"secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw","metadata":`+md+`}`)
		for _, c := range []struct{ path, body string }{
			{"/v1/assistants", `{"name":"Meta","metadata":` + md + `}`},
			{"/v1/tasks", fmt.Sprintf(`{"assistant_id":%q,"title":"Call Bob","metadata":%s}`, ast, md)},
			{"/v1/calendar/events", fmt.Sprintf(`{"assistant_id":%q,"title":"Dentist","starts_at":"2026-11-23T15:00:00Z","metadata":%s}`, ast, md)},
			{"/v1/webhooks", ""},
		} {
			rec := wh
			if c.body != "" {
				rec = f.create(c.path, c.body)
			}
			if fmt.Sprint(rec["metadata"]) != want {
				t.Fatalf("POST %s: metadata %v", c.path, rec["metadata"])
			}
			path := c.path + "/" + rec["id"].(string)
			got := f.ok(200, "GET", path, "")
			if c.path == "/v1/webhooks" {
				delete(got, "summary") // GET /v1/webhooks/{id} adds the 24 h summary
				delete(rec, "summary")
			}
			sameRecord(t, got, rec)
			// PATCH merges: a new key, a changed one, one removed by null and
			// one by "".
			f.Clock.Add(time.Second)
			got = f.ok(200, "PATCH", path, `{"metadata":{"order_id":"A-18","note":null,"x":"1","y":""}}`)
			if fmt.Sprint(got["metadata"]) != "map[order_id:A-18 x:1]" {
				t.Fatalf("PATCH %s: metadata %v", path, got["metadata"])
			}
			sameRecord(t, withoutSummary(f.ok(200, "GET", path, "")), withoutSummary(got))
			// The limits: 400 naming the parameter, nothing stored.
			keys := []string{}
			for i := range 49 {
				keys = append(keys, fmt.Sprintf(`"k%02d":"v"`, i))
			}
			wantError(t, f.do("PATCH", path, `{"metadata":{`+strings.Join(keys, ",")+`}}`), 400, "invalid_request_error", "parameter_invalid", "metadata")
			long := strings.Repeat("k", 41)
			wantError(t, f.do("PATCH", path, `{"metadata":{"`+long+`":"v"}}`), 400, "invalid_request_error", "parameter_invalid", "metadata."+long)
			wantError(t, f.do("PATCH", path, `{"metadata":{"k":"`+strings.Repeat("v", 501)+`"}}`), 400, "invalid_request_error", "parameter_invalid", "metadata.k")
			sameRecord(t, withoutSummary(f.ok(200, "GET", path, "")), withoutSummary(got))
			// 48 more keys make 50: allowed.
			if n := len(f.ok(200, "PATCH", path, `{"metadata":{`+strings.Join(keys[:48], ",")+`}}`)["metadata"].(map[string]any)); n != 50 {
				t.Fatalf("PATCH %s to 50 keys: %d", path, n)
			}
		}
		// Records created without metadata show {} (never null).
		plain := f.create("/v1/tasks", fmt.Sprintf(`{"assistant_id":%q,"title":"Plain"}`, ast))
		if m, ok := plain["metadata"].(map[string]any); !ok || len(m) != 0 {
			t.Fatalf("task without metadata: %v", plain["metadata"])
		}
		// Creates past the limits store nothing.
		ntasks := len(f.ok(200, "GET", "/v1/tasks?limit=100", "")["data"].([]any))
		keys := []string{}
		for i := range 51 {
			keys = append(keys, fmt.Sprintf(`"k%02d":"v"`, i))
		}
		for _, c := range []struct{ md, param string }{
			{`{` + strings.Join(keys, ",") + `}`, "metadata"},
			{`{"` + strings.Repeat("k", 41) + `":"v"}`, "metadata." + strings.Repeat("k", 41)},
			{`{"k":"` + strings.Repeat("v", 501) + `"}`, "metadata.k"},
		} {
			wantError(t, f.do("POST", "/v1/tasks", fmt.Sprintf(`{"assistant_id":%q,"title":"No","metadata":%s}`, ast, c.md)),
				400, "invalid_request_error", "parameter_invalid", c.param)
			wantError(t, f.do("POST", "/v1/messages", fmt.Sprintf(`{"assistant_id":%q,"message":"No","metadata":%s}`, ast, c.md)),
				400, "invalid_request_error", "parameter_invalid", c.param)
		}
		if n := len(f.ok(200, "GET", "/v1/tasks?limit=100", "")["data"].([]any)); n != ntasks {
			t.Fatalf("refused creates stored tasks: %d, was %d", n, ntasks)
		}
		// Events carry the record with its metadata.
		upd := f.eventsN("task.updated", 2)
		if m := upd[0]["metadata"].(map[string]any); len(m) != 50 {
			t.Fatalf("task.updated data: %v", upd[0])
		}
		// A message's metadata may change, the reply's too (its content
		// may not).
		reply := f.send("hello", "")
		m := f.ok(200, "PATCH", "/v1/messages/"+reply["id"].(string), `{"metadata":{"rating":"good"}}`)
		if fmt.Sprint(m["metadata"]) != "map[rating:good]" || m["content"] != reply["content"] {
			t.Fatalf("reply with metadata: %v", m)
		}
		if u := f.eventsN("message.updated", 1); fmt.Sprint(u[0]["metadata"]) != "map[rating:good]" {
			t.Fatalf("message.updated: %v", u)
		}
		wantError(t, f.do("PATCH", "/v1/messages/"+reply["id"].(string), `{"content":"x","metadata":{}}`), 400, "invalid_request_error", "message_not_editable", "")
	})
}

func TestDeletionEvents(t *testing.T) {
	t.Parallel()
	onBothEngines(t, func(t *testing.T, f *fixture) {
		ast := f.Assistant.ID
		// A webhook of the 13 types does not get them; one that lists them
		// or the deletion types does.
		all13 := `["message.created","message.updated","message.deleted","task.created","task.completed","task.updated","task.reminder","event.created","event.updated","event.reminder","integration.connected","integration.disconnected","integration.error"]`
		old := f.create("/v1/webhooks", `{"url":"https://127.0.0.1:9/old","events":`+all13+`,"secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}`)
		sub := f.create("/v1/webhooks", `{"url":"https://127.0.0.1:9/new","events":["event.deleted","task.deleted"],"secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}`)
		if fmt.Sprint(sub["events"]) != "[task.deleted event.deleted]" {
			t.Fatalf("subscribed events: %v", sub["events"])
		}
		task := f.create("/v1/tasks", fmt.Sprintf(`{"assistant_id":%q,"title":"Call Bob","metadata":{"k":"v"}}`, ast))
		cev := f.create("/v1/calendar/events", fmt.Sprintf(`{"assistant_id":%q,"title":"Dentist","starts_at":"2026-11-23T15:00:00Z"}`, ast))
		task = f.ok(200, "GET", "/v1/tasks/"+task["id"].(string), "")
		f.Clock.Add(time.Minute)
		f.ok(204, "DELETE", "/v1/tasks/"+task["id"].(string), "")
		f.ok(204, "DELETE", "/v1/calendar/events/"+cev["id"].(string), "")
		sameRecord(t, f.eventsN("task.deleted", 1)[0], task)
		// The event as it was, with when and by whom it was deleted (it
		// can be restored).
		cev["deleted_at"], cev["deleted_by"] = "2026-11-21T10:01:00.000Z", "api"
		sameRecord(t, f.eventsN("event.deleted", 1)[0], cev)
		// Queued for the subscriber only.
		jobs, err := f.Data.ClaimJobs(t.Context(), f.Clock.Now().Add(time.Hour), ams.Claim{Lease: time.Minute, Limit: 100, PerWebhook: 100})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, j := range jobs {
			if j.WebhookID == old["id"] && (j.Event.Type == ams.EventTaskDeleted || j.Event.Type == ams.EventEventDeleted) {
				t.Fatalf("a webhook of the 13 types got %s", j.Event.Type)
			}
			if j.WebhookID == sub["id"] {
				got = append(got, j.Event.Type)
			}
		}
		if strings.Join(got, ",") != "task.deleted,event.deleted" && strings.Join(got, ",") != "event.deleted,task.deleted" {
			t.Fatalf("jobs of the subscriber: %v", got)
		}
		q, err := f.Data.ListEvents(t.Context(), f.User.ID, ams.EventFilter{Type: ams.EventTaskDeleted}, ams.ListParams{Limit: 10})
		if err != nil || len(q.Data) != 1 {
			t.Fatalf("task.deleted in the store: %v %v", q, err)
		}
		var data map[string]any
		b, _ := json.Marshal(q.Data[0].Data)
		json.Unmarshal(b, &data)
		sameRecord(t, data, task)
	})
}

// withoutSummary returns r without a webhook's summary, which only GET
// /v1/webhooks/{id} computes (null in the answers of changes).
func withoutSummary(r map[string]any) map[string]any {
	delete(r, "summary")
	return r
}
