package storetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

const day = 24 * time.Hour

// mustKey stores a key of u created at created, expiring at expires (zero:
// never), revoked at revoked (zero: not).
func mustKey(t *testing.T, s ams.Store, u *ams.User, name string, created, expires, revoked time.Time) *ams.APIKey {
	t.Helper()
	var exp *time.Time
	if !expires.IsZero() {
		exp = &expires
	}
	_, k := ams.NewAPIKey(u.ID, name, ams.Permissions{ams.PermRead}, created, exp)
	if err := s.CreateKey(context.Background(), k); err != nil {
		t.Fatal(err)
	}
	if !revoked.IsZero() {
		if _, err := s.RevokeKey(context.Background(), u.ID, k.ID, revoked); err != nil {
			t.Fatal(err)
		}
	}
	return k
}

func dueList(t *testing.T, s ams.Store, now time.Time, limit int) []string {
	t.Helper()
	rs, err := s.DueKeyReminders(context.Background(), now, limit)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rs {
		out = append(out, fmt.Sprintf("%s %s %s %s %s", r.Key.Name, r.Reason, r.At.Format(time.RFC3339), r.User.Email, r.User.Timezone))
	}
	return out
}

func keyEmail(to, subject string) *ams.Email {
	return &ams.Email{ID: ams.NewID("eml_"), Kind: ams.EmailKeyReminder, To: to, Subject: subject, Text: "text of " + subject}
}

