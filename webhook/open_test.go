package webhook_test

import (
	"database/sql"
	"testing"
	"time"

	"github.com/amsdev/ams/internal/testing/amstest"
	_ "modernc.org/sqlite" // to seal one webhook's secret with a key the store does not have
)

// TestJobThatCannotBeOpenedFailsAlone: a webhook whose secret no longer
// unseals (sealed with a key the process was not given) gets no request;
// each of its jobs is recorded as a failed attempt with an internal error
// and retried on the schedule, while the other webhooks' jobs of the
// same claims are delivered. (The claim used to fail whole, every job of
// it waiting out its lease, claim after claim.)
func TestJobThatCannotBeOpenedFailsAlone(t *testing.T) {
	f := amstest.New(t)
	rc := newReceiver(t, f.Clock.Now)
	good := createWebhook(t, f, rc.URL+"/good", "message.created")
	bad := createWebhook(t, f, rc.URL+"/bad", "message.created")
	db, err := sql.Open("sqlite", f.Store.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE webhooks SET secret_sealed = 'v1:c2VhbGVkIHdpdGggYW5vdGhlciBrZXk' WHERE id = ?`, bad); err != nil {
		t.Fatal(err)
	}
	ping := func(id string) {
		if r := f.Do("POST", "/v1/webhooks/"+id+"/ping", f.Key, ""); r.Status != 202 {
			t.Fatalf("ping: %d %s", r.Status, r.Body)
		}
	}
	ping(bad)
	ping(good)
	if n := runOnce(t, f); n != 2 {
		t.Fatalf("the first run attempted %d deliveries, want both", n)
	}
	if got := rc.requests(); len(got) != 1 {
		t.Fatalf("the receiver got %d requests, want the good webhook's one", len(got))
	}
	deliveries := func(id string) []any {
		r := f.Do("GET", "/v1/webhooks/"+id+"/deliveries", f.Key, "")
		d, ok := r.JSON(t)["data"].([]any)
		if !ok {
			t.Fatalf("deliveries of %s: %d %s", id, r.Status, r.Body)
		}
		return d
	}
	if d := deliveries(good); len(d) != 1 || d[0].(map[string]any)["success"] != true {
		t.Fatalf("the good webhook's deliveries: %v", d)
	}
	// The bad webhook's attempts, read from the store (its API reads
	// unseal the secret too, and answer 500).
	attempts := func() (n int) {
		rows, err := db.Query(`SELECT success, status_code IS NULL, error FROM webhook_deliveries WHERE webhook_id = ?`, bad)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var ok, noStatus bool
			var msg string
			if err := rows.Scan(&ok, &noStatus, &msg); err != nil {
				t.Fatal(err)
			}
			if ok || !noStatus || msg != "internal error: the delivery could not be prepared" {
				t.Fatalf("an attempt of the bad webhook: success %v, no status %v, error %q", ok, noStatus, msg)
			}
			n++
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := attempts(); n != 1 {
		t.Fatalf("the bad webhook has %d attempts, want 1", n)
	}
	// Retried on the schedule: nothing before the minute, then a second
	// attempt, failed the same way.
	f.Clock.Add(time.Minute - time.Second)
	if n := runOnce(t, f); n != 0 {
		t.Fatalf("%d attempts before the retry was due", n)
	}
	f.Clock.Add(time.Second)
	if n := runOnce(t, f); n != 1 {
		t.Fatalf("%d attempts when the retry was due, want 1", n)
	}
	if n := attempts(); n != 2 || len(rc.requests()) != 1 {
		t.Fatalf("after the retry: %d attempts of the bad webhook, %d requests", n, len(rc.requests()))
	}
}
