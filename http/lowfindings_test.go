package http_test

import (
	"context"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/amsdev/ams"
	amshttp "github.com/amsdev/ams/http"
	"github.com/amsdev/ams/internal/testing/amstest"
	"github.com/amsdev/ams/internal/testing/wait"
)

// Issue 26, the low findings (L4 to L8 and the last two), over HTTP on
// both engines.

// TestTimeRangeCheckedInUTC (L4): a time whose year is 9999 as written
// but 10000 in UTC ("9999-12-31T23:59:59-23:59"), or 1969 in UTC
// ("1970-01-01T00:00:00+01:00"), is refused with 400 naming the field or
// query parameter, and nothing is stored.
func TestTimeRangeCheckedInUTC(t *testing.T) {
	t.Parallel()
	onBothEngines(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		for _, v := range []string{"9999-12-31T23:59:59-23:59", "1970-01-01T00:00:00+01:00"} {
			body := `{"assistant_id":"` + f.Assistant.ID + `","title":"Far away","due_at":"` + v + `"}`
			wantError(t, f.do("POST", "/v1/tasks", body), 400, "invalid_request_error", "parameter_invalid", "due_at")
			body = `{"assistant_id":"` + f.Assistant.ID + `","title":"Far away","starts_at":"` + v + `","ends_at":"9999-12-31T00:00:00Z"}`
			wantError(t, f.do("POST", "/v1/calendar/events", body), 400, "invalid_request_error", "parameter_invalid", "starts_at")
			wantError(t, f.do("GET", "/v1/tasks?due_after="+url.QueryEscape(v), ""), 400, "invalid_request_error", "parameter_invalid", "due_after")
			body = `{"name":"far","permissions":["read"],"expires_at":"` + v + `"}`
			r := f.Do("POST", "/v1/keys", f.NewKey(f.User, "admin"), body)
			wantError(t, &response{r.Status, r.Header, r.Body}, 400, "invalid_request_error", "parameter_invalid", "expires_at")
		}
		tasks, err := f.Data.ListTasks(ctx, f.User.ID, ams.TaskFilter{}, ams.ListParams{Limit: 100})
		if err != nil || len(tasks.Data) != 0 {
			t.Fatalf("tasks stored: %v %v", tasks, err)
		}
		// The last instant in range is accepted.
		body := `{"assistant_id":"` + f.Assistant.ID + `","title":"Last day","due_at":"9999-12-31T23:59:59+01:00"}`
		if r := f.do("POST", "/v1/tasks", body); r.status != 201 || r.json(t)["due_at"] != "9999-12-31T22:59:59.000Z" {
			t.Fatalf("last day: %d %s", r.status, r.body)
		}
	})
}

// TestHSTSWithHTTPSBaseURL (L6): with an https base URL every answer
// (the API, its errors, the health check) carries Strict-Transport-Security;
// with an http one, none does.
func TestHSTSWithHTTPSBaseURL(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ base, want string }{
		{"https://ams.example.com", amshttp.HSTS},
		{"HTTPS://ams.example.com/", amshttp.HSTS},
		{"http://127.0.0.1:8080", ""},
	} {
		s := &amshttp.Server{BaseURL: c.base}
		for _, path := range []string{"/healthz", "/v1/assistants", "/v1/nothing"} {
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
			if got := rec.Header().Get("Strict-Transport-Security"); got != c.want {
				t.Errorf("%s %s: Strict-Transport-Security %q, want %q", c.base, path, got, c.want)
			}
		}
	}
}

