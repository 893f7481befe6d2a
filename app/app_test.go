package app_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/amstest"
	"github.com/amsdev/ams/internal/testing/smtptest"
	"github.com/amsdev/ams/mail"
	"github.com/amsdev/ams/messaging"
	"github.com/amsdev/ams/webhook"
	"github.com/amsdev/ams/world"
)

// TestOneStore: every service, the API and the pages get the one watched
// store; the workers get the plain one.
func TestOneStore(t *testing.T) {
	a := amstest.New(t).App
	if _, ok := a.Store.(interface{ Unwrap() ams.Store }); !ok {
		t.Fatal("the services' store is not the watched one")
	}
	for name, s := range map[string]any{
		"world": a.World.Store, "messaging": a.Messages.Store.(ams.Narrowed[messaging.Tx]).Store, "webhooks": a.Webhooks.Store.(ams.Narrowed[webhook.Tx]).Store,
		"api": a.API.Store, "pages": a.Pages.Store,
	} {
		if s != any(a.Store) {
			t.Errorf("%s has another store", name)
		}
	}
	var _ world.Store = a.Store
	var _ webhook.Store = ams.Narrowed[webhook.Tx]{}
	if a.Webhook.Queue == a.Store || a.Reminders.Store == world.Store(a.Store) {
		t.Error("a worker runs on the watched store: its own writes would call it back")
	}
}

// TestKeyReminderEmail: the production wiring reminds the owner of a key
// that expires within 14 days, through the mail queue and a real SMTP
// server, once.
func TestKeyReminderEmail(t *testing.T) {
	f := amstest.New(t)
	ctx := context.Background()
	if f.App.KeyReminders.Store != f.Data {
		t.Fatal("the key reminders run on the watched store")
	}
	exp := amstest.Start.Add(24 * 24 * time.Hour)
	secret, k := ams.NewAPIKey(f.User.ID, "nightly export", ams.Permissions{ams.PermRead}, amstest.Start, &exp)
	if err := f.Data.CreateKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	smtpd := smtptest.Start(t)
	sender, err := mail.NewSMTP(smtpd.URL(), mail.DefaultFrom)
	if err != nil {
		t.Fatal(err)
	}
	mails := &mail.Worker{Queue: f.Data, Sender: sender, Clock: f.Clock.Now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	remind := func() int {
		t.Helper()
		n, err := f.App.KeyReminders.RunOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := mails.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// 15 days before the expiry: nothing yet.
	f.Clock.Add(9 * 24 * time.Hour)
	if n := remind(); n != 0 || len(smtpd.Messages()) != 0 {
		t.Fatalf("15 days before expiry: %d reminders, %d e-mails", n, len(smtpd.Messages()))
	}
	f.Clock.Add(2 * 24 * time.Hour)
	if n := remind(); n != 1 {
		t.Fatalf("13 days before expiry: %d reminders", n)
	}
	f.Clock.Add(time.Hour)
	if n := remind(); n != 0 {
		t.Fatalf("an hour later: %d more reminders", n)
	}
	msgs := smtpd.Messages()
	if len(msgs) != 1 || len(msgs[0].To) != 1 || msgs[0].To[0] != f.User.Email {
		t.Fatalf("e-mails: %+v", msgs)
	}
	subject, body := msgs[0].Parsed(t).Header.Get("Subject"), msgs[0].Text(t)
	for _, want := range []string{`"nightly export"`, k.Hint, "15 Dec 2026 10:00 UTC", f.Server.URL + "/account/keys", "api_key_expired"} {
		if !strings.Contains(subject+"\n"+body, want) {
			t.Errorf("e-mail lacks %q:\n%s\n\n%s", want, subject, body)
		}
	}
	if strings.Contains(body, secret) {
		t.Fatal("the e-mail holds the key's secret")
	}
}
