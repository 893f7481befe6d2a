package postgres_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/pgtest"
	"github.com/amsdev/ams/internal/testing/wait"
	"github.com/amsdev/ams/postgres"
	"github.com/amsdev/ams/storetest"
	"github.com/jackc/pgx/v5"
)

// databaseURL returns AMS_TEST_DATABASE_URL, or skips the test.
func databaseURL(t *testing.T) string { t.Helper(); return pgtest.URL(t) }

var testKey = pgtest.Key

// freshSchema returns the name of a schema of the test's own, which does
// not exist yet and is dropped with everything in it when the test ends.
func freshSchema(t *testing.T, url string) string { t.Helper(); return pgtest.FreshSchema(t, url) }

// createSchema creates a schema of the test's own, dropped when it ends.
func createSchema(t *testing.T, url string) string {
	t.Helper()
	name := freshSchema(t, url)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	return name
}

func openSchema(t *testing.T, url, schema string) *postgres.DB {
	t.Helper()
	return pgtest.OpenSchema(t, url, schema)
}

// open returns an empty store in a schema of the test's own.
func open(t *testing.T) *postgres.DB {
	t.Helper()
	url := databaseURL(t)
	return openSchema(t, url, createSchema(t, url))
}

func TestStore(t *testing.T) {
	databaseURL(t)
	storetest.Run(t, func(t *testing.T) ams.Store { return searchable{open(t)} })
}

// searchable is a test store that can search its tables for a text
// (storetest.TextHolder): every text column of the tables that hold what
// users wrote, and the events' data. Rows deleted or updated stay on disk
// until VACUUM, but no query sees them.
type searchable struct{ *postgres.DB }

func (s searchable) HoldsText(t *testing.T, text string) bool {
	t.Helper()
	var found bool
	like := "%" + text + "%"
	err := s.Pool().QueryRow(context.Background(), `SELECT
		EXISTS (SELECT 1 FROM events WHERE data::text LIKE $1) OR
		EXISTS (SELECT 1 FROM messages WHERE content LIKE $1) OR
		EXISTS (SELECT 1 FROM conversations WHERE title LIKE $1) OR
		EXISTS (SELECT 1 FROM turn_events WHERE data::text LIKE $1)`, like).Scan(&found)
	if err != nil {
		t.Fatal(err)
	}
	return found
}

func TestSecretKeyRequired(t *testing.T) {
	url := databaseURL(t)
	if _, err := postgres.Open(context.Background(), url, postgres.WithSchema(freshSchema(t, url))); err == nil ||
		!strings.Contains(err.Error(), "secret key") {
		t.Fatalf("open without a key: %v", err)
	}
}

// Processes that start together on a new schema all open it, and the
// migrations are applied once.
func TestConcurrentOpenMigratesOnce(t *testing.T) {
	t.Parallel()
	url := databaseURL(t)
	schema := freshSchema(t, url) // not created: Open creates it
	ctx := context.Background()
	count, latest := migrationFiles(t)
	const n = 4
	dbs := make([]*postgres.DB, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			dbs[i], errs[i] = postgres.Open(ctx, url, postgres.WithSecretKey(testKey), postgres.WithSchema(schema))
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("open %d: %v", i, errs[i])
		}
		defer dbs[i].Close()
		if v, err := dbs[i].SchemaVersion(ctx); err != nil || v != latest {
			t.Fatalf("schema version %d, %v", v, err)
		}
		if err := dbs[i].Ping(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var rows int
	if err := dbs[0].Pool().QueryRow(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&rows); err != nil || rows != count {
		t.Fatalf("schema_migrations has %d rows (%v), want %d", rows, err, count)
	}
	// Opening again applies nothing.
	again := openSchema(t, url, schema)
	if v, err := again.SchemaVersion(ctx); err != nil || v != latest {
		t.Fatalf("schema version on reopen %d, %v", v, err)
	}
}

var t0 = time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)

type fixture struct {
	user      *ams.User
	assistant *ams.Assistant
}

func setup(t *testing.T, s ams.Store) fixture {
	t.Helper()
	ctx := context.Background()
	u := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: ams.NewID("") + "@example.com", Plan: ams.PlanStandard, Timezone: "UTC", CreatedAt: t0, UpdatedAt: t0}
	if err := s.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	a := &ams.Assistant{ID: ams.NewID(ams.PrefixAssistant), UserID: u.ID, Name: "a", Model: ams.ModelBuiltin, CreatedAt: t0, UpdatedAt: t0}
	if err := s.CreateAssistant(ctx, a); err != nil {
		t.Fatal(err)
	}
	return fixture{u, a}
}

