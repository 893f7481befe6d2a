package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

// testManagementLists: the management API's pages of keys and clients are
// cursor-paginated, newest first, scoped to the account (a cursor of
// another account is EINVALID), revoked keys included.
func testManagementLists(t *testing.T, s ams.Store) {
	ctx := context.Background()
	ann, bob := mustUser(t, s, "mgmt-ann@example.com"), mustUser(t, s, "mgmt-bob@example.com")
	var keys []*ams.APIKey
	var clients []*ams.OAuthClient
	for i := range 5 {
		at := t0.Add(time.Duration(i) * time.Minute)
		keys = append(keys, mustKey(t, s, ann, "k", at, time.Time{}, time.Time{}))
		c := &ams.OAuthClient{ID: ams.NewID(ams.PrefixClient), Object: "oauth_client", UserID: ann.ID, Name: "c",
			RedirectURIs: []string{"https://example.com/cb"}, CreatedAt: at, UpdatedAt: at}
		if err := s.CreateOAuthClient(ctx, c); err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
	}
	theirs := mustKey(t, s, bob, "theirs", t0, time.Time{}, time.Time{})
	if _, err := s.RevokeKey(ctx, ann.ID, keys[0].ID, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}

	page, err := s.ListKeyPage(ctx, ann.ID, ams.ListParams{Limit: 2})
	if err != nil || len(page.Data) != 2 || !page.HasMore || page.Data[0].ID != keys[4].ID || page.Data[1].ID != keys[3].ID {
		t.Fatalf("first page of keys: %+v %v", page, err)
	}
	if page.Data[0].Hash == "" || page.Data[0].Hint == "" {
		t.Fatalf("a listed key lacks its hint or hash: %+v", page.Data[0])
	}
	page, err = s.ListKeyPage(ctx, ann.ID, ams.ListParams{Limit: 10, After: keys[2].ID})
	if err != nil || len(page.Data) != 2 || page.HasMore || page.Data[1].ID != keys[0].ID || page.Data[1].RevokedAt == nil {
		t.Fatalf("last page of keys: %+v %v", page, err)
	}
	page, err = s.ListKeyPage(ctx, ann.ID, ams.ListParams{Limit: 10, Order: ams.OrderAsc, Before: keys[2].ID})
	if err != nil || len(page.Data) != 2 || page.Data[0].ID != keys[0].ID {
		t.Fatalf("keys before, ascending: %+v %v", page, err)
	}
	_, err = s.ListKeyPage(ctx, ann.ID, ams.ListParams{Limit: 10, After: theirs.ID})
	wantKind(t, err, ams.EINVALID)
	if page, err := s.ListKeyPage(ctx, bob.ID, ams.ListParams{Limit: 10}); err != nil || len(page.Data) != 1 || page.Data[0].ID != theirs.ID {
		t.Fatalf("bob's keys: %+v %v", page, err)
	}

	cp, err := s.ListOAuthClientPage(ctx, ann.ID, ams.ListParams{Limit: 3})
	if err != nil || len(cp.Data) != 3 || !cp.HasMore || cp.Data[0].ID != clients[4].ID || cp.Data[0].RedirectURIs[0] != "https://example.com/cb" {
		t.Fatalf("first page of clients: %+v %v", cp, err)
	}
	cp, err = s.ListOAuthClientPage(ctx, ann.ID, ams.ListParams{Limit: 3, After: cp.Data[2].ID})
	if err != nil || len(cp.Data) != 2 || cp.HasMore || cp.Data[1].ID != clients[0].ID {
		t.Fatalf("second page of clients: %+v %v", cp, err)
	}
	if cp, err := s.ListOAuthClientPage(ctx, bob.ID, ams.ListParams{Limit: 3}); err != nil || len(cp.Data) != 0 || cp.HasMore {
		t.Fatalf("bob's clients: %+v %v", cp, err)
	}
	_, err = s.ListOAuthClientPage(ctx, bob.ID, ams.ListParams{Limit: 3, After: clients[0].ID})
	wantKind(t, err, ams.EINVALID)
}

