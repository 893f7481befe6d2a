package webhook_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/amstest"
	"github.com/amsdev/ams/internal/testing/smtptest"
	"github.com/amsdev/ams/internal/testing/wait"
	"github.com/amsdev/ams/mail"
	"github.com/amsdev/ams/ssrf"
	"github.com/amsdev/ams/webhook"
)

// received is one request a test receiver got.
type received struct {
	header http.Header
	body   []byte
	at     time.Time
}

// receiver is a test webhook endpoint whose answer the test sets.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	got    []received
	status int
	clock  func() time.Time
}

func newReceiver(t *testing.T, clock func() time.Time) *receiver {
	rc := &receiver{status: 200, clock: clock}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, received{r.Header.Clone(), b, clock()})
		status := rc.status
		rc.mu.Unlock()
		w.WriteHeader(status)
		fmt.Fprintf(w, "answer %d from the receiver", status)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

func (rc *receiver) setStatus(s int) { rc.mu.Lock(); rc.status = s; rc.mu.Unlock() }

const secret = "a-very-secret-signing-key"

func createWebhook(t *testing.T, f *amstest.Fixture, url string, events ...string) string {
	t.Helper()
	ev, _ := json.Marshal(events)
	r := f.Do("POST", "/v1/webhooks", f.Key, fmt.Sprintf(`{"url":%q,"events":%s,"secret":%q}`, url, ev, secret))
	if r.Status != 201 {
		t.Fatalf("create webhook: %d %s", r.Status, r.Body)
	}
	m := r.JSON(t)
	if _, ok := m["secret"]; ok {
		t.Fatal("the secret is returned")
	}
	return m["id"].(string)
}

func sendMessage(t *testing.T, f *amstest.Fixture, text string) map[string]any {
	t.Helper()
	r := f.Do("POST", "/v1/messages", f.Key, fmt.Sprintf(`{"assistant_id":%q,"message":%q}`, f.Assistant.ID, text))
	if r.Status != 201 {
		t.Fatalf("send: %d %s", r.Status, r.Body)
	}
	return r.JSON(t)
}