func (f fixture) webhook(t *testing.T, s ams.Store) *ams.Webhook {
	t.Helper()
	w := &ams.Webhook{ID: ams.NewID(ams.PrefixWebhook), UserID: f.user.ID, URL: "https://example.com/hook", Events: []string{ams.EventMessageCreated},
		Active: true, Status: ams.WebhookActive, Secret: "0123456789abcdef", CreatedAt: t0, UpdatedAt: t0}
	if err := s.CreateWebhook(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	return w
}

// turn stores a new conversation's first exchange: two message.created
// events at at.
func (f fixture) turn(t *testing.T, s ams.Store, at time.Time, text string) *ams.Exchange {
	t.Helper()
	conv := ams.NewID(ams.PrefixConversation)
	x := &ams.Exchange{ConversationID: conv, NewConversation: &ams.Conversation{ID: conv, UserID: f.user.ID, AssistantID: f.assistant.ID,
		Title: "t", LastMessageAt: at, CreatedAt: at, UpdatedAt: at}}
	mk := func(dir, content string) *ams.Message {
		return &ams.Message{ID: ams.NewID(ams.PrefixMessage), UserID: f.user.ID, AssistantID: f.assistant.ID, ConversationID: conv,
			Direction: dir, Content: content, CreatedAt: at, UpdatedAt: at}
	}
	x.Inbound, x.Reply = mk(ams.DirectionInbound, text), mk(ams.DirectionOutbound, "re: "+text)
	x.Events = []*ams.Event{ams.MessageCreatedEvent(x.Inbound), ams.MessageCreatedEvent(x.Reply)}
	if err := s.SaveExchange(context.Background(), x); err != nil {
		t.Error(err) // not Fatal: called from other goroutines too
	}
	return x
}

// Two processes (two stores on one schema), each with several workers,
// claim the same due jobs at once: every job is claimed exactly once.
func TestConcurrentClaimsAreDisjoint(t *testing.T) {
	t.Parallel()
	url := databaseURL(t)
	schema := createSchema(t, url)
	a, b := openSchema(t, url, schema), openSchema(t, url, schema)
	f := setup(t, a)
	for range 3 {
		f.webhook(t, a)
	}
	const turns = 50 // 3 webhooks × 2 events × 50 = 300 jobs
	for i := range turns {
		f.turn(t, a, t0, fmt.Sprint(i))
	}
	ctx := context.Background()
	var mu sync.Mutex
	claimed := map[int64]int{}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for _, s := range []*postgres.DB{a, b, a, b, a, b, a, b} {
		wg.Go(func() {
			for {
				jobs, err := s.ClaimJobs(ctx, t0.Add(time.Second), ams.Claim{Lease: time.Minute, Limit: 7, PerWebhook: 1000})
				if err != nil {
					errs <- err
					return
				}
				if len(jobs) == 0 {
					return
				}
				mu.Lock()
				for _, j := range jobs {
					claimed[j.Seq]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(claimed) != 3*2*turns {
		t.Fatalf("%d distinct jobs claimed, want %d", len(claimed), 3*2*turns)
	}
	for seq, n := range claimed {
		if n != 1 {
			t.Fatalf("job %d claimed %d times", seq, n)
		}
	}
}

// Two processes claim at once with a per-webhook cap of 3 and a
// per-account cap of 5: however the claims interleave, the leased jobs
// never exceed the caps (claims count each other's leases).
func TestConcurrentClaimsKeepCaps(t *testing.T) {
	t.Parallel()
	url := databaseURL(t)
	schema := createSchema(t, url)
	a, b := openSchema(t, url, schema), openSchema(t, url, schema)
	f := setup(t, a)
	for range 3 {
		f.webhook(t, a)
	}
	for i := range 20 { // 40 jobs per webhook
		f.turn(t, a, t0, fmt.Sprint(i))
	}
	ctx := context.Background()
	var mu sync.Mutex
	per := map[string]int{}
	total := 0
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for _, s := range []*postgres.DB{a, b, a, b, a, b, a, b} {
		wg.Go(func() {
			for range 5 {
				jobs, err := s.ClaimJobs(ctx, t0.Add(time.Second), ams.Claim{Lease: time.Minute, Limit: 2, PerWebhook: 3, PerAccount: 5})
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				for _, j := range jobs {
					per[j.WebhookID]++
					total++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if total != 5 {
		t.Fatalf("%d jobs leased in all, want the account's cap of 5 (%v)", total, per)
	}
	for id, n := range per {
		if n > 3 {
			t.Fatalf("webhook %s has %d jobs leased, over its cap of 3", id, n)
		}
	}
}

// Requests with one Idempotency-Key in several processes: one claims it.
func TestConcurrentIdempotencyKey(t *testing.T) {
	t.Parallel()
	url := databaseURL(t)
	schema := createSchema(t, url)
	a, b := openSchema(t, url, schema), openSchema(t, url, schema)
	f := setup(t, a)
	var wg sync.WaitGroup
	var mu sync.Mutex
	winners := 0
	for i := range 10 {
		s := []*postgres.DB{a, b}[i%2]
		wg.Go(func() {
			old, err := s.BeginIdempotent(context.Background(), &ams.IdempotencyRecord{UserID: f.user.ID, Key: "k", RequestHash: "h", CreatedAt: t0})
			if err != nil {
				t.Error(err)
				return
			}
			if old == nil {
				mu.Lock()
				winners++
				mu.Unlock()
			} else if old.Done || old.RequestHash != "h" {
				t.Errorf("running record read back as %+v", old)
			}
		})
	}
	wg.Wait()
	if winners != 1 {
		t.Fatalf("%d requests claimed the key, want 1", winners)
	}
}

// Final failures of one webhook recorded at once by two processes mark it
// failing once and queue one e-mail.
func TestConcurrentFinalFailuresEmailOnce(t *testing.T) {
	t.Parallel()
	url := databaseURL(t)
	schema := createSchema(t, url)
	a, b := openSchema(t, url, schema), openSchema(t, url, schema)
	f := setup(t, a)
	w := f.webhook(t, a)
	for i := range 4 {
		f.turn(t, a, t0, fmt.Sprint(i))
	}
	ctx := context.Background()
	jobs, err := a.ClaimJobs(ctx, t0, ams.Claim{Lease: time.Minute, Limit: 100, PerWebhook: 100})
	if err != nil || len(jobs) != 8 {
		t.Fatalf("claimed %d jobs, %v", len(jobs), err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	flips := 0
	for i, j := range jobs {
		s := []*postgres.DB{a, b}[i%2]
		wg.Go(func() {
			code := 500
			d := &ams.Delivery{ID: ams.NewID(ams.PrefixDelivery), UserID: f.user.ID, WebhookID: j.WebhookID, EventID: j.Event.ID,
				EventType: j.Event.Type, Attempt: 5, URL: j.URL, StatusCode: &code, CreatedAt: t0}
			email := &ams.Email{ID: ams.NewID("eml_"), Kind: ams.EmailWebhookFailing, To: f.user.Email, Subject: "failing", Text: "body"}
			failed, err := s.RecordAttempt(ctx, &ams.AttemptResult{Job: j, Delivery: d, Outcome: ams.JobFailed, Email: email}, t0)
			if err != nil {
				t.Error(err)
				return
			}
			if failed {
				mu.Lock()
				flips++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if flips != 1 {
		t.Fatalf("%d attempts marked the webhook failing, want 1", flips)
	}
	emails, err := a.ClaimEmails(ctx, t0.Add(time.Hour), time.Minute, 10)
	if err != nil || len(emails) != 1 {
		t.Fatalf("%d e-mails queued (%v), want 1", len(emails), err)
	}
	got, err := b.FindWebhook(ctx, f.user.ID, w.ID)
	if err != nil || got.Active || got.Status != ams.WebhookFailing {
		t.Fatalf("webhook after failing: %+v %v", got, err)
	}
}

// Deactivating a webhook while events are written leaves no pending job
// for it: every fan-out either precedes the deactivation (and its jobs are
// canceled) or sees it.
func TestDeactivateRacesFanOut(t *testing.T) {
	t.Parallel()
	url := databaseURL(t)
	schema := createSchema(t, url)
	a, b := openSchema(t, url, schema), openSchema(t, url, schema)
	f := setup(t, a)
	w := f.webhook(t, a)
	ctx := context.Background()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var turns atomic.Int64
	for range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				f.turn(t, a, t0, fmt.Sprint(i))
				turns.Add(1)
			}
		})
	}
	// The fan-outs are under way (every writer has had a turn or so)
	// when the webhook is turned off.
	wait.Eventually(t, "the writers' first turns", func() bool { return turns.Load() >= 4 })
	off := false
	if _, err := b.UpdateWebhook(ctx, f.user.ID, w.ID, ams.WebhookUpdate{Active: &off}, t0); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	var pending int
	if err := a.Pool().QueryRow(ctx, `SELECT count(*) FROM webhook_jobs WHERE webhook_id = $1 AND state = 'pending'`, w.ID).Scan(&pending); err != nil {
		t.Fatal(err)
	}
	if pending != 0 {
		t.Fatalf("%d jobs pending for a deactivated webhook", pending)
	}
}

// PostgreSQL text cannot hold NUL: such input is EINVALID, not internal.
func TestNULIsInvalid(t *testing.T) {
	t.Parallel()
	s := open(t)
	f := setup(t, s)
	a := &ams.Assistant{ID: ams.NewID(ams.PrefixAssistant), UserID: f.user.ID, Name: "a\x00b", Model: ams.ModelBuiltin, CreatedAt: t0, UpdatedAt: t0}
	if err := s.CreateAssistant(context.Background(), a); ams.ErrorKindOf(err) != ams.EINVALID {
		t.Fatalf("assistant name with NUL: %v", err)
	}
}

// A final failure recorded while the owner updates the webhook: both lock
// the webhook before its jobs, so neither deadlocks.
func TestFinalFailureRacesUpdate(t *testing.T) {
	t.Parallel()
	url := databaseURL(t)
	schema := createSchema(t, url)
	a, b := openSchema(t, url, schema), openSchema(t, url, schema)
	f := setup(t, a)
	w := f.webhook(t, a)
	ctx := context.Background()
	for round := range 20 {
		for i := range 3 {
			f.turn(t, a, t0, fmt.Sprint(round, i))
		}
		jobs, err := a.ClaimJobs(ctx, t0.Add(time.Hour), ams.Claim{Lease: time.Nanosecond, Limit: 100, PerWebhook: 100})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for _, j := range jobs {
			wg.Go(func() {
				d := &ams.Delivery{ID: ams.NewID(ams.PrefixDelivery), UserID: f.user.ID, WebhookID: j.WebhookID, EventID: j.Event.ID,
					EventType: j.Event.Type, Attempt: 5, URL: j.URL, CreatedAt: t0}
				if _, err := a.RecordAttempt(ctx, &ams.AttemptResult{Job: j, Delivery: d, Outcome: ams.JobFailed}, t0); err != nil {
					t.Error(err)
				}
			})
		}
		for _, on := range []bool{false, true} {
			wg.Go(func() {
				if _, err := b.UpdateWebhook(ctx, f.user.ID, w.ID, ams.WebhookUpdate{Active: &on}, t0); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		on := true
		if _, err := b.UpdateWebhook(ctx, f.user.ID, w.ID, ams.WebhookUpdate{Active: &on}, t0); err != nil {
			t.Fatal(err)
		}
	}
}

// The shared suite does not cover the OAuth storage: these are its
// semantics as the sqlite engine implements them.
func TestOAuthStore(t *testing.T) {
	t.Parallel()
	s := open(t)
	f := setup(t, s)
	ctx := context.Background()
	c := &ams.OAuthClient{ID: ams.NewID(ams.PrefixClient), UserID: f.user.ID, Name: "App", RedirectURIs: []string{"https://a.example/cb", "https://b.example/cb"},
		SecretHash: "h", CreatedAt: t0, UpdatedAt: t0}
	if err := s.CreateOAuthClient(ctx, c); err != nil {
		t.Fatal(err)
	}
	got, err := s.FindOAuthClient(ctx, c.ID)
	if err != nil || got.Name != "App" || len(got.RedirectURIs) != 2 || got.RedirectURIs[1] != "https://b.example/cb" || got.Public || got.Object != "oauth_client" {
		t.Fatalf("find client: %+v %v", got, err)
	}
	if _, err := s.FindOAuthClient(ctx, "cli_missing"); !ams.IsNotFound(err) {
		t.Fatalf("missing client: %v", err)
	}
	if cs, err := s.ListOAuthClients(ctx, f.user.ID); err != nil || len(cs) != 1 {
		t.Fatalf("list clients: %v %v", cs, err)
	}

	tok := &ams.OAuthToken{Signature: "sig1", Kind: ams.TokenRefresh, RequestID: "req1", ClientID: c.ID, UserID: f.user.ID,
		Scopes: []string{"read", "messages"}, Active: true, Data: []byte(`{"x":1}`), ExpiresAt: t0.Add(time.Hour), CreatedAt: t0}
	if err := s.CreateOAuthToken(ctx, tok); err != nil {
		t.Fatal(err)
	}
	tok2 := *tok
	tok2.Signature = "sig2"
	if err := s.CreateOAuthToken(ctx, &tok2); err != nil {
		t.Fatal(err)
	}
	gt, err := s.GetOAuthToken(ctx, ams.TokenRefresh, "sig1")
	if err != nil || !gt.Active || gt.RequestID != "req1" || fmt.Sprint(gt.Scopes) != "[read messages]" || string(gt.Data) != `{"x":1}` ||
		!gt.ExpiresAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("get token: %+v %v", gt, err)
	}
	if _, err := s.GetOAuthToken(ctx, ams.TokenAccess, "sig1"); !ams.IsNotFound(err) {
		t.Fatalf("token of another kind: %v", err)
	}
	if err := s.DeactivateOAuthToken(ctx, ams.TokenRefresh, "sig1"); err != nil {
		t.Fatal(err)
	}
	if gt, _ := s.GetOAuthToken(ctx, ams.TokenRefresh, "sig1"); gt == nil || gt.Active {
		t.Fatalf("deactivated token: %+v", gt)
	}
	if err := s.DeactivateGrant(ctx, ams.TokenRefresh, "req1"); err != nil {
		t.Fatal(err)
	}
	if gt, _ := s.GetOAuthToken(ctx, ams.TokenRefresh, "sig2"); gt == nil || gt.Active {
		t.Fatalf("token of a deactivated grant: %+v", gt)
	}
	if err := s.DeleteOAuthToken(ctx, ams.TokenRefresh, "sig1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetOAuthToken(ctx, ams.TokenRefresh, "sig1"); !ams.IsNotFound(err) {
		t.Fatalf("deleted token: %v", err)
	}
	if err := s.DeleteOAuthToken(ctx, ams.TokenRefresh, "nothing"); err != nil {
		t.Fatal(err)
	}

	ls := &ams.LoginSession{IDHash: "sess", UserID: f.user.ID, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	if err := s.CreateLoginSession(ctx, ls); err != nil {
		t.Fatal(err)
	}
	if got, err := s.FindLoginSession(ctx, "sess", t0.Add(time.Minute)); err != nil || got.UserID != f.user.ID || !got.ExpiresAt.Equal(ls.ExpiresAt) {
		t.Fatalf("find session: %+v %v", got, err)
	}
	if _, err := s.FindLoginSession(ctx, "sess", t0.Add(time.Hour)); !ams.IsNotFound(err) {
		t.Fatalf("expired session: %v", err)
	}
	if err := s.DeleteLoginSession(ctx, "sess"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.FindLoginSession(ctx, "sess", t0); !ams.IsNotFound(err) {
		t.Fatalf("deleted session: %v", err)
	}
}

func TestQueueStats(t *testing.T) {
	t.Parallel()
	s := open(t)
	f := setup(t, s)
	ctx := context.Background()
	if n, age, err := s.QueueStats(ctx, t0); err != nil || n != 0 || age != 0 {
		t.Fatalf("empty queue: %d %v %v", n, age, err)
	}
	f.webhook(t, s)
	f.turn(t, s, t0, "a")
	f.turn(t, s, t0.Add(time.Hour), "b") // not yet due at t0+1m
	if n, age, err := s.QueueStats(ctx, t0.Add(time.Minute)); err != nil || n != 4 || age != time.Minute {
		t.Fatalf("queue: %d %v %v", n, age, err)
	}
}

// migrationFiles returns how many migration files migrations/ holds and
// the newest one's number (the schema version a fresh store reaches);
// numbers may have gaps while branches that take numbers are merged.
func migrationFiles(t *testing.T) (count, latest int) {
	t.Helper()
	entries, err := os.ReadDir("migrations")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		var n int
		if _, err := fmt.Sscanf(e.Name(), "%d_", &n); err == nil {
			count++
			latest = max(latest, n)
		}
	}
	return count, latest
}
