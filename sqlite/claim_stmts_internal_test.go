package sqlite

import (
	"context"
	"testing"
	"time"
)

// TestClaimEmailsRunsPrepared: the e-mail claim's statements go through
// the write connection's statement cache like the shared store's writes:
// noted in the first claim's transaction, prepared after it, and run
// prepared from the next claim on, which claims as before. (The delivery
// claim, ClaimJobs, runs on the shared Conn in the group-commit branch.)
func TestClaimEmailsRunsPrepared(t *testing.T) {
	ctx := context.Background()
	db := tempDB(t)
	t0 := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	for _, id := range []string{"eml_1", "eml_2"} {
		if _, err := db.write.ExecContext(ctx, `INSERT INTO emails (id, to_addr, subject, body, next_at, created_at) VALUES (?, 'a@example.com', 's', 'b', ?, ?)`,
			id, t0.UnixMilli(), t0.UnixMilli()); err != nil {
			t.Fatal(err)
		}
	}
	claim := func(now time.Time, limit, want int) {
		t.Helper()
		es, err := db.ClaimEmails(ctx, now, time.Minute, limit)
		if err != nil || len(es) != want {
			t.Fatalf("claimed %d e-mails (%v), want %d", len(es), err, want)
		}
	}
	cached := func(q string) bool {
		db.ws.mu.Lock()
		defer db.ws.mu.Unlock()
		return db.ws.m[q] != nil
	}
	claim(t0, 1, 1)
	if !cached(dueEmailsQuery) || !cached(leaseEmailQuery) {
		t.Errorf("after a claim: due e-mails prepared %v, lease prepared %v; want both", cached(dueEmailsQuery), cached(leaseEmailQuery))
	}
	claim(t0, 1, 1) // the other, from the prepared statements
	claim(t0, 5, 0) // both leased
	claim(t0.Add(time.Minute), 5, 2)
}