func runOnce(t *testing.T, f *amstest.Fixture) int {
	t.Helper()
	n, err := f.Worker.RunOnce(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestDeliverySignedWithBothSchemes(t *testing.T) {
	f := amstest.New(t)
	rc := newReceiver(t, f.Clock.Now)
	wh := createWebhook(t, f, rc.URL+"/hook", "message.created")
	reply := sendMessage(t, f, "Hello")
	if n := runOnce(t, f); n != 2 {
		t.Fatalf("delivered %d, want 2 (inbound and reply)", n)
	}
	got := rc.requests()
	if len(got) != 2 {
		t.Fatalf("receiver got %d requests", len(got))
	}
	var envs []map[string]any
	for _, g := range got {
		// X-Service-Signature: HMAC-SHA256 of the exact body, keyed with the secret.
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write(g.body)
		want := "sha256=" + hex.EncodeToString(mac.Sum(nil))
		if !hmac.Equal([]byte(g.header.Get("X-Service-Signature")), []byte(want)) {
			t.Fatalf("X-Service-Signature %q, want %q", g.header.Get("X-Service-Signature"), want)
		}
		var env map[string]any
		if err := json.Unmarshal(g.body, &env); err != nil {
			t.Fatal(err)
		}
		envs = append(envs, env)
		// Standard Webhooks: v1,base64(HMAC(secret, id.timestamp.body)).
		id, ts := g.header.Get("Webhook-Id"), g.header.Get("Webhook-Timestamp")
		mac = hmac.New(sha256.New, []byte(secret))
		mac.Write([]byte(id + "." + ts + "." + string(g.body)))
		if g.header.Get("Webhook-Signature") != "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)) || id != env["id"] {
			t.Fatalf("standard webhook headers: %v", g.header)
		}
		if sec, _ := strconv.ParseInt(ts, 10, 64); sec != f.Clock.Now().Unix() {
			t.Fatalf("webhook-timestamp %s", ts)
		}
		if g.header.Get("Content-Type") != "application/json" || g.header.Get("X-Service-Event") != "message.created" ||
			!strings.HasPrefix(g.header.Get("X-Service-Delivery"), "dlv_") || g.header.Get("User-Agent") != "ams-webhooks/"+ams.Version {
			t.Fatalf("headers: %v", g.header)
		}
	}
	dirs := map[string]map[string]any{}
	for _, e := range envs {
		if e["type"] != "message.created" || !strings.HasPrefix(e["id"].(string), "evt_") || e["created_at"] == nil {
			t.Fatalf("envelope %v", e)
		}
		d := e["data"].(map[string]any)
		dirs[d["direction"].(string)] = d
	}
	out := dirs["outbound"]
	if out == nil || out["message_id"] != reply["id"] || out["content"] != reply["content"] || out["assistant_id"] != f.Assistant.ID || dirs["inbound"]["content"] != "Hello" {
		t.Fatalf("message.created data: %v", dirs)
	}
	// The delivery log lists each attempt with its answer.
	l := f.Do("GET", "/v1/webhooks/"+wh+"/deliveries", f.Key, "").JSON(t)
	ds := l["data"].([]any)
	if len(ds) != 2 {
		t.Fatalf("deliveries: %v", l)
	}
	d := ds[0].(map[string]any)
	if d["success"] != true || d["status_code"] != 200.0 || d["attempt"] != 1.0 || d["response_body"] != "answer 200 from the receiver" ||
		d["error"] != nil || d["webhook_id"] != wh || !strings.HasPrefix(d["id"].(string), "dlv_") {
		t.Fatalf("delivery record: %v", d)
	}
	// Nothing is delivered twice.
	if n := runOnce(t, f); n != 0 {
		t.Fatalf("delivered %d more", n)
	}
	if m := scrape(t, f); !strings.Contains(m, `ams_webhook_deliveries_total{outcome="succeeded"} 2`) || !strings.Contains(m, "ams_webhook_queue_depth 0") {
		t.Fatalf("metrics after two deliveries:\n%s", grepLines(m, "ams_webhook"))
	}
}

func scrape(t *testing.T, f *amstest.Fixture) string {
	t.Helper()
	resp, err := http.Get(f.Server.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func TestUnsubscribedAndOtherAccountsGetNothing(t *testing.T) {
	f := amstest.New(t)
	rc := newReceiver(t, f.Clock.Now)
	createWebhook(t, f, rc.URL, "task.created")
	other := f.NewUser("bob@example.com", ams.PlanStandard)
	bobKey := f.NewKey(other, "write,messages")
	bobAst := f.NewAssistant(other, "Bob's")
	r := f.Do("POST", "/v1/messages", bobKey, fmt.Sprintf(`{"assistant_id":%q,"message":"hi"}`, bobAst.ID))
	if r.Status != 201 {
		t.Fatal(r.Status)
	}
	sendMessage(t, f, "hi")
	if n := runOnce(t, f); n != 0 || len(rc.requests()) != 0 {
		t.Fatalf("delivered %d", n)
	}
}

// TestScheduleFailingAndOneEmail follows one delivery to a receiver that
// always fails, on an injected clock: attempts at 0, 1m, 6m, 36m and
// 2h36m, then the webhook is failing, its owner gets one e-mail through a
// real SMTP server, and no attempt follows.
func TestScheduleFailingAndOneEmail(t *testing.T) {
	f := amstest.New(t)
	rc := newReceiver(t, f.Clock.Now)
	rc.setStatus(500)
	smtpd := smtptest.Start(t)
	sender, err := mail.NewSMTP(smtpd.URL(), mail.DefaultFrom)
	if err != nil {
		t.Fatal(err)
	}
	mails := &mail.Worker{Queue: f.Store, Sender: sender, Clock: f.Clock.Now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	wh := createWebhook(t, f, rc.URL, "message.created")
	ping := f.Do("POST", "/v1/webhooks/"+wh+"/ping", f.Key, "")
	if ping.Status != 202 {
		t.Fatalf("ping: %d %s", ping.Status, ping.Body)
	}
	eventID := ping.JSON(t)["id"].(string)
	start := f.Clock.Now()
	offsets := []time.Duration{0, time.Minute, 6 * time.Minute, 36 * time.Minute, 156 * time.Minute}
	for i, off := range offsets {
		// Just before the attempt is due, nothing happens.
		if i > 0 {
			f.Clock.Add(off - f.Clock.Now().Sub(start) - time.Second)
			if n := runOnce(t, f); n != 0 {
				t.Fatalf("attempt %d came %v early", i+1, time.Second)
			}
			f.Clock.Add(time.Second)
		}
		if n := runOnce(t, f); n != 1 {
			t.Fatalf("attempt %d at +%v: %d deliveries", i+1, off, n)
		}
		got := rc.requests()
		if len(got) != i+1 || !got[i].at.Equal(start.Add(off)) || got[i].header.Get("Webhook-Id") != eventID {
			t.Fatalf("attempt %d: %d requests, at %v (want +%v)", i+1, len(got), got[len(got)-1].at.Sub(start), off)
		}
		if i == 0 {
			// One delivery waits for its retry; none is due yet.
			if m := scrape(t, f); !strings.Contains(m, "ams_webhook_queue_depth 1") || !strings.Contains(m, `ams_webhook_deliveries_total{outcome="retry"} 1`) ||
				!strings.Contains(m, "ams_webhook_oldest_pending_seconds 0") {
				t.Fatalf("metrics after the first failure:\n%s", grepLines(m, "ams_webhook"))
			}
		}
		if i < len(offsets)-1 {
			if st := f.Do("GET", "/v1/webhooks/"+wh, f.Key, "").JSON(t); st["status"] != "active" || st["active"] != true {
				t.Fatalf("after attempt %d the webhook is %v", i+1, st)
			}
		}
	}
	st := f.Do("GET", "/v1/webhooks/"+wh, f.Key, "").JSON(t)
	if st["status"] != "failing" || st["active"] != false {
		t.Fatalf("after five failures: %v", st)
	}
	// Exactly one e-mail that it is failing, to the owner, after the
	// early warning of the third failure in a row (webhook.degraded).
	for range 3 {
		if _, err := mails.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	msgs := smtpd.Messages()
	if len(msgs) != 2 || len(msgs[1].To) != 1 || msgs[1].To[0] != f.User.Email ||
		!strings.Contains(msgs[0].Parsed(t).Header.Get("Subject"), "degraded") {
		t.Fatalf("e-mails: %+v", msgs)
	}
	em, body := msgs[1].Parsed(t), msgs[1].Text(t)
	if !strings.Contains(em.Header.Get("Subject"), "failing") || !strings.Contains(body, wh) || !strings.Contains(body, rc.URL) ||
		!strings.Contains(body, `{"active": true}`) || !strings.Contains(body, "failed 5 times") {
		t.Fatalf("e-mail: %v\n%s", em.Header, body)
	}
	// No more attempts, and new events are not queued for it.
	f.Clock.Add(5 * time.Hour)
	sendMessage(t, f, "anyone there?")
	if n := runOnce(t, f); n != 0 || len(rc.requests()) != 5 {
		t.Fatalf("after failing: %d deliveries, %d requests", n, len(rc.requests()))
	}
	// The delivery log has the five attempts, newest first.
	l := f.Do("GET", "/v1/webhooks/"+wh+"/deliveries?event_id="+eventID, f.Key, "").JSON(t)
	ds := l["data"].([]any)
	if len(ds) != 5 || ds[0].(map[string]any)["attempt"] != 5.0 || ds[0].(map[string]any)["status_code"] != 500.0 ||
		ds[0].(map[string]any)["success"] != false || ds[0].(map[string]any)["error"] != "the receiver answered 500" {
		t.Fatalf("delivery log: %v", l)
	}
	// Ping and redelivery are refused while it is off.
	if r := f.Do("POST", "/v1/webhooks/"+wh+"/ping", f.Key, ""); r.Status != 409 {
		t.Fatalf("ping of a failing webhook: %d", r.Status)
	}
	// PATCH {"active": true} brings it back.
	rc.setStatus(200)
	up := f.Do("PATCH", "/v1/webhooks/"+wh, f.Key, `{"active": true}`).JSON(t)
	if up["status"] != "active" || up["active"] != true {
		t.Fatalf("re-enabled: %v", up)
	}
	dlv := ds[0].(map[string]any)["id"].(string)
	rr := f.Do("POST", "/v1/webhooks/"+wh+"/deliveries/"+dlv+"/redeliver", f.Key, "")
	if rr.Status != 202 || rr.JSON(t)["event_id"] != eventID {
		t.Fatalf("redeliver: %d %s", rr.Status, rr.Body)
	}
	if n := runOnce(t, f); n != 1 {
		t.Fatalf("redelivery: %d", n)
	}
	last := rc.requests()[5]
	if last.header.Get("Webhook-Id") != eventID {
		t.Fatalf("redelivered event id %s", last.header.Get("Webhook-Id"))
	}
	for range 2 {
		mails.RunOnce(context.Background())
	}
	// The failing e-mail was the only one of its kind; the redelivery's
	// success after the failures adds the notice that it recovered.
	if msgs := smtpd.Messages(); len(msgs) != 3 || !strings.Contains(msgs[2].Parsed(t).Header.Get("Subject"), "again") {
		t.Fatalf("%d e-mails in all", len(msgs))
	}
}

// TestFailureModes delivers to receivers that fail in each way and checks
// the recorded attempt.
func TestFailureModes(t *testing.T) {
	f := amstest.New(t)
	// The slow receiver is given a short limit, so the test does not wait
	// for the production one; long enough for a TLS handshake on a loaded
	// machine.
	const timeout = time.Second
	f.Worker.Timeout = timeout
	redirectTarget := newReceiver(t, f.Clock.Now)
	redirect := httptest.NewServer(http.RedirectHandler(redirectTarget.URL, http.StatusFound))
	t.Cleanup(redirect.Close)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Reading the body lets the server notice that the worker gave up
		// (r.Context is canceled then), so closing the server does not
		// wait.
		io.Copy(io.Discard, r.Body)
		select {
		case <-time.After(webhook.Timeout + 2*time.Second):
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(slow.Close)
	tlsServer := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(tlsServer.Close)
	// The process's first verification of a certificate loads the
	// system's roots, which can take longer than the timeout under -race
	// on a loaded machine: the "TLS error" case would then fail by time.
	if _, err := x509.SystemCertPool(); err != nil {
		t.Logf("system roots: %v", err)
	}
	gone := newReceiver(t, f.Clock.Now)
	gone.setStatus(410)
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	refused := "http://" + ln.Addr().String()
	ln.Close()

	cases := []struct {
		name, url, errText string
		status             any
		failing            bool
	}{
		{"redirect", redirect.URL, "redirect (302) not followed", 302.0, false},
		{"timeout", slow.URL, "timeout: no answer within " + timeout.String(), nil, false},
		{"connection refused", refused, "connection refused", nil, false},
		{"TLS error", tlsServer.URL, "TLS error", nil, false},
		{"gone", gone.URL, "410 Gone", 410.0, true},
	}
	ids := map[string]string{}
	for _, c := range cases {
		ids[c.name] = createWebhook(t, f, c.url, "message.created")
	}
	sendMessage(t, f, "hi")
	if n := runOnce(t, f); n != 2*len(cases) {
		t.Fatalf("attempts: %d", n)
	}
	for _, c := range cases {
		l := f.Do("GET", "/v1/webhooks/"+ids[c.name]+"/deliveries", f.Key, "").JSON(t)
		d := l["data"].([]any)[0].(map[string]any)
		if d["success"] != false || d["status_code"] != c.status || !strings.Contains(fmt.Sprint(d["error"]), c.errText) {
			t.Errorf("%s: delivery %v", c.name, d)
		}
		st := f.Do("GET", "/v1/webhooks/"+ids[c.name], f.Key, "").JSON(t)
		if (st["status"] == "failing") != c.failing {
			t.Errorf("%s: webhook status %v", c.name, st["status"])
		}
	}
	if len(redirectTarget.requests()) != 0 {
		t.Fatal("the redirect was followed")
	}
	// After its 410 the receiver gets nothing more (both events of the
	// message may have been in flight together before the answer).
	before := len(gone.requests())
	for _, c := range cases { // turning the others off cancels their retries
		if !c.failing {
			if r := f.Do("PATCH", "/v1/webhooks/"+ids[c.name], f.Key, `{"active": false}`); r.Status != 200 || r.JSON(t)["active"] != false {
				t.Fatalf("disable %s: %d %s", c.name, r.Status, r.Body)
			}
		}
	}
	f.Clock.Add(time.Hour)
	sendMessage(t, f, "again")
	if n := runOnce(t, f); n != 0 {
		t.Fatalf("%d deliveries after every webhook was off", n)
	}
	if len(gone.requests()) != before {
		t.Fatalf("410 receiver got %d requests after it was marked failing", len(gone.requests())-before)
	}
}

// TestSSRFBlockedAtDeliveryTime: a host that resolved to a public address
// when the webhook was created, and to loopback when it is delivered, is
// not reached.
func TestSSRFBlockedAtDeliveryTime(t *testing.T) {
	f := amstest.New(t)
	rc := newReceiver(t, f.Clock.Now)
	_, port, _ := net.SplitHostPort(rc.Listener.Addr().String())
	var mu sync.Mutex
	calls := 0
	guard := &ssrf.Guard{Resolve: func(ctx context.Context, host string) ([]netip.Addr, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls == 1 {
			return []netip.Addr{netip.MustParseAddr("93.184.215.14")}, nil
		}
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}}
	f.Webhooks.Guard = guard
	f.Worker.Client = webhook.NewClient(guard)
	wh := createWebhook(t, f, "https://rebind.example:"+port+"/hook", "message.created")
	sendMessage(t, f, "hi")
	runOnce(t, f)
	if len(rc.requests()) != 0 {
		t.Fatal("the internal receiver was reached")
	}
	d := f.Do("GET", "/v1/webhooks/"+wh+"/deliveries", f.Key, "").JSON(t)["data"].([]any)[0].(map[string]any)
	if !strings.Contains(d["error"].(string), "internal address") || d["status_code"] != nil {
		t.Fatalf("delivery: %v", d)
	}
	// And creating one for an internal address is refused outright.
	for _, u := range []string{"https://127.0.0.1/x", "https://169.254.169.254/latest", "http://example.com/x", "https://rebind.example/x"} {
		r := f.Do("POST", "/v1/webhooks", f.Key, fmt.Sprintf(`{"url":%q,"events":["message.created"],"secret":%q}`, u, secret))
		if r.Status != 400 || r.JSON(t)["error"].(map[string]any)["param"] != "url" {
			t.Errorf("%s: %d %s", u, r.Status, r.Body)
		}
	}
}

// TestSlowReceiverDoesNotDelayOthers: a receiver that hangs holds only its
// own slots. The hung deliveries outlast the test (the worker's timeout
// is an hour), so the fast receiver's deliveries can only get through the
// slots the slow one may not take: the test asserts that mechanism, not a
// latency figure.
func TestSlowReceiverDoesNotDelayOthers(t *testing.T) {
	f := amstest.New(t)
	release := make(chan struct{})
	hung := make(chan struct{}, 32)
	var open atomic.Int32
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		open.Add(1)
		defer open.Add(-1)
		hung <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	fast := newReceiver(t, time.Now)
	createWebhook(t, f, slow.URL, "message.created")
	for i := 0; i < 10; i++ { // 20 events for the slow receiver
		sendMessage(t, f, "backlog")
	}
	f.Worker.Concurrency, f.Worker.PerWebhook = 4, 2
	f.Worker.Timeout = time.Hour
	f.Worker.Client = (&ssrf.Guard{AllowPrivate: true}).Client(ssrf.Limits{Timeout: time.Hour})
	f.Worker.Client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.Worker.Run(ctx); close(done) }()
	// The hung deliveries are released before the worker is stopped, so
	// that stopping does not wait for their timeout.
	t.Cleanup(func() { close(release); cancel(); <-done; slow.Close() })
	for range f.Worker.PerWebhook { // the slow receiver now holds its slots
		select {
		case <-hung:
		case <-time.After(time.Minute):
			t.Fatal("the slow receiver's deliveries did not start")
		}
	}
	createWebhook(t, f, fast.URL, "message.created")
	sendMessage(t, f, "urgent")
	if !wait.Until(func() bool { return len(fast.requests()) >= 2 }) {
		t.Fatalf("the fast receiver got %d of 2 deliveries while the slow one held its slots", len(fast.requests()))
	}
	if n := open.Load(); n != int32(f.Worker.PerWebhook) {
		t.Fatalf("the slow receiver has %d deliveries open, want its %d slots held throughout", n, f.Worker.PerWebhook)
	}
}

// TestLateAttemptNotRecorded: a delivery that outlives its lease (here the
// clock jumps past it while the receiver answers, as a stalled process
// would see) is not recorded: no delivery log entry, no attempt counted;
// the job is attempted again and recorded once, as attempt 1, by the
// worker that then holds it, and counted in
// ams_webhook_leases_expired_total.
func TestLateAttemptNotRecorded(t *testing.T) {
	f := amstest.New(t)
	var calls sync.WaitGroup
	first := true
	var mu sync.Mutex
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if first { // the worker stalls past its lease during this attempt
			first = false
			f.Clock.Add(f.Worker.Lease + time.Second)
		}
		calls.Done()
	}))
	t.Cleanup(rc.Close)
	wh := createWebhook(t, f, rc.URL, "message.created")
	ping := f.Do("POST", "/v1/webhooks/"+wh+"/ping", f.Key, "")
	if ping.Status != 202 {
		t.Fatalf("ping: %d %s", ping.Status, ping.Body)
	}
	// The first attempt's record comes too late and is discarded; its job,
	// whose lease is over, is attempted again and recorded.
	calls.Add(2)
	if n := runOnce(t, f); n != 2 {
		t.Fatalf("%d deliveries, want the late one and the one after it", n)
	}
	calls.Wait()
	log := f.Do("GET", "/v1/webhooks/"+wh+"/deliveries", f.Key, "").JSON(t)["data"].([]any)
	if len(log) != 1 || log[0].(map[string]any)["attempt"] != float64(1) || log[0].(map[string]any)["success"] != true {
		t.Fatalf("delivery log: %v", log)
	}
	if n := runOnce(t, f); n != 0 {
		t.Fatalf("the delivered job was attempted again: %d", n)
	}
	// The job taken again after its lease ran out unrecorded is counted.
	if m := metric(t, f, "ams_webhook_leases_expired_total"); m != "ams_webhook_leases_expired_total 1" {
		t.Fatalf("after one lease ran out: %s", m)
	}
}

// TestFailingEmailTurnedOff: an account that turned the failing e-mail off
// (PATCH /v1/account, email_notifications.webhook_failing) gets none when
// a webhook is marked failing; the webhook.failing event is still emitted.
func TestFailingEmailTurnedOff(t *testing.T) {
	f := amstest.New(t)
	admin := f.NewKey(f.User, "admin")
	if r := f.Do("PATCH", "/v1/account", admin, `{"email_notifications":{"webhook_failing":false}}`); r.Status != 200 {
		t.Fatalf("PATCH /v1/account: %d %s", r.Status, r.Body)
	}
	rc := newReceiver(t, f.Clock.Now)
	rc.setStatus(410) // marks the webhook failing at once
	smtpd := smtptest.Start(t)
	sender, err := mail.NewSMTP(smtpd.URL(), mail.DefaultFrom)
	if err != nil {
		t.Fatal(err)
	}
	mails := &mail.Worker{Queue: f.Store, Sender: sender, Clock: f.Clock.Now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	wh := createWebhook(t, f, rc.URL, "message.created")
	if ping := f.Do("POST", "/v1/webhooks/"+wh+"/ping", f.Key, ""); ping.Status != 202 {
		t.Fatalf("ping: %d %s", ping.Status, ping.Body)
	}
	if n := runOnce(t, f); n != 1 {
		t.Fatalf("deliveries: %d", n)
	}
	if st := f.Do("GET", "/v1/webhooks/"+wh, f.Key, "").JSON(t); st["status"] != "failing" {
		t.Fatalf("webhook: %v", st)
	}
	for range 2 {
		if _, err := mails.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if msgs := smtpd.Messages(); len(msgs) != 0 {
		t.Fatalf("e-mails sent although turned off: %d", len(msgs))
	}
	evs := f.Do("GET", "/v1/events?type=webhook.failing", f.Key, "").JSON(t)["data"].([]any)
	if len(evs) != 1 {
		t.Fatalf("webhook.failing events: %d", len(evs))
	}
}

// countingQueue is a Queue that counts the jobs each path claimed.
type countingQueue struct {
	webhook.Queue
	rc                              webhook.RecordClaimer
	byClaims, byRecords             atomic.Int64
	claims, records, claimsWithJobs atomic.Int64
}

func (q *countingQueue) ClaimJobs(ctx context.Context, now time.Time, c ams.Claim) ([]*ams.Job, error) {
	jobs, err := q.Queue.ClaimJobs(ctx, now, c)
	q.claims.Add(1)
	if len(jobs) > 0 {
		q.claimsWithJobs.Add(1)
	}
	q.byClaims.Add(int64(len(jobs)))
	return jobs, err
}

func (q *countingQueue) RecordAttemptsAndClaim(ctx context.Context, rs []*ams.AttemptResult, now time.Time, c ams.Claim) ([]error, []*ams.Job, error, error) {
	errs, jobs, claimErr, err := q.rc.RecordAttemptsAndClaim(ctx, rs, now, c)
	q.records.Add(1)
	q.byRecords.Add(int64(len(jobs)))
	return errs, jobs, claimErr, err
}

// TestRecordsClaimTheirSuccessors: on SQLite (a RecordClaimer), a running
// worker takes the next jobs in the transaction that records the
// attempts before them: with one slot of the webhook and 20 jobs queued,
// one claim of its own starts the first and each record claims the next;
// every event arrives once, and the receiver never has two deliveries at
// once. The worker has slots to spare (the cap is the webhook's), yet it
// does not claim again after a record that took the freed slot's
// successor: such a claim finds nothing and holds up the writer.
func TestRecordsClaimTheirSuccessors(t *testing.T) {
	f := amstest.New(t)
	rc, ok := f.Worker.Queue.(webhook.RecordClaimer)
	if !ok {
		t.Fatalf("the SQLite store (%T) does not claim with its records", f.Worker.Queue)
	}
	var open, most atomic.Int32
	var mu sync.Mutex
	seen := map[string]int{}
	all := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := open.Add(1)
		defer open.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		var e struct{ ID string }
		json.NewDecoder(r.Body).Decode(&e)
		mu.Lock()
		seen[e.ID]++
		if len(seen) == 20 && seen[e.ID] == 1 {
			close(all)
		}
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	createWebhook(t, f, srv.URL, "message.created")
	for range 10 { // 20 message.created events
		sendMessage(t, f, "one at a time")
	}
	q := &countingQueue{Queue: f.Worker.Queue, rc: rc}
	f.Worker.Queue = q
	f.Worker.PerWebhook = 1
	f.Worker.PollInterval = time.Hour // no claims by the clock
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.Worker.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-all:
	case <-time.After(time.Minute):
		t.Fatalf("%d of 20 events arrived", func() int { mu.Lock(); defer mu.Unlock(); return len(seen) }())
	}
	cancel()
	<-done
	for id, n := range seen {
		if n != 1 {
			t.Errorf("event %s arrived %d times", id, n)
		}
	}
	if q.byClaims.Load() != 1 || q.claimsWithJobs.Load() != 1 || q.byRecords.Load() != 19 {
		t.Fatalf("jobs claimed: %d by %d claims of their own, %d by %d records; want 1 by 1 claim and 19 by the records",
			q.byClaims.Load(), q.claimsWithJobs.Load(), q.byRecords.Load(), q.records.Load())
	}
	if m := most.Load(); m != 1 {
		t.Fatalf("the receiver had %d deliveries at once, want 1 (one slot)", m)
	}
	// The first; one woken by the jobs queued before Run (they were
	// signalled); one after the last record, which found no successor.
	if n := q.claims.Load(); n > 3 {
		t.Fatalf("%d claims of the worker's own for 20 jobs, want 3 at most: the records' claims took the successors", n)
	}
}
