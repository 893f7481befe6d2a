package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

// Usage metering: per-minute request counts (ams.UsageStore).

// usageString renders the non-empty buckets of a series as
// "index:allowed/refused" for comparisons, and checks that the buckets
// follow each other by step from from.
func usageString(t *testing.T, pts []ams.UsagePoint, from time.Time, step time.Duration) string {
	t.Helper()
	s := ""
	for i, p := range pts {
		if want := from.Add(time.Duration(i) * step); !p.Start.Equal(want) || p.Start.Location() != time.UTC {
			t.Fatalf("bucket %d starts at %v, want %v (UTC)", i, p.Start, want)
		}
		if p.Allowed != 0 || p.Refused != 0 {
			s += fmt.Sprintf("%d:%d/%d ", i, p.Allowed, p.Refused)
		}
	}
	return s
}

func series(t *testing.T, s ams.Store, userID string, from, to time.Time, step time.Duration) []ams.UsagePoint {
	t.Helper()
	pts, err := s.UsageSeries(context.Background(), userID, from, to, step)
	if err != nil {
		t.Fatal(err)
	}
	return pts
}

func addUsage(t *testing.T, s ams.Store, rows ...ams.UsageCount) {
	t.Helper()
	if err := s.AddUsage(context.Background(), rows); err != nil {
		t.Fatal(err)
	}
}

func testUsageMinutes(t *testing.T, s ams.Store) {
	ctx := context.Background()
	ann, bob := mustUser(t, s, "usage@example.com"), mustUser(t, s, "usage2@example.com")
	m := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Minute) }
	addUsage(t, s,
		ams.UsageCount{UserID: ann.ID, Minute: m(0), Allowed: 5},
		ams.UsageCount{UserID: ann.ID, Minute: m(3), Allowed: 60, Refused: 7},
		// Two rows of one minute in one batch add up.
		ams.UsageCount{UserID: ann.ID, Minute: m(10), Allowed: 1},
		ams.UsageCount{UserID: ann.ID, Minute: m(10), Allowed: 2, Refused: 1},
		ams.UsageCount{UserID: bob.ID, Minute: m(3), Allowed: 100},
		ams.UsageCount{UserID: ann.ID, Minute: m(4)}, // nothing: not stored
	)
	// A second batch (another process, or the next flush) adds to the
	// stored counts.
	addUsage(t, s, ams.UsageCount{UserID: ann.ID, Minute: m(3), Allowed: 2, Refused: 1})
	if err := s.AddUsage(ctx, nil); err != nil {
		t.Fatal(err)
	}

	pts := series(t, s, ann.ID, m(0), m(15), time.Minute)
	if len(pts) != 15 {
		t.Fatalf("%d buckets for 15 minutes", len(pts))
	}
	if got := usageString(t, pts, m(0), time.Minute); got != "0:5/0 3:62/8 10:3/1 " {
		t.Fatalf("ann's minutes: %q", got)
	}
	if got := usageString(t, series(t, s, bob.ID, m(0), m(15), time.Minute), m(0), time.Minute); got != "3:100/0 " {
		t.Fatalf("bob's minutes: %q", got)
	}
	if got := series(t, s, "usr_nobody", m(0), m(15), time.Minute); len(got) != 15 || usageString(t, got, m(0), time.Minute) != "" {
		t.Fatalf("an unknown account's series: %v", got)
	}

	// from is truncated to its minute; the last bucket reaches past to;
	// rows outside the buckets are left out.
	pts = series(t, s, ann.ID, m(3).Add(30*time.Second), m(10).Add(time.Second), 5*time.Minute)
	if len(pts) != 2 || usageString(t, pts, m(3), 5*time.Minute) != "0:62/8 1:3/1 " {
		t.Fatalf("5-minute buckets: %v", pts)
	}
	pts = series(t, s, ann.ID, m(1), m(10), time.Minute) // [m1, m10): minute 10 is out
	if usageString(t, pts, m(1), time.Minute) != "2:62/8 " {
		t.Fatalf("minutes 1..9: %v", pts)
	}
	if pts := series(t, s, ann.ID, m(5), m(5), time.Minute); len(pts) != 0 {
		t.Fatalf("an empty range has %d buckets", len(pts))
	}

	for _, step := range []time.Duration{0, 30 * time.Second, 90 * time.Second} {
		_, err := s.UsageSeries(ctx, ann.ID, m(0), m(10), step)
		wantKind(t, err, ams.EINVALID)
	}
	_, err := s.UsageSeries(ctx, ann.ID, m(0), m(0).Add(ams.UsageRetention+time.Minute), time.Minute)
	wantKind(t, err, ams.EINVALID)
	if pts := series(t, s, ann.ID, m(0), m(0).Add(ams.UsageRetention), time.Minute); len(pts) != ams.MaxUsageBuckets {
		t.Fatalf("%d buckets for the whole retention", len(pts))
	}
}