// testKeyReminders: the due reminders are those of active keys expiring
// within 14 days or turning 90 days old within 14 days (or already), each
// reason once; RemindKey records one and queues its e-mail together, once.
func testKeyReminders(t *testing.T, s ams.Store) {
	ctx := context.Background()
	now := t0
	u := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: "rotate@example.com", Plan: ams.PlanStandard, Timezone: "Europe/Berlin", CreatedAt: t0, UpdatedAt: t0}
	if err := s.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	other := mustUser(t, s, "other-rotate@example.com")
	var none time.Time
	mustKey(t, s, u, "old200", now.Add(-200*day), none, none)
	mustKey(t, s, u, "fresh", now.Add(-10*day), none, none)
	old80 := mustKey(t, s, u, "old80", now.Add(-80*day), none, none)
	exp10 := mustKey(t, s, u, "exp10", now.Add(-5*day), now.Add(10*day), none)
	mustKey(t, s, u, "exp20", now.Add(-day), now.Add(20*day), none)
	mustKey(t, s, u, "exp3old85", now.Add(-85*day), now.Add(3*day), none) // expires before it turns 90: expiry only
	mustKey(t, s, u, "both", now.Add(-85*day), now.Add(10*day), none)     // turns 90 in 5 days, expires in 10
	revoked := mustKey(t, s, u, "revoked", now.Add(-80*day), now.Add(5*day), now.Add(-time.Hour))
	mustKey(t, s, u, "expired", now.Add(-80*day), now.Add(-time.Hour), none)
	mustKey(t, s, other, "theirs", now.Add(-77*day), none, none)
	mustKey(t, s, u, "old75", now.Add(-75*day), none, none) // turns 90 in 15 days: not yet

	at := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339) }
	want := []string{
		"old200 age " + at(-110*day) + " rotate@example.com Europe/Berlin",
		"old80 age " + at(10*day) + " rotate@example.com Europe/Berlin",
		"exp10 expiry " + at(10*day) + " rotate@example.com Europe/Berlin",
		"exp3old85 expiry " + at(3*day) + " rotate@example.com Europe/Berlin",
		"both age " + at(5*day) + " rotate@example.com Europe/Berlin",
		"both expiry " + at(10*day) + " rotate@example.com Europe/Berlin",
		"theirs age " + at(13*day) + " other-rotate@example.com UTC",
	}
	if got := dueList(t, s, now, 100); !slices.Equal(got, want) {
		t.Fatalf("due reminders:\n got %q\nwant %q", got, want)
	}
	if got := dueList(t, s, now, 2); !slices.Equal(got, want[:2]) {
		t.Fatalf("limit 2, oldest key first: %q", got)
	}
	rs, _ := s.DueKeyReminders(ctx, now, 2)
	if k := rs[1].Key; k.ID != old80.ID || k.Hint != old80.Hint || k.Hash != "" || !k.CreatedAt.Equal(old80.CreatedAt) || k.UserID != u.ID || rs[1].User.ID != u.ID {
		t.Fatalf("due key: %+v %+v", k, rs[1].User)
	}

	// Reminded once: the e-mail is queued with the mark, and a second call
	// does neither.
	if ok, err := s.RemindKey(ctx, old80.ID, ams.KeyReminderAge, keyEmail(u.Email, "age old80"), now); err != nil || !ok {
		t.Fatalf("remind: %v %v", ok, err)
	}
	if ok, err := s.RemindKey(ctx, old80.ID, ams.KeyReminderAge, keyEmail(u.Email, "age old80 again"), now.Add(time.Hour)); err != nil || ok {
		t.Fatalf("second remind: %v %v", ok, err)
	}
	if ok, err := s.RemindKey(ctx, exp10.ID, ams.KeyReminderExpiry, keyEmail(u.Email, "expiry exp10"), now); err != nil || !ok {
		t.Fatalf("remind expiry: %v %v", ok, err)
	}
	// A revoked key is not reminded, whatever the caller thinks.
	if ok, err := s.RemindKey(ctx, revoked.ID, ams.KeyReminderExpiry, keyEmail(u.Email, "expiry revoked"), now); err != nil || ok {
		t.Fatalf("remind revoked: %v %v", ok, err)
	}
	if _, err := s.RemindKey(ctx, old80.ID, "colour", keyEmail(u.Email, "nonsense"), now); err == nil {
		t.Fatal("an unknown reason was accepted")
	}
	emails, err := s.ClaimEmails(ctx, now, time.Minute, 10)
	var subjects []string
	for _, e := range emails {
		if e.To != u.Email {
			t.Errorf("e-mail %q to %s", e.Subject, e.To)
		}
		subjects = append(subjects, e.Subject)
	}
	slices.Sort(subjects)
	if err != nil || !slices.Equal(subjects, []string{"age old80", "expiry exp10"}) {
		t.Fatalf("queued e-mails: %q %v", subjects, err)
	}
	if got := dueList(t, s, now, 100); !slices.Equal(got, slices.Delete(slices.Clone(want), 1, 3)) {
		t.Fatalf("due after reminding old80 (age) and exp10 (expiry): %q", got)
	}
	// A key that has expired meanwhile is no longer due.
	if got := dueList(t, s, now.Add(4*day), 100); slices.ContainsFunc(got, func(s string) bool { return len(s) > 9 && s[:9] == "exp3old85" }) {
		t.Fatalf("an expired key is still due: %q", got)
	}
}

// testKeyRemindersRace: several processes reminding the same key for the
// same reason at once queue one e-mail.
func testKeyRemindersRace(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u := mustUser(t, s, "race-rotate@example.com")
	k := mustKey(t, s, u, "racy", t0.Add(-80*day), time.Time{}, time.Time{})
	const n = 8
	var wg sync.WaitGroup
	done := make([]bool, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			done[i], errs[i] = s.RemindKey(ctx, k.ID, ams.KeyReminderAge, keyEmail(u.Email, fmt.Sprint("claimer ", i)), t0)
		}()
	}
	wg.Wait()
	won := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("claimer %d: %v", i, errs[i])
		}
		if done[i] {
			won++
		}
	}
	emails, err := s.ClaimEmails(ctx, t0, time.Minute, 100)
	if won != 1 || err != nil || len(emails) != 1 {
		t.Fatalf("%d claimers won, %d e-mails queued (%v)", won, len(emails), err)
	}
	if got := dueList(t, s, t0, 100); len(got) != 0 {
		t.Fatalf("still due: %q", got)
	}
}
