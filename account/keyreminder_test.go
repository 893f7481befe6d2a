package account_test

import (
	"context"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/account"
	"github.com/amsdev/ams/internal/testing/testclock"
	"github.com/amsdev/ams/sqlite"
)

const day = 24 * time.Hour

func reminderUser(t *testing.T, db *sqlite.DB, email, tz string) *ams.User {
	t.Helper()
	u := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: email, Plan: ams.PlanStandard, Timezone: tz, CreatedAt: start.Add(-300 * day), UpdatedAt: start}
	if err := db.CreateUser(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	return u
}

// reminderKey stores a key of u created at created, expiring at expires
// (zero: never); it returns the secret and the key.
func reminderKey(t *testing.T, db *sqlite.DB, u *ams.User, name string, created, expires time.Time) (string, *ams.APIKey) {
	t.Helper()
	var exp *time.Time
	if !expires.IsZero() {
		exp = &expires
	}
	secret, k := ams.NewAPIKey(u.ID, name, ams.Permissions{ams.PermRead, ams.PermMessages}, created, exp)
	if err := db.CreateKey(context.Background(), k); err != nil {
		t.Fatal(err)
	}
	return secret, k
}

// queued takes (and marks sent) the e-mails the mail worker would send
// now, by recipient, each recipient's sorted by subject.
func queued(t *testing.T, db *sqlite.DB, now time.Time) map[string][]*ams.Email {
	t.Helper()
	es, err := db.ClaimEmails(context.Background(), now, time.Minute, 100)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]*ams.Email{}
	for _, e := range es {
		if err := db.FinishEmail(context.Background(), e.ID, true, "", time.Time{}, now); err != nil {
			t.Fatal(err)
		}
		out[e.To] = append(out[e.To], e)
	}
	for _, l := range out {
		sort.Slice(l, func(i, j int) bool { return l[i].Subject < l[j].Subject })
	}
	return out
}

func mustContain(t *testing.T, e *ams.Email, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(e.Subject+"\n"+e.Text, p) {
			t.Errorf("e-mail %q lacks %q:\n%s", e.Subject, p, e.Text)
		}
	}
}

// TestKeyReminders: a key 80 days old gets the 90-day reminder, one
// expiring in 10 days the expiry reminder, each once, with dates in the
// owner's time zone; revoked, expired and young keys get nothing, and each
// owner hears only of their own keys.
func TestKeyReminders(t *testing.T) {
	_, db := newService(t)
	ctx := context.Background()
	clock := testclock.New(start)
	ann := reminderUser(t, db, "ann@example.com", "Europe/Berlin")
	bob := reminderUser(t, db, "bob@example.com", "America/New_York")
	var none time.Time
	deploySecret, deploy := reminderKey(t, db, ann, "deploy", start.Add(-80*day), none)
	// Expires at 23:30 UTC, already the next day in Berlin.
	ciSecret, ci := reminderKey(t, db, ann, "ci", start.Add(-5*day), time.Date(2026, 12, 1, 23, 30, 0, 0, time.UTC))
	_, revoked := reminderKey(t, db, ann, "revoked", start.Add(-80*day), start.Add(5*day))
	if _, err := db.RevokeKey(ctx, ann.ID, revoked.ID, start.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	reminderKey(t, db, ann, "expired", start.Add(-80*day), start.Add(-time.Hour))
	reminderKey(t, db, ann, "young", start.Add(-day), none)
	_, bobs := reminderKey(t, db, bob, "bobs", start.Add(-2*day), time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC))

	r := &account.KeyReminders{Store: db, Clock: clock.Now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), BaseURL: "https://ams.example"}
	if n, err := r.RunOnce(ctx); err != nil || n != 3 {
		t.Fatalf("first run queued %d e-mails, %v", n, err)
	}
	got := queued(t, db, clock.Now())
	if len(got) != 2 || len(got[ann.Email]) != 2 || len(got[bob.Email]) != 1 {
		t.Fatalf("e-mails by recipient: %v", got)
	}
	expiry, age := got[ann.Email][0], got[ann.Email][1] // by subject: "ci" before "deploy"
	mustContain(t, age, `Your ams API key "deploy" turns 90 days old on 1 Dec 2026`, deploy.Hint, "created 2 Sep 2026",
		"https://ams.example/account/keys", "(read,messages)", "keeps working until you revoke it")
	mustContain(t, expiry, `Your ams API key "ci" expires on 2 Dec 2026`, ci.Hint, "2 Dec 2026 00:30 CET", "api_key_expired",
		"https://ams.example/account/keys", "revoke this one")
	mustContain(t, got[bob.Email][0], `Your ams API key "bobs" expires on 25 Nov 2026`, bobs.Hint, "25 Nov 2026 22:00 EST")
	for _, e := range append(got[ann.Email], got[bob.Email]...) {
		for _, secret := range []string{deploySecret, ciSecret} {
			if strings.Contains(e.Text, secret) || strings.Contains(e.Subject, secret) {
				t.Fatalf("e-mail %q holds a key's secret", e.Subject)
			}
		}
		for _, other := range []string{"revoked", "expired", "young"} {
			if strings.Contains(e.Text, `"`+other+`"`) {
				t.Fatalf("e-mail %q names the %s key", e.Subject, other)
			}
		}
	}
	if strings.Contains(got[bob.Email][0].Text, "deploy") || strings.Contains(got[ann.Email][0].Text, "bobs") {
		t.Fatal("an e-mail names another account's key")
	}

	// Later runs, a restarted worker, and a month later: nothing more (the
	// keys reminded are not reminded again; ci and bobs have expired; young
	// is 31 days old).
	for _, step := range []time.Duration{0, time.Hour, 30 * day} {
		clock.Add(step)
		again := &account.KeyReminders{Store: db, Clock: clock.Now, Logger: r.Logger, BaseURL: r.BaseURL}
		if n, err := again.RunOnce(ctx); err != nil || n != 0 {
			t.Fatalf("run at +%v queued %d, %v", clock.Now().Sub(start), n, err)
		}
		if q := queued(t, db, clock.Now()); len(q) != 0 {
			t.Fatalf("run at +%v: e-mails %v", clock.Now().Sub(start), q)
		}
	}
	// 45 more days: young turns 90 within 14 days, the only reminder due.
	clock.Add(45 * day)
	if n, err := r.RunOnce(ctx); err != nil || n != 1 {
		t.Fatalf("young at 76 days: %d, %v", n, err)
	}
}

// TestKeyRemindersProcesses: workers of several processes running at
// once queue each reminder once.
func TestKeyRemindersProcesses(t *testing.T) {
	_, db := newService(t)
	ctx := context.Background()
	u := reminderUser(t, db, "ops@example.com", "UTC")
	for range 5 {
		reminderKey(t, db, u, "k", start.Add(-85*day), start.Add(7*day)) // expires after 92 days: both reminders
	}
	var wg sync.WaitGroup
	counts := make([]int, 4)
	for i := range counts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &account.KeyReminders{Store: db, Clock: func() time.Time { return start }, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), BaseURL: "https://ams.example"}
			n, err := r.RunOnce(ctx)
			if err != nil {
				t.Error(err)
			}
			counts[i] = n
		}()
	}
	wg.Wait()
	total := 0
	for _, n := range counts {
		total += n
	}
	if q := queued(t, db, start); total != 10 || len(q[u.Email]) != 10 {
		t.Fatalf("%d reminders counted, %d e-mails queued; want 10 (5 keys, 2 reasons)", total, len(q[u.Email]))
	}
}
