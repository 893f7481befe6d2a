package http_test

import (
	"context"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

// Deleted calendar events over HTTP (issue 26, L9): a deletion keeps the
// event, listed with ?deleted=true, and POST .../restore brings it back
// with event.restored; on both engines.
func TestCalendarEventRestore(t *testing.T) {
	t.Parallel()
	onBothEngines(t, func(t *testing.T, f *fixture) {
		ev := f.create("/v1/calendar/events", `{"assistant_id":"`+f.Assistant.ID+`","title":"Dentist","starts_at":"2026-11-23T14:00:00Z"}`)
		id := ev["id"].(string)
		keep := f.create("/v1/calendar/events", `{"assistant_id":"`+f.Assistant.ID+`","title":"Kept","starts_at":"2026-11-24T14:00:00Z"}`)["id"].(string)
		f.Clock.Add(time.Minute)
		f.ok(204, "DELETE", "/v1/calendar/events/"+id, "")
		wantError(t, f.do("GET", "/v1/calendar/events/"+id, ""), 404, "invalid_request_error", "resource_missing", "")
		if got := ids(f.ok(200, "GET", "/v1/calendar/events", "")); len(got) != 1 || got[0] != keep {
			t.Fatalf("live events: %v", got)
		}
		deleted := f.ok(200, "GET", "/v1/calendar/events?deleted=true", "")
		if got := ids(deleted); len(got) != 1 || got[0] != id {
			t.Fatalf("deleted events: %v", got)
		}
		d := deleted["data"].([]any)[0].(map[string]any)
		if d["deleted_by"] != ams.DeletedByAPI || d["deleted_at"] != "2026-11-21T10:01:00.000Z" || d["title"] != "Dentist" {
			t.Fatalf("deleted event: %v", d)
		}
		if got := ids(f.ok(200, "GET", "/v1/calendar/events?deleted=false", "")); len(got) != 1 || got[0] != keep {
			t.Fatalf("deleted=false: %v", got)
		}
		if del := f.eventsN("event.deleted", 1)[0]; del["id"] != id || del["deleted_by"] != ams.DeletedByAPI {
			t.Fatalf("event.deleted data: %v", del)
		}

		// Bad input is refused and changes nothing.
		before := calendarCounts(t, f)
		wantError(t, f.do("GET", "/v1/calendar/events?deleted=yes", ""), 400, "invalid_request_error", "parameter_invalid", "deleted")
		wantError(t, f.do("POST", "/v1/calendar/events/"+keep+"/restore", ""), 409, "invalid_request_error", "calendar_event_not_deleted", "")
		wantError(t, f.do("POST", "/v1/calendar/events/"+ams.NewID(ams.PrefixCalendar)+"/restore", ""), 404, "invalid_request_error", "resource_missing", "")
		// Another account neither sees nor restores it.
		bob := f.NewUser("bob@example.com", ams.PlanStandard)
		bobKey := f.NewKey(bob, "read,write")
		if got := ids(f.ok(200, "GET", "/v1/calendar/events?deleted=true", "", "Authorization", "Bearer "+bobKey)); len(got) != 0 {
			t.Fatalf("Bob lists Ann's deleted events: %v", got)
		}
		wantError(t, f.do("POST", "/v1/calendar/events/"+id+"/restore", "", "Authorization", "Bearer "+bobKey), 404, "invalid_request_error", "resource_missing", "")
		// Restoring takes write; listing the deleted ones, read.
		readKey := f.NewKey(f.User, "read")
		wantError(t, f.do("POST", "/v1/calendar/events/"+id+"/restore", "", "Authorization", "Bearer "+readKey), 403, "permission_error", "insufficient_scope", "")
		if calendarCounts(t, f) != before {
			t.Fatal("refused requests changed something")
		}

		// Restored: the record as it was (updated now), event.restored.
		f.Clock.Add(time.Minute)
		got := f.ok(200, "POST", "/v1/calendar/events/"+id+"/restore", "")
		if got["id"] != id || got["title"] != "Dentist" || got["deleted_at"] != nil || got["deleted_by"] != nil || got["updated_at"] != "2026-11-21T10:02:00.000Z" {
			t.Fatalf("restored: %v", got)
		}
		sameRecord(t, f.eventsN("event.restored", 1)[0], got)
		sameRecord(t, f.ok(200, "GET", "/v1/calendar/events/"+id, ""), got)
		if got := ids(f.ok(200, "GET", "/v1/calendar/events?deleted=true", "")); len(got) != 0 {
			t.Fatalf("deleted events after the restore: %v", got)
		}
		wantError(t, f.do("POST", "/v1/calendar/events/"+id+"/restore", ""), 409, "invalid_request_error", "calendar_event_not_deleted", "")
	})
}

// calendarCounts returns how many live and deleted calendar events and
// events the fixture user has.
func calendarCounts(t *testing.T, f *fixture) [3]int {
	t.Helper()
	ctx := context.Background()
	p := ams.ListParams{Limit: 100}
	live, err := f.Data.ListCalendarEvents(ctx, f.User.ID, ams.CalendarFilter{}, p)
	if err != nil {
		t.Fatal(err)
	}
	gone, err := f.Data.ListCalendarEvents(ctx, f.User.ID, ams.CalendarFilter{Deleted: true}, p)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := f.Data.ListEvents(ctx, f.User.ID, ams.EventFilter{}, p)
	if err != nil {
		t.Fatal(err)
	}
	return [3]int{len(live.Data), len(gone.Data), len(evs.Data)}
}
