package http_test

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

// emitAt writes an event of the fixture user's at a chosen time, as a
// change of the account would.
func (f *fixture) emitAt(u *ams.User, typ string, at time.Time) *ams.Event {
	f.T.Helper()
	e := &ams.Event{ID: ams.NewID(ams.PrefixEvent), Object: "event", UserID: u.ID, Type: typ, CreatedAt: at, Data: map[string]any{"at": at.Format(time.RFC3339Nano)}}
	if err := f.Store.Emit(context.Background(), e); err != nil {
		f.T.Fatal(err)
	}
	return e
}

// listIDs answers GET path (200 wanted) as the ids of its data.
func (f *fixture) listIDs(path string) []string {
	f.T.Helper()
	r := f.do("GET", path, "")
	if r.status != 200 {
		f.T.Fatalf("GET %s: %d %s", path, r.status, r.body)
	}
	var ids []string
	for _, d := range r.json(f.T)["data"].([]any) {
		ids = append(ids, d.(map[string]any)["id"].(string))
	}
	return ids
}

func TestGetEvent(t *testing.T) {
	t.Parallel()
	f := setup(t)
	m := f.send("hello", "")
	l := f.do("GET", "/v1/events?type=message.created&order=asc", "").json(t)
	listed := l["data"].([]any)[1].(map[string]any) // the reply's
	id := listed["id"].(string)

	r := f.do("GET", "/v1/events/"+id, "")
	if r.status != 200 {
		t.Fatalf("get event: %d %s", r.status, r.body)
	}
	got := r.json(t)
	if fmt.Sprint(got) != fmt.Sprint(listed) || got["object"] != "event" || got["type"] != "message.created" ||
		got["data"].(map[string]any)["message_id"] != m["id"] {
		t.Fatalf("get event: %v, listed as %v", got, listed)
	}
	if _, ok := got["user_id"]; ok {
		t.Fatalf("event shows its account: %s", r.body)
	}

	// Unknown ids, ids of another shape and another account's events are
	// all 404 with the error body; a query parameter is refused.
	other := f.NewUser("bob@example.com", ams.PlanStandard)
	bobKey := f.NewKey(other, "read")
	bobs := f.emitAt(other, ams.EventTaskCreated, f.Clock.Now())
	wantError(t, f.do("GET", "/v1/events/"+id, "", "Authorization", "Bearer "+bobKey), 404, "invalid_request_error", "resource_missing", "")
	wantError(t, f.do("GET", "/v1/events/"+bobs.ID, ""), 404, "invalid_request_error", "resource_missing", "")
	for _, p := range []string{"evt_unknown", "msg_" + id[4:], "nope"} {
		wantError(t, f.do("GET", "/v1/events/"+p, ""), 404, "invalid_request_error", "resource_missing", "")
	}
	if r := f.do("GET", "/v1/events/"+bobs.ID, "", "Authorization", "Bearer "+bobKey); r.status != 200 {
		t.Fatalf("the owner's get: %d %s", r.status, r.body)
	}
	wantError(t, f.do("GET", "/v1/events/"+id+"?expand=data", ""), 400, "invalid_request_error", "unknown_parameter", "expand")

	// read is the permission; messages alone is not enough.
	msgsOnly := f.NewKey(f.User, "messages")
	wantError(t, f.do("GET", "/v1/events/"+id, "", "Authorization", "Bearer "+msgsOnly), 403, "permission_error", "insufficient_scope", "")
	if r := f.do("GET", "/v1/events/"+id, "", "Authorization", "Bearer "+f.NewKey(f.User, "read")); r.status != 200 {
		t.Fatalf("read key: %d %s", r.status, r.body)
	}
}

func TestListEventsCreatedFilters(t *testing.T) {
	t.Parallel()
	f := setup(t)
	t0 := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	var ev []*ams.Event // one a minute from t0, types alternating
	for i := range 6 {
		typ := ams.EventTaskCreated
		if i%2 == 1 {
			typ = ams.EventTaskUpdated
		}
		ev = append(ev, f.emitAt(f.User, typ, t0.Add(time.Duration(i)*time.Minute)))
	}
	other := f.NewUser("bob@example.com", ams.PlanStandard)
	f.emitAt(other, ams.EventTaskCreated, t0.Add(2*time.Minute))
	ids := func(idx ...int) string {
		var out []string
		for _, i := range idx {
			out = append(out, ev[i].ID)
		}
		return fmt.Sprint(out)
	}
	q := func(v ...string) string {
		p := url.Values{}
		for i := 0; i < len(v); i += 2 {
			p.Set(v[i], v[i+1])
		}
		return "/v1/events?" + p.Encode()
	}
	for _, c := range []struct {
		path, want string
	}{
		{q("order", "asc", "created_after", "2026-11-21T09:03:00Z"), ids(4, 5)},
		{q("order", "asc", "created_before", "2026-11-21T09:02:00Z"), ids(0, 1)},
		{q("created_after", "2026-11-21T09:00:00Z", "created_before", "2026-11-21T09:05:00Z"), ids(4, 3, 2, 1)},
		{q("order", "asc", "created_after", "2026-11-21T10:01:00+01:00"), ids(2, 3, 4, 5)}, // an offset, in UTC 09:01
		{q("order", "asc", "created_after", "2026-11-21T09:00:59.9995Z"), ids(1, 2, 3, 4, 5)},
		{q("order", "asc", "created_before", "2026-11-21T09:01:00.0001Z"), ids(0, 1)},
		{q("order", "asc", "type", "task.updated", "created_after", "2026-11-21T09:01:00Z"), ids(3, 5)},
		{q("order", "asc", "created_after", "2026-11-21T09:00:00Z", "limit", "2", "after", ev[2].ID), ids(3, 4)},
		{q("created_before", "2026-11-21T09:05:00Z", "limit", "2", "before", ev[1].ID), ids(3, 2)},
		{q("created_after", "2026-11-21T09:05:00Z"), ids()},
	} {
		if got := fmt.Sprint(f.listIDs(c.path)); got != c.want {
			t.Errorf("GET %s: %s, want %s", c.path, got, c.want)
		}
	}

	// Bad values are 400 naming the parameter, and store nothing.
	before := f.counts()
	for _, c := range []struct{ query, code, param string }{
		{"created_after=yesterday", "parameter_invalid", "created_after"},
		{"created_before=2026-11-21", "parameter_invalid", "created_before"},
		{"created_before=2026-11-21T09:00:00", "parameter_invalid", "created_before"}, // no offset
		{"created_after=0000-01-01T00:00:00Z", "parameter_invalid", "created_after"},
		{"created_since=2026-11-21T09:00:00Z", "unknown_parameter", "created_since"},
		{"created_after=2026-11-21T09:03:00Z&after=" + ev[1].ID, "resource_missing", "after"}, // not in the filtered list
	} {
		wantError(t, f.do("GET", "/v1/events?"+c.query, ""), 400, "invalid_request_error", c.code, c.param)
	}
	if f.counts() != before {
		t.Fatal("a refused list changed the stored data")
	}
	for _, e := range ev {
		got, err := f.Store.FindEvent(context.Background(), f.User.ID, e.ID)
		if err != nil || got.Type != e.Type || !got.CreatedAt.Equal(e.CreatedAt) {
			t.Fatalf("event %s after the lists: %+v %v", e.ID, got, err)
		}
	}
}