// testManagementTx: a change of a key, a client or the account commits
// with its audit event in one transaction, or neither does.
func testManagementTx(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u := mustUser(t, s, "mgmt-tx@example.com")
	// FindEvent sees an event as soon as its transaction has committed
	// (a list may show it a moment later, on PostgreSQL).
	events := func(es ...*ams.Event) []string {
		t.Helper()
		var out []string
		for _, e := range es {
			got, err := s.FindEvent(ctx, u.ID, e.ID)
			if ams.IsNotFound(err) {
				continue
			} else if err != nil {
				t.Fatal(err)
			}
			out = append(out, got.Type)
		}
		return out
	}
	boom := errors.New("boom")
	_, k := ams.NewAPIKey(u.ID, "tx", ams.Permissions{ams.PermRead}, t0, nil)
	c := &ams.OAuthClient{ID: ams.NewID(ams.PrefixClient), Object: "oauth_client", UserID: u.ID, Name: "tx",
		RedirectURIs: []string{"https://example.com/cb"}, SecretHash: "old", CreatedAt: t0, UpdatedAt: t0}
	tz, off := "Asia/Tokyo", true
	lost := ams.APIKeyEvent(ams.EventAPIKeyCreated, k, t0)
	// Rolled back: nothing of it stays.
	err := s.Update(ctx, func(tx ams.Tx) error {
		if err := tx.CreateKey(ctx, k); err != nil {
			return err
		}
		if err := tx.CreateOAuthClient(ctx, c); err != nil {
			return err
		}
		if _, err := tx.UpdateUser(ctx, u.ID, ams.UserUpdate{Timezone: &tz, KeyReminderEmailsOff: &off}, t0); err != nil {
			return err
		}
		if err := tx.Emit(ctx, lost); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("update: %v", err)
	}
	if _, err := s.FindKey(ctx, k.ID); !ams.IsNotFound(err) {
		t.Fatalf("a rolled-back key is stored: %v", err)
	}
	if _, err := s.FindOAuthClient(ctx, c.ID); !ams.IsNotFound(err) {
		t.Fatalf("a rolled-back client is stored: %v", err)
	}
	if got, _ := s.FindUser(ctx, u.ID); got.Timezone != "UTC" || got.KeyReminderEmailsOff {
		t.Fatalf("a rolled-back account update is stored: %+v", got)
	}
	if ev := events(lost); len(ev) != 0 {
		t.Fatalf("events of a rolled-back change: %v", ev)
	}

	// Committed: each write with its event, read back in the transaction.
	created := []*ams.Event{ams.APIKeyEvent(ams.EventAPIKeyCreated, k, t0), ams.OAuthClientEvent(ams.EventOAuthClientCreated, c, t0)}
	err = s.Update(ctx, func(tx ams.Tx) error {
		if err := tx.CreateKey(ctx, k); err != nil {
			return err
		}
		if got, err := tx.FindKey(ctx, k.ID); err != nil || got.UserID != u.ID {
			return errors.Join(errors.New("the transaction does not read its key"), err)
		}
		if _, err := tx.RevokeKey(ctx, u.ID, k.ID, t0.Add(time.Minute)); err != nil {
			return err
		}
		if err := tx.CreateOAuthClient(ctx, c); err != nil {
			return err
		}
		if got, err := tx.FindOAuthClient(ctx, c.ID); err != nil || got.SecretHash != "old" {
			return errors.Join(errors.New("the transaction does not read its client"), err)
		}
		if _, err := tx.SetOAuthClientSecret(ctx, u.ID, c.ID, "new", t0.Add(time.Minute)); err != nil {
			return err
		}
		if got, err := tx.FindUser(ctx, u.ID); err != nil || got.ID != u.ID {
			return errors.Join(errors.New("the transaction does not read the account"), err)
		}
		if _, err := tx.UpdateUser(ctx, u.ID, ams.UserUpdate{Timezone: &tz, WebhookFailingEmailsOff: &off}, t0.Add(time.Minute)); err != nil {
			return err
		}
		return tx.Emit(ctx, created...)
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.FindKey(ctx, k.ID); err != nil || got.RevokedAt == nil {
		t.Fatalf("committed key: %+v %v", got, err)
	}
	if got, err := s.FindOAuthClient(ctx, c.ID); err != nil || got.SecretHash != "new" {
		t.Fatalf("committed client: %+v %v", got, err)
	}
	if got, _ := s.FindUser(ctx, u.ID); got.Timezone != tz || !got.WebhookFailingEmailsOff || got.KeyReminderEmailsOff {
		t.Fatalf("committed account: %+v", got)
	}
	if ev := events(created...); len(ev) != 2 || ev[0] != ams.EventAPIKeyCreated || ev[1] != ams.EventOAuthClientCreated {
		t.Fatalf("events: %v", ev)
	}
	// Deleting in a transaction; another account's client is ENOTFOUND.
	other := mustUser(t, s, "mgmt-tx-other@example.com")
	err = s.Update(ctx, func(tx ams.Tx) error {
		if err := tx.DeleteOAuthClient(ctx, other.ID, c.ID, time.Now()); !ams.IsNotFound(err) {
			return errors.Join(errors.New("another account deletes the client"), err)
		}
		return tx.DeleteOAuthClient(ctx, u.ID, c.ID, time.Now())
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.FindOAuthClient(ctx, c.ID); !ams.IsNotFound(err) {
		t.Fatalf("deleted client: %v", err)
	}
}

// testEmailNotifications: the settings are stored (on by default, each
// turned off and on alone), and an account with key reminders off has no
// reminder due.
func testEmailNotifications(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u := mustUser(t, s, "mgmt-notify@example.com")
	if got, _ := s.FindUser(ctx, u.ID); got.KeyReminderEmailsOff || got.WebhookFailingEmailsOff {
		t.Fatalf("a new account has e-mails off: %+v", got)
	}
	on, off := false, true
	got, err := s.UpdateUser(ctx, u.ID, ams.UserUpdate{WebhookFailingEmailsOff: &off}, t0)
	if err != nil || !got.WebhookFailingEmailsOff || got.KeyReminderEmailsOff {
		t.Fatalf("webhook failing e-mails off: %+v %v", got, err)
	}
	old := mustKey(t, s, u, "old", t0.Add(-100*day), time.Time{}, time.Time{})
	due := func() int {
		t.Helper()
		rs, err := s.DueKeyReminders(ctx, t0, 100)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, r := range rs {
			if r.Key.ID == old.ID {
				n++
			}
		}
		return n
	}
	if n := due(); n != 1 {
		t.Fatalf("reminders due with key reminders on: %d", n)
	}
	if got, err = s.UpdateUser(ctx, u.ID, ams.UserUpdate{KeyReminderEmailsOff: &off}, t0); err != nil || !got.KeyReminderEmailsOff || !got.WebhookFailingEmailsOff {
		t.Fatalf("key reminders off: %+v %v", got, err)
	}
	if n := due(); n != 0 {
		t.Fatalf("reminders due with key reminders off: %d", n)
	}
	if got, err = s.UpdateUser(ctx, u.ID, ams.UserUpdate{KeyReminderEmailsOff: &on, WebhookFailingEmailsOff: &on}, t0); err != nil || got.KeyReminderEmailsOff || got.WebhookFailingEmailsOff {
		t.Fatalf("both back on: %+v %v", got, err)
	}
	if n := due(); n != 1 {
		t.Fatalf("reminders due with key reminders back on: %d", n)
	}
}
