package client_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/client"
	"github.com/amsdev/ams/client/webhook"
	"github.com/amsdev/ams/internal/testing/amstest"
	"github.com/amsdev/ams/internal/testing/pgtest"
	"github.com/amsdev/ams/internal/testing/wait"
)

// liveFixture starts a server on the engine ("sqlite" or "postgres").
func liveFixture(t *testing.T, engine string) *amstest.Fixture {
	t.Helper()
	if engine == "sqlite" {
		return amstest.New(t)
	}
	return amstest.New(t, amstest.OnStore(pgtest.Open(t)))
}

// verifyingReceiver is a webhook endpoint as a user writes it with package
// client/webhook: it verifies each delivery with its secret (on the
// server's clock) and answers 200, or 400 when verification fails.
type verifyingReceiver struct {
	*httptest.Server
	mu       sync.Mutex
	secret   string
	accepted []client.Event
	refused  int
}

func newVerifyingReceiver(t *testing.T, secret string, now func() time.Time) *verifyingReceiver {
	rc := &verifyingReceiver{secret: secret}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "read error", http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		defer rc.mu.Unlock()
		ev, err := webhook.ConstructEvent(body, r.Header, rc.secret, webhook.WithClock(now))
		if err != nil {
			rc.refused++
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rc.accepted = append(rc.accepted, *ev)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *verifyingReceiver) setSecret(s string) { rc.mu.Lock(); rc.secret = s; rc.mu.Unlock() }

// got returns the ids and types of the accepted events and how many
// deliveries were refused.
func (rc *verifyingReceiver) got() (ids, types []string, refused int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, e := range rc.accepted {
		ids, types = append(ids, e.ID), append(types, e.Type)
	}
	return ids, types, rc.refused
}

// newWhsecSecret returns a secret as the Standard Webhooks libraries make
// them: "whsec_" and the base64 of 24 random bytes.
func newWhsecSecret() string {
	b := make([]byte, 24)
	rand.Read(b)
	return "whsec_" + base64.StdEncoding.EncodeToString(b)
}

// TestWebhooksLive manages a webhook through the client against the
// server, on both engines: create, list, get, update with a secret
// rotation, ping, deliveries, redelivery, recovery and delete, with the
// deliveries verified by package client/webhook at the receiver.
func TestWebhooksLive(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			f := liveFixture(t, engine)
			c := client.New(f.Server.URL, f.Key)
			ctx := context.Background()
			var apiErr *client.Error
			deliver := func() {
				t.Helper()
				if _, err := f.Worker.RunOnce(ctx); err != nil {
					t.Fatal(err)
				}
			}
			s1 := newWhsecSecret()
			rc := newVerifyingReceiver(t, s1, f.Clock.Now)

			wh, err := c.CreateWebhook(ctx, client.CreateWebhookParams{URL: rc.URL + "/hook", Events: []string{"message.created"}, Secret: s1,
				Metadata: client.Metadata{"team": "ops"}})
			if err != nil || !strings.HasPrefix(wh.ID, "wh_") || !wh.Active || wh.Status != client.WebhookStatusActive ||
				!slices.Equal(wh.Events, []string{"message.created"}) || wh.Metadata["team"] != "ops" || wh.PreviousSecretExpiresAt != nil {
				t.Fatalf("CreateWebhook: %+v %v", wh, err)
			}
			if got, err := c.GetWebhook(ctx, wh.ID); err != nil || got.URL != wh.URL || !got.CreatedAt.Equal(wh.CreatedAt) {
				t.Fatalf("GetWebhook: %+v %v", got, err)
			}
			if l, err := c.ListWebhooks(ctx, nil); err != nil || len(l.Data) != 1 || l.Data[0].ID != wh.ID {
				t.Fatalf("ListWebhooks: %+v %v", l, err)
			}
			if _, err := c.CreateWebhook(ctx, client.CreateWebhookParams{URL: rc.URL, Events: []string{"no.such.type"}, Secret: s1}); !errors.As(err, &apiErr) ||
				apiErr.StatusCode != 400 || apiErr.Param != "events" {
				t.Fatalf("CreateWebhook with an unknown event type: %v", err)
			}

			// A ping is delivered, verified, and listed as a delivery.
			ping, err := c.PingWebhook(ctx, wh.ID)
			if err != nil || ping.Type != "webhook.ping" || ping.Data["webhook_id"] != wh.ID {
				t.Fatalf("PingWebhook: %+v %v", ping, err)
			}
			deliver()
			if ids, _, refused := rc.got(); !slices.Equal(ids, []string{ping.ID}) || refused != 0 {
				t.Fatalf("receiver accepted %v, refused %d; want the ping", ids, refused)
			}
			dl, err := c.ListWebhookDeliveries(ctx, wh.ID, &client.ListWebhookDeliveriesParams{EventID: ping.ID})
			if err != nil || len(dl.Data) != 1 {
				t.Fatalf("ListWebhookDeliveries: %+v %v", dl, err)
			}
			d := dl.Data[0]
			if !d.Success || d.StatusCode == nil || *d.StatusCode != 200 || d.Attempt != 1 || d.EventType != "webhook.ping" || d.WebhookID != wh.ID || d.Error != nil {
				t.Fatalf("delivery: %+v", d)
			}

			// Redelivery sends the same event again, as a new attempt 1.
			rd, err := c.RedeliverWebhookDelivery(ctx, wh.ID, d.ID)
			if err != nil || rd.Status != "queued" || rd.EventID != ping.ID || rd.DeliveryID != d.ID {
				t.Fatalf("RedeliverWebhookDelivery: %+v %v", rd, err)
			}
			deliver()
			if ids, _, _ := rc.got(); !slices.Equal(ids, []string{ping.ID, ping.ID}) {
				t.Fatalf("receiver accepted %v after the redelivery", ids)
			}
			var attempts []client.WebhookDelivery
			for d, err := range c.AllWebhookDeliveries(ctx, wh.ID, &client.ListWebhookDeliveriesParams{EventID: ping.ID, ListParams: client.ListParams{Limit: 1}}) {
				if err != nil {
					t.Fatal(err)
				}
				attempts = append(attempts, d)
			}
			if len(attempts) != 2 || attempts[0].ID == attempts[1].ID || attempts[0].Attempt != 1 || attempts[1].Attempt != 1 {
				t.Fatalf("attempts after the redelivery: %+v", attempts)
			}
			if _, err := c.RedeliverWebhookDelivery(ctx, wh.ID, "dlv_doesnotexist"); !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
				t.Fatalf("redelivering an unknown delivery: %v", err)
			}

			// Events sent while the webhook is off are recovered once it is on.
			off, on := false, true
			if wh, err = c.UpdateWebhook(ctx, wh.ID, client.UpdateWebhookParams{Active: &off}); err != nil || wh.Active {
				t.Fatalf("UpdateWebhook active false: %+v %v", wh, err)
			}
			since := amstest.Start.Add(-time.Minute)
			if _, err := c.RecoverWebhook(ctx, wh.ID, client.RecoverWebhookParams{Since: since}); !errors.As(err, &apiErr) ||
				apiErr.StatusCode != 409 || apiErr.Code != "webhook_inactive" {
				t.Fatalf("RecoverWebhook while off: %v", err)
			}
			reply, err := c.SendMessage(ctx, client.SendMessageParams{AssistantID: f.Assistant.ID, Message: "Hello while the webhook is off"})
			if err != nil {
				t.Fatal(err)
			}
			deliver()
			if ids, _, _ := rc.got(); len(ids) != 2 {
				t.Fatalf("a webhook turned off was delivered %v", ids)
			}
			if wh, err = c.UpdateWebhook(ctx, wh.ID, client.UpdateWebhookParams{Active: &on}); err != nil || !wh.Active {
				t.Fatalf("UpdateWebhook active true: %+v %v", wh, err)
			}
			f.Clock.Add(time.Second) // the range ends before now: past the events
			rec, err := c.RecoverWebhook(ctx, wh.ID, client.RecoverWebhookParams{Since: since, IncludeEarlier: true})
			if err != nil || rec.Queued != 2 || rec.WebhookID != wh.ID || !rec.Since.Equal(since) || !rec.Until.Equal(f.Clock.Now()) {
				t.Fatalf("RecoverWebhook: %+v %v", rec, err)
			}
			deliver()
			_, types, refused := rc.got()
			if !slices.Equal(types, []string{"webhook.ping", "webhook.ping", "message.created", "message.created"}) || refused != 0 {
				t.Fatalf("receiver accepted %v, refused %d after the recovery", types, refused)
			}
			if rec, err = c.RecoverWebhook(ctx, wh.ID, client.RecoverWebhookParams{Since: since}); err != nil || rec.Queued != 0 {
				t.Fatalf("RecoverWebhook again: %+v %v", rec, err)
			}
			// The list shows an event once every write that began before it
			// has ended, on the whole PostgreSQL server (other packages'
			// tests write there meanwhile): usually at once, at most after
			// their transactions.
			// Wait on the store, then read the API once: polling it would
			// spend the account's 60 requests a minute.
			wait.Until(func() bool {
				pg, err := f.Data.ListEvents(ctx, f.User.ID, ams.EventFilter{Type: "message.created"}, ams.ListParams{Limit: 100})
				return err == nil && len(pg.Data) >= 2
			})
			if ev, err := c.ListEvents(ctx, &client.ListEventsParams{Type: "message.created"}); err != nil || len(ev.Data) != 2 || ev.Data[0].Data["message_id"] != reply.ID {
				t.Fatalf("events: %+v %v", ev, err)
			}

			// Rotation: the receiver still on the old secret accepts
			// deliveries during the overlap; after it, only the new secret.
			s2 := newWhsecSecret()
			overlap := time.Hour
			wh, err = c.UpdateWebhook(ctx, wh.ID, client.UpdateWebhookParams{Secret: &s2, PreviousSecretExpiresIn: &overlap,
				Events: []string{client.EventTypeAll, "task.created"}, Metadata: client.MetadataUpdate{"team": nil}})
			if err != nil || wh.PreviousSecretExpiresAt == nil || !wh.PreviousSecretExpiresAt.Equal(f.Clock.Now().Add(time.Hour)) ||
				!slices.Equal(wh.Events, []string{"*"}) || len(wh.Metadata) != 0 {
				t.Fatalf("UpdateWebhook rotating the secret: %+v %v", wh, err)
			}
			if _, err := c.PingWebhook(ctx, wh.ID); err != nil {
				t.Fatal(err)
			}
			deliver()
			if ids, _, refused := rc.got(); len(ids) != 5 || refused != 0 {
				t.Fatalf("during the overlap the old secret's receiver accepted %d, refused %d", len(ids), refused)
			}
			zero := time.Duration(0)
			if wh, err = c.UpdateWebhook(ctx, wh.ID, client.UpdateWebhookParams{PreviousSecretExpiresIn: &zero}); err != nil {
				t.Fatal(err)
			}
			late, err := c.PingWebhook(ctx, wh.ID)
			if err != nil {
				t.Fatal(err)
			}
			deliver()
			if ids, _, refused := rc.got(); len(ids) != 5 || refused != 1 {
				t.Fatalf("after the overlap the old secret's receiver accepted %d, refused %d", len(ids), refused)
			}
			if dl, err := c.ListWebhookDeliveries(ctx, wh.ID, &client.ListWebhookDeliveriesParams{EventID: late.ID}); err != nil || len(dl.Data) != 1 ||
				dl.Data[0].Success || dl.Data[0].StatusCode == nil || *dl.Data[0].StatusCode != 400 {
				t.Fatalf("refused delivery: %+v %v", dl, err)
			}
			rc.setSecret(s2)
			if _, err := c.PingWebhook(ctx, wh.ID); err != nil {
				t.Fatal(err)
			}
			deliver()
			if ids, _, _ := rc.got(); len(ids) != 6 {
				t.Fatalf("the new secret's receiver accepted %d", len(ids))
			}

			if err := c.DeleteWebhook(ctx, wh.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := c.GetWebhook(ctx, wh.ID); !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
				t.Fatalf("GetWebhook after delete: %v", err)
			}
		})
	}
}

