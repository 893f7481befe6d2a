package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/amsdev/ams/client"
)

const evtJSON = `{"id":"evt_1","object":"event","type":"message.created","created_at":"2026-11-21T10:00:00.123Z",` +
	`"data":{"message_id":"msg_1","assistant_id":"ast_1","conversation_id":"conv_1","content":"hi","direction":"outbound"}}`

func TestEventRequests(t *testing.T) {
	rc := &recorder{}
	c, _ := newTestClient(t, rc.ServeHTTP)
	ctx := context.Background()
	check := func(uri string) {
		t.Helper()
		if r := rc.last(t); r.method != "GET" || r.uri != uri || r.body != "" {
			t.Errorf("request %s %s %q, want GET %s", r.method, r.uri, r.body, uri)
		}
	}

	rc.answer(200, evtJSON)
	ev, err := c.GetEvent(ctx, "evt_1")
	if err != nil || ev.ID != "evt_1" || ev.Type != "message.created" || ev.Data["message_id"] != "msg_1" ||
		!ev.CreatedAt.Equal(time.Date(2026, 11, 21, 10, 0, 0, 123e6, time.UTC)) {
		t.Fatalf("GetEvent: %+v %v", ev, err)
	}
	check("/v1/events/evt_1")
	if _, err := c.GetEvent(ctx, ""); err == nil {
		t.Fatal("GetEvent with an empty id sent a request")
	}

	rc.answer(200, `{"object":"list","data":[`+evtJSON+`],"first_id":"evt_1","last_id":"evt_1","has_more":false}`)
	after := time.Date(2026, 11, 21, 10, 0, 0, 0, time.FixedZone("CET", 3600))
	before := time.Date(2026, 11, 22, 9, 0, 0, 500e6, time.UTC)
	l, err := c.ListEvents(ctx, &client.ListEventsParams{ListParams: client.ListParams{Order: client.OrderAsc, After: "evt_0"},
		Type: "message.created", CreatedAfter: &after, CreatedBefore: &before})
	if err != nil || len(l.Data) != 1 || l.Data[0].ID != "evt_1" {
		t.Fatalf("ListEvents: %+v %v", l, err)
	}
	check("/v1/events?after=evt_0&created_after=2026-11-21T09%3A00%3A00Z&created_before=2026-11-22T09%3A00%3A00.5Z&order=asc&type=message.created")
	// The iterator keeps the filters on every page.
	for _, err := range c.AllEvents(ctx, &client.ListEventsParams{CreatedAfter: &after}) {
		if err != nil {
			t.Fatal(err)
		}
	}
	check("/v1/events?created_after=2026-11-21T09%3A00%3A00Z")
}