// TestKeyAndClientCaps (L7): an account with ams.MaxAPIKeys keys in use
// gets 409 api_key_limit_reached from POST /v1/keys, one with
// ams.MaxOAuthClients apps 409 oauth_client_limit_reached from POST
// /v1/oauth/clients; nothing is stored and no event emitted. Revoking a
// key frees its place.
func TestKeyAndClientCaps(t *testing.T) {
	t.Parallel()
	onBothEngines(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		admin := f.NewKey(f.User, "admin")
		for n := 2; n < ams.MaxAPIKeys; n++ { // the fixture's key and admin are two
			f.NewKey(f.User, "read")
		}
		call := func(method, path, body string) *response {
			r := f.Do(method, path, admin, body)
			return &response{r.Status, r.Header, r.Body}
		}
		events := func() int {
			p, err := f.Data.ListEvents(ctx, f.User.ID, ams.EventFilter{}, ams.ListParams{Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			return len(p.Data)
		}
		before := events()
		wantError(t, call("POST", "/v1/keys", `{"name":"one too many","permissions":["read"]}`), 409, "invalid_request_error", "api_key_limit_reached", "")
		keys, _ := f.Data.ListKeys(ctx, f.User.ID)
		if len(keys) != ams.MaxAPIKeys || events() != before {
			t.Fatalf("%d keys, %d events after the refusal (%d before)", len(keys), events(), before)
		}
		if r := call("POST", "/v1/keys/"+keys[0].ID+"/revoke", ""); r.status != 200 {
			t.Fatalf("revoke: %d %s", r.status, r.body)
		}
		r := call("POST", "/v1/keys", `{"name":"in the freed place","permissions":["read"]}`)
		if r.status != 201 {
			t.Fatalf("key after a revocation: %d %s", r.status, r.body)
		}
		// Its event is listed once every transaction that began before it
		// has ended (on PostgreSQL, other tests' too): count from then.
		req := r.header.Get("X-Request-Id")
		wait.Eventually(t, "the new key's event listed", func() bool {
			p, err := f.Data.ListEvents(ctx, f.User.ID, ams.EventFilter{Type: "api_key.created"}, ams.ListParams{Limit: 1})
			if err != nil {
				t.Fatal(err)
			}
			return len(p.Data) == 1 && p.Data[0].Request != nil && p.Data[0].Request.ID == req
		})
		for n := 0; n < ams.MaxOAuthClients; n++ {
			c := &ams.OAuthClient{ID: ams.NewID(ams.PrefixClient), Object: "oauth_client", UserID: f.User.ID, Name: "App",
				RedirectURIs: []string{"https://app.example/cb"}, SecretHash: ams.HashSecret("s"), CreatedAt: f.Clock.Now(), UpdatedAt: f.Clock.Now()}
			if err := f.Data.CreateOAuthClient(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		before = events()
		wantError(t, call("POST", "/v1/oauth/clients", `{"name":"c","redirect_uris":["https://example.com/cb"]}`), 409, "invalid_request_error", "oauth_client_limit_reached", "")
		if cs, _ := f.Data.ListOAuthClients(ctx, f.User.ID); len(cs) != ams.MaxOAuthClients || events() != before {
			t.Fatalf("%d clients, %d events after the refusal", len(cs), events())
		}
	})
}

// TestManagementEventsNeedAdmin (L8): api_key.*, oauth_client.* and
// account.updated events are read only with admin: GET /v1/events leaves
// them out for a credential without it, and answers 403 when asked for
// one by type or id. A webhook made without admin may not name them (403,
// nothing stored) and does not receive them through "*"; one made with
// admin does. A credential without admin may not change a webhook that
// receives them.
func TestManagementEventsNeedAdmin(t *testing.T) {
	t.Parallel()
	onBothEngines(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		admin := f.NewKey(f.User, "admin")
		as := func(key, method, path, body string) *response {
			r := f.Do(method, path, key, body)
			return &response{r.Status, r.Header, r.Body}
		}
		const hook = `"url":"https://127.0.0.1:9/hook","secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"`
		theirs := f.create("/v1/webhooks", `{`+hook+`,"events":["*"]}`)["id"].(string) // without admin
		mine := as(admin, "POST", "/v1/webhooks", `{`+hook+`,"events":["*"]}`).json(t)["id"].(string)
		for _, events := range []string{`["api_key.created"]`, `["task.created","oauth_client.deleted"]`, `["account.updated"]`} {
			r := f.do("POST", "/v1/webhooks", `{`+hook+`,"events":`+events+`}`)
			wantError(t, r, 403, "permission_error", "insufficient_scope", "events")
			wantError(t, f.do("PATCH", "/v1/webhooks/"+theirs, `{"events":`+events+`}`), 403, "permission_error", "insufficient_scope", "events")
		}
		if p, _ := f.Data.ListWebhooks(ctx, f.User.ID, ams.ListParams{Limit: 100}); len(p.Data) != 2 {
			t.Fatalf("%d webhooks stored, want 2", len(p.Data))
		}
		wantError(t, f.do("PATCH", "/v1/webhooks/"+mine, `{"metadata":{"a":"b"}}`), 403, "permission_error", "insufficient_scope", "")

		created := as(admin, "POST", "/v1/keys", `{"name":"audited","permissions":["read"]}`)
		if created.status != 201 {
			t.Fatalf("create key: %d %s", created.status, created.body)
		}
		f.do("POST", "/v1/tasks", `{"assistant_id":"`+f.Assistant.ID+`","title":"Not an audit event"}`)
		var id string
		// On PostgreSQL an event is listed a moment after its commit.
		wait.Until(func() bool {
			p, err := f.Data.ListEvents(ctx, f.User.ID, ams.EventFilter{}, ams.ListParams{Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Data) == 2 {
				id = p.Data[1].ID
			}
			return id != ""
		})

		types := func(key string) []string {
			var out []string
			for _, e := range as(key, "GET", "/v1/events?limit=100", "").json(t)["data"].([]any) {
				out = append(out, e.(map[string]any)["type"].(string))
			}
			return out
		}
		if got := types(f.Key); len(got) != 1 || got[0] != ams.EventTaskCreated {
			t.Fatalf("events read without admin: %v", got)
		}
		if got := types(admin); len(got) != 2 {
			t.Fatalf("events read with admin: %v", got)
		}
		r := f.do("GET", "/v1/events?type=api_key.created", "")
		wantError(t, r, 403, "permission_error", "insufficient_scope", "type")
		wantError(t, f.do("GET", "/v1/events/"+id, ""), 403, "permission_error", "insufficient_scope", "")
		if r := as(admin, "GET", "/v1/events/"+id, ""); r.status != 200 {
			t.Fatalf("event with admin: %d", r.status)
		}

		// Deliveries: the admin's "*" webhook gets api_key.created, the
		// other "*" webhook only task.created.
		jobs, err := f.Data.ClaimJobs(ctx, f.Clock.Now().Add(time.Minute), ams.Claim{Lease: time.Minute, Limit: 100, PerWebhook: 100})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string][]string{}
		for _, j := range jobs {
			got[j.WebhookID] = append(got[j.WebhookID], j.Event.Type)
		}
		slices.Sort(got[mine])
		if !slices.Equal(got[theirs], []string{ams.EventTaskCreated}) || !slices.Equal(got[mine], []string{ams.EventAPIKeyCreated, ams.EventTaskCreated}) {
			t.Fatalf("deliveries queued: without admin %v, with admin %v", got[theirs], got[mine])
		}
	})
}

// TestConcurrentTurnsCap: an account holding MaxConcurrentTurns turns in
// progress gets 429 concurrent_turns_exceeded with Retry-After for a
// further send or turn stream, and nothing is stored; another account is
// not held back; once a turn ends its slot is free again.
func TestConcurrentTurnsCap(t *testing.T) {
	t.Parallel()
	started, release := make(chan string, 10), make(chan struct{})
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(free) // a failing test does not leave turns waiting
	f := &fixture{amstest.New(t, amstest.WithEngine(engineFunc(func(ctx context.Context, req *ams.EngineRequest) (*ams.Reply, error) {
		started <- req.Assistant.ID
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &ams.Reply{Content: "Done."}, nil
	})))}
	f.API.MaxConcurrentTurns = 2
	send := func(key, assistant string) <-chan *response {
		out := make(chan *response, 1)
		go func() {
			r := f.Do("POST", "/v1/messages", key, `{"assistant_id":"`+assistant+`","message":"hi"}`)
			out <- &response{r.Status, r.Header, r.Body}
		}()
		return out
	}
	first, second := send(f.Key, f.Assistant.ID), send(f.Key, f.Assistant.ID)
	<-started
	<-started
	r := f.do("POST", "/v1/messages", `{"assistant_id":"`+f.Assistant.ID+`","message":"one too many"}`)
	wantError(t, r, 429, "rate_limit_error", "concurrent_turns_exceeded", "")
	if r.header.Get("Retry-After") != amshttp.TurnRetryAfter {
		t.Fatalf("Retry-After %q", r.header.Get("Retry-After"))
	}
	wantError(t, f.do("GET", "/v1/turns/turn_0VcAm4Oj9AVKjIltY3xVRRv9/events", ""), 429, "rate_limit_error", "concurrent_turns_exceeded", "")
	// Another account's turn starts.
	bob := f.NewUser("bob@example.com", ams.PlanStandard)
	third := send(f.NewKey(bob, "messages"), f.NewAssistant(bob, "Bob's").ID)
	<-started
	free()
	for _, c := range []<-chan *response{first, second, third} {
		if r := <-c; r.status != 201 {
			t.Fatalf("held turn: %d %s", r.status, r.body)
		}
	}
	if r := f.do("POST", "/v1/messages", `{"assistant_id":"`+f.Assistant.ID+`","message":"again"}`); r.status != 201 {
		t.Fatalf("after the turns ended: %d %s", r.status, r.body)
	}
	// The refused send stored nothing: three conversations of two
	// messages each, the held ones and the last.
	if n := f.counts(); n[0] != 3 || n[1] != 6 {
		t.Fatalf("conversations and messages stored: %v, want 3 and 6", n)
	}
}

// TestCalendarFeedRateLimited: an account's calendar feed answers
// amshttp.FeedLimits.PerMinute fetches a minute, then 429 with
// Retry-After until the window moves on; fetches with a wrong token (404)
// do not count against it, and another account's feed is not held back.
func TestCalendarFeedRateLimited(t *testing.T) {
	t.Parallel()
	f := setup(t)
	feed := func(key string) string {
		r := f.Do("POST", "/v1/calendar/feed", key, "")
		if r.Status != 201 {
			t.Fatalf("create feed: %d %s", r.Status, r.Body)
		}
		return r.JSON(t)["url"].(string)
	}
	url := feed(f.Key)
	wrong := url[:len(url)-len("xxxx.ics")] + "xxxx.ics"
	for i := 0; i < 2*amshttp.FeedLimits.PerMinute; i++ {
		if status, _, _ := getFeed(t, wrong); status != 404 {
			t.Fatalf("wrong token: %d", status)
		}
	}
	for i := 0; i < amshttp.FeedLimits.PerMinute; i++ {
		if status, _, body := getFeed(t, url); status != 200 {
			t.Fatalf("fetch %d: %d %s", i+1, status, body)
		}
	}
	status, h, _ := getFeed(t, url)
	if status != 429 || h.Get("Retry-After") == "" || h.Get("Retry-After") == "0" {
		t.Fatalf("fetch beyond the limit: %d, Retry-After %q", status, h.Get("Retry-After"))
	}
	bob := f.NewUser("bob@example.com", ams.PlanStandard)
	if status, _, _ := getFeed(t, feed(f.NewKey(bob, "integrations"))); status != 200 {
		t.Fatalf("another account's feed: %d", status)
	}
	wait, _ := strconv.Atoi(h.Get("Retry-After"))
	f.Clock.Add(time.Duration(wait) * time.Second)
	if status, _, _ := getFeed(t, url); status != 200 {
		t.Fatalf("after Retry-After (%d s): %d", wait, status)
	}
}
