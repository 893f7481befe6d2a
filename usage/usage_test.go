package usage_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/amstest"
	"github.com/amsdev/ams/internal/testing/pgtest"
	"github.com/amsdev/ams/internal/testing/sqlitetest"
	"github.com/amsdev/ams/postgres"
	"github.com/amsdev/ams/sqlite"
	"github.com/amsdev/ams/usage"
)

// Requests through the API show up in the store after a flush, counted
// per account and minute; 429s as refused; requests that the rate limiter
// never saw (no credentials) not at all.
func TestAPIRequestsAreMetered(t *testing.T) {
	f := amstest.New(t, amstest.WithUsage())
	ctx := context.Background()
	bob := f.NewUser("bob@example.com", ams.PlanStandard)
	bobKey := f.NewKey(bob, "read")
	f.Clock.Add(30 * time.Second) // 10:00:30

	// Ann: 63 requests in one minute on the standard plan (60 a minute).
	codes := map[int]int{}
	for range 63 {
		codes[f.Do("GET", "/v1/assistants", f.Key, "").Status]++
	}
	if codes[200] != 60 || codes[429] != 3 {
		t.Fatalf("answers %v, want 60 × 200 and 3 × 429", codes)
	}
	for range 2 {
		f.Do("GET", "/v1/assistants", bobKey, "")
	}
	f.Do("GET", "/v1/assistants", "", "")                // 401: not counted
	f.Do("GET", "/v1/assistants", "ams_sk_nonsense", "") // 401: not counted
	f.Do("GET", "/v1/openapi.json", "", "")              // no rate limit: not counted
	f.Clock.Add(61 * time.Second)                        // 10:01:31: the 10:00:30 requests have left the window
	for range 5 {
		f.Do("POST", "/v1/messages", f.Key, fmt.Sprintf(`{"assistant_id": %q, "message": "hi"}`, f.Assistant.ID))
	}

	minute := amstest.Start
	series := func(userID string) string {
		t.Helper()
		pts, err := f.Store.UsageSeries(ctx, userID, minute, minute.Add(3*time.Minute), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		var s []string
		for _, p := range pts {
			s = append(s, fmt.Sprintf("%d/%d", p.Allowed, p.Refused))
		}
		return strings.Join(s, " ")
	}
	if got := series(f.User.ID); got != "0/0 0/0 0/0" {
		t.Fatalf("stored before a flush: %s", got)
	}
	if err := f.Usage.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := series(f.User.ID); got != "60/3 5/0 0/0" {
		t.Fatalf("ann's minutes: %s, want 60/3 5/0 0/0", got)
	}
	if got := series(bob.ID); got != "2/0 0/0 0/0" {
		t.Fatalf("bob's minutes: %s", got)
	}

	// What the usage page reads.
	rep, err := usage.Load(ctx, f.Store, f.User, f.Clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Limits.PerMinute != 60 || rep.Plan != ams.PlanStandard || rep.Today().Allowed != 65 || rep.Today().Refused != 3 {
		t.Fatalf("report: %+v, today %+v", rep.Limits, rep.Today())
	}
	if last := rep.Minutes[len(rep.Minutes)-1]; !last.Start.Equal(minute.Add(time.Minute)) || last.Allowed != 5 {
		t.Fatalf("the last minute of the report: %+v", last)
	}
	if d := rep.MinuteChart(nil).Summary(); !strings.HasPrefix(d, "Peak 63 requests in one minute (21 Nov 10:00 UTC); the limit is 60 per minute.") {
		t.Fatalf("summary %q", d)
	}
}

func openSQLite(t *testing.T) *sqlite.DB {
	t.Helper()
	db := sqlitetest.Open(t)
	return db
}

// Load reads the last 24 hours by the minute and the last 30 UTC days by
// the day, up to now's minute and today.
func TestLoad(t *testing.T) {
	db := openSQLite(t)
	ctx := context.Background()
	u := &ams.User{ID: ams.NewID(ams.PrefixUser), Plan: ams.PlanProfessional}
	now := time.Date(2026, 11, 21, 0, 30, 15, 0, time.UTC) // just after midnight
	rows := []ams.UsageCount{
		{UserID: u.ID, Minute: now.Truncate(time.Minute), Allowed: 1},                      // this minute
		{UserID: u.ID, Minute: now.Add(-24 * time.Hour).Truncate(time.Minute), Allowed: 2}, // 24 h ago: out of the minutes
		{UserID: u.ID, Minute: now.Add(-24*time.Hour + time.Minute).Truncate(time.Minute), Allowed: 4},
		{UserID: u.ID, Minute: time.Date(2026, 11, 20, 23, 59, 0, 0, time.UTC), Allowed: 8, Refused: 1}, // yesterday
		{UserID: u.ID, Minute: time.Date(2026, 10, 23, 0, 0, 0, 0, time.UTC), Allowed: 16},              // the first of the 30 days
		{UserID: u.ID, Minute: time.Date(2026, 10, 22, 23, 59, 0, 0, time.UTC), Allowed: 32},            // before them
	}
	if err := db.AddUsage(ctx, rows); err != nil {
		t.Fatal(err)
	}
	rep, err := usage.Load(ctx, db, u, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Minutes) != 1440 || len(rep.Days) != 30 || rep.Limits != (ams.Limits{PerMinute: 120, PerDay: 50_000}) {
		t.Fatalf("%d minutes, %d days, limits %+v", len(rep.Minutes), len(rep.Days), rep.Limits)
	}
	var sum int64
	for _, p := range rep.Minutes {
		sum += p.Allowed
	}
	if last := rep.Minutes[1439]; !last.Start.Equal(time.Date(2026, 11, 21, 0, 30, 0, 0, time.UTC)) || last.Allowed != 1 || sum != 1+4+8 {
		t.Fatalf("minutes: last %+v, sum %d", last, sum)
	}
	if !rep.Days[0].Start.Equal(time.Date(2026, 10, 23, 0, 0, 0, 0, time.UTC)) || rep.Days[0].Allowed != 16 {
		t.Fatalf("first day %+v", rep.Days[0])
	}
	if y := rep.Days[28]; y.Allowed != 2+4+8 || y.Refused != 1 {
		t.Fatalf("yesterday %+v", y)
	}
	if rep.Today().Allowed != 1 || !rep.Today().Start.Equal(time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("today %+v", rep.Today())
	}
	if c := rep.DayChart(); c.Limit != 50_000 || len(c.Points) != 30 || c.Step != 24*time.Hour {
		t.Fatalf("day chart %+v", c)
	}
}

// A Recorder on SQLite, through Run: counts of a shutdown are stored.
func TestRecorderOnSQLite(t *testing.T) {
	db := openSQLite(t)
	r := usage.NewRecorder(db)
	r.Interval = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	for i := range 100 {
		r.Record("usr_a", at.Add(time.Duration(i)*time.Second), i%10 != 0)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	pts, err := db.UsageSeries(context.Background(), "usr_a", at, at.Add(2*time.Minute), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if pts[0].Allowed != 54 || pts[0].Refused != 6 || pts[1].Allowed != 36 || pts[1].Refused != 4 {
		t.Fatalf("stored %+v", pts)
	}
}

// Two processes (two Recorders, each with its own pool) on one PostgreSQL
// schema: their counts of the same accounts and minutes add up.
func TestTwoRecordersOnPostgres(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	schema := pgtest.FreshSchema(t, url)
	dbs := [2]*postgres.DB{pgtest.OpenSchema(t, url, schema), pgtest.OpenSchema(t, url, schema)}
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	accounts := []string{"usr_a", "usr_b", "usr_c"}
	const rounds, perRound = 5, 200
	var wg sync.WaitGroup
	errs := make(chan error, 2*rounds)
	for p := range dbs {
		r := usage.NewRecorder(dbs[p])
		wg.Go(func() {
			for round := range rounds {
				for i := range perRound {
					// Each account, in three minutes, one refused in ten.
					r.Record(accounts[i%3], at.Add(time.Duration(i%180)*time.Second), i%10 != 9)
				}
				if err := r.Flush(ctx); err != nil {
					errs <- fmt.Errorf("process %d round %d: %w", p, round, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// What one round of one process records, by account and minute.
	want := map[string][3][2]int64{}
	for i := range perRound {
		w := want[accounts[i%3]]
		k := 0
		if i%10 == 9 {
			k = 1
		}
		w[(i%180)/60][k] += 2 * rounds
		want[accounts[i%3]] = w
	}
	for _, acc := range accounts {
		for p := range dbs { // both processes read the same sums
			pts, err := dbs[p].UsageSeries(ctx, acc, at, at.Add(3*time.Minute), time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			for m, pt := range pts {
				if w := want[acc][m]; pt.Allowed != w[0] || pt.Refused != w[1] {
					t.Fatalf("%s minute %d: %d/%d, want %d/%d", acc, m, pt.Allowed, pt.Refused, w[0], w[1])
				}
			}
		}
	}
}