// Day sums over 30 days, across UTC midnights: each day counts exactly the
// minutes of its UTC day.
func testUsageDays(t *testing.T, s ams.Store) {
	u := mustUser(t, s, "days@example.com")
	day0 := time.Date(2026, 10, 23, 0, 0, 0, 0, time.UTC) // 30 days: Oct 23 .. Nov 21
	var rows []ams.UsageCount
	want := make([]int64, 30)
	for d := range 30 {
		if d%7 == 3 {
			continue // an empty day
		}
		day := day0.AddDate(0, 0, d)
		// The first and the last minute of the day, and one at noon.
		for i, at := range []time.Time{day, day.Add(12 * time.Hour), day.Add(24*time.Hour - time.Minute)} {
			n := int64(d*10 + i + 1)
			rows = append(rows, ams.UsageCount{UserID: u.ID, Minute: at, Allowed: n, Refused: int64(i)})
			want[d] += n
		}
	}
	// Just before and just after the 30 days: not in any bucket.
	rows = append(rows, ams.UsageCount{UserID: u.ID, Minute: day0.Add(-time.Minute), Allowed: 1000},
		ams.UsageCount{UserID: u.ID, Minute: day0.AddDate(0, 0, 30), Allowed: 1000})
	addUsage(t, s, rows...)

	pts := series(t, s, u.ID, day0, day0.AddDate(0, 0, 30), 24*time.Hour)
	if len(pts) != 30 {
		t.Fatalf("%d days", len(pts))
	}
	for d, p := range pts {
		if !p.Start.Equal(day0.AddDate(0, 0, d)) || p.Allowed != want[d] {
			t.Fatalf("day %d (%v): %d allowed, want %d", d, p.Start, p.Allowed, want[d])
		}
		if wantRefused := int64(3); d%7 == 3 && p.Refused != 0 || d%7 != 3 && p.Refused != wantRefused {
			t.Fatalf("day %d: %d refused", d, p.Refused)
		}
	}
	// The same minutes asked for by the minute around a midnight.
	mid := day0.AddDate(0, 0, 1)
	got := usageString(t, series(t, s, u.ID, mid.Add(-2*time.Minute), mid.Add(2*time.Minute), time.Minute), mid.Add(-2*time.Minute), time.Minute)
	if got != "1:3/2 2:11/0 " {
		t.Fatalf("minutes around midnight: %q", got)
	}
}

// Purge deletes the minutes older than ams.UsageRetention.
func testUsagePurge(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u := mustUser(t, s, "usagepurge@example.com")
	now := t0.Add(40 * 24 * time.Hour)
	cutoff := now.Add(-ams.UsageRetention)
	addUsage(t, s,
		ams.UsageCount{UserID: u.ID, Minute: cutoff.Add(-time.Minute), Allowed: 1},
		ams.UsageCount{UserID: u.ID, Minute: cutoff, Allowed: 2},
		ams.UsageCount{UserID: u.ID, Minute: now.Add(-time.Hour), Allowed: 3},
	)
	if _, err := s.Purge(ctx, now); err != nil {
		t.Fatal(err)
	}
	from := cutoff.Add(-time.Hour)
	if got := usageString(t, series(t, s, u.ID, from, now, time.Hour), from, time.Hour); got != fmt.Sprintf("1:2/0 %d:3/0 ", 31*24) {
		t.Fatalf("after purge: %q", got)
	}
}

// Concurrent batches (several processes flushing at once) all add up.
func testUsageConcurrent(t *testing.T, s ams.Store) {
	users := []*ams.User{mustUser(t, s, "c1@example.com"), mustUser(t, s, "c2@example.com")}
	const writers, rounds = 4, 10
	var wg sync.WaitGroup
	errs := make(chan error, writers*rounds)
	for w := range writers {
		wg.Go(func() {
			for r := range rounds {
				var rows []ams.UsageCount
				// Writers list the rows in different orders.
				for i := range 6 {
					k := (i + w) % 6
					rows = append(rows, ams.UsageCount{UserID: users[k%2].ID, Minute: t0.Add(time.Duration(k/2) * time.Minute), Allowed: 1, Refused: int64(r % 2)})
				}
				if err := s.AddUsage(context.Background(), rows); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, u := range users {
		got := usageString(t, series(t, s, u.ID, t0, t0.Add(3*time.Minute), time.Minute), t0, time.Minute)
		if want := "0:40/20 1:40/20 2:40/20 "; got != want {
			t.Fatalf("%s: %q, want %q", u.Email, got, want)
		}
	}
}