// TestIntegrationsLive creates, reads, syncs and disconnects integrations
// and the calendar feed through the client, on both engines; the CalDAV
// part runs against the test Radicale (AMS_TEST_CALDAV_URL) when there is
// one.
func TestIntegrationsLive(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			f := liveFixture(t, engine)
			c := client.New(f.Server.URL, f.Key)
			ctx := context.Background()
			var apiErr *client.Error

			ev, err := c.CreateCalendarEvent(ctx, client.CreateCalendarEventParams{AssistantID: f.Assistant.ID, Title: "Dentist", StartsAt: amstest.Start.Add(24 * time.Hour)})
			if err != nil {
				t.Fatal(err)
			}
			feed, err := c.CreateCalendarFeed(ctx)
			if err != nil || feed.Object != "calendar_feed" || !strings.HasPrefix(feed.ID, "int_") || !strings.HasSuffix(feed.URL, ".ics") {
				t.Fatalf("CreateCalendarFeed: %+v %v", feed, err)
			}
			status, body := fetch(t, feed.URL)
			if status != 200 || !strings.Contains(body, "BEGIN:VCALENDAR") || !strings.Contains(body, "UID:"+ev.ID) || !strings.Contains(body, "SUMMARY:Dentist") {
				t.Fatalf("feed: %d %q", status, body)
			}
			in, err := c.GetIntegration(ctx, feed.ID)
			if err != nil || in.Provider != client.ProviderICalFeed || in.Status != client.IntegrationConnected {
				t.Fatalf("GetIntegration: %+v %v", in, err)
			}
			if l, err := c.ListIntegrations(ctx, nil); err != nil || len(l.Data) != 1 || l.Data[0].ID != feed.ID {
				t.Fatalf("ListIntegrations: %+v %v", l, err)
			}
			if _, err := c.SyncIntegration(ctx, feed.ID); !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != "integration_not_syncable" {
				t.Fatalf("SyncIntegration of the feed: %v", err)
			}
			if err := c.DeleteIntegration(ctx, feed.ID); err != nil {
				t.Fatal(err)
			}
			if status, _ := fetch(t, feed.URL); status != 404 {
				t.Fatalf("revoked feed: %d", status)
			}
			if in, err := c.GetIntegration(ctx, feed.ID); err != nil || in.Status != client.IntegrationDisconnected {
				t.Fatalf("GetIntegration after delete: %+v %v", in, err)
			}

			if _, err := c.CreateIntegration(ctx, client.CreateIntegrationParams{Provider: "carrier-pigeon"}); !errors.As(err, &apiErr) ||
				apiErr.StatusCode != 400 || apiErr.Param != "provider" {
				t.Fatalf("CreateIntegration of an unknown provider: %v", err)
			}

			cal, user, password := radicaleCalendar(t)
			if cal == "" {
				t.Log("CalDAV part skipped: set AMS_TEST_CALDAV_URL, e.g. http://ams:ams-caldav-test@127.0.0.1:5232/ams/")
				return
			}
			created, err := c.CreateIntegration(ctx, client.CreateIntegrationParams{Provider: client.ProviderCalDAV,
				Config: map[string]any{"url": cal, "username": user}, Secrets: map[string]string{"password": password}})
			if err != nil || created.Provider != client.ProviderCalDAV || created.Status != client.IntegrationConnected || created.LastError != nil {
				t.Fatalf("CreateIntegration caldav: %+v %v", created, err)
			}
			if created.Config["url"] != cal || created.Config["password"] != nil {
				t.Errorf("config %v", created.Config)
			}
			synced, err := c.SyncIntegration(ctx, created.ID)
			if err != nil || synced.Status != client.IntegrationConnected {
				t.Fatalf("SyncIntegration: %+v %v", synced, err)
			}
			if err := c.DeleteIntegration(ctx, created.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := c.SyncIntegration(ctx, created.ID); !errors.As(err, &apiErr) || apiErr.StatusCode != 409 || apiErr.Code != "integration_disconnected" {
				t.Fatalf("SyncIntegration of a disconnected integration: %v", err)
			}
		})
	}
}

// fetch GETs u without credentials and returns the status and body.
func fetch(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// radicaleCalendar makes a calendar collection on the test Radicale
// (AMS_TEST_CALDAV_URL) and returns its URL, user and password; "" when
// there is none (a failure when AMS_REQUIRE_CALDAV_TESTS is set).
func radicaleCalendar(t *testing.T) (string, string, string) {
	t.Helper()
	raw := os.Getenv("AMS_TEST_CALDAV_URL")
	if raw == "" {
		if os.Getenv("AMS_REQUIRE_CALDAV_TESTS") != "" {
			t.Fatal("AMS_TEST_CALDAV_URL is not set but AMS_REQUIRE_CALDAV_TESTS is")
		}
		return "", "", ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	user := u.User.Username()
	password, _ := u.User.Password()
	u.User = nil
	name := make([]byte, 8)
	rand.Read(name)
	u.Path = strings.TrimSuffix(u.Path, "/") + "/cal-" + strings.ToLower(base64.RawURLEncoding.EncodeToString(name)) + "/"
	req, _ := http.NewRequest("MKCALENDAR", u.String(), nil)
	req.SetBasicAuth(user, password)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("MKCALENDAR: %s", resp.Status)
	}
	t.Cleanup(func() {
		req, _ := http.NewRequest("DELETE", u.String(), nil)
		req.SetBasicAuth(user, password)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	})
	return u.String(), user, password
}
