package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/ssrf"
)

// Timeout is how long a receiver has to answer one delivery, unless the
// Worker's Timeout is shorter.
const Timeout = 5 * time.Second

// DefaultSchedule is the interface's: delays before attempts 1 to 5.
var DefaultSchedule = []time.Duration{0, time.Minute, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour}

// ParseSchedule parses "0s,1m,5m,30m,2h": the delay before each attempt.
// The first must be 0 (the first attempt is immediate); at least one.
func ParseSchedule(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, f := range strings.Split(s, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil || d < 0 {
			return nil, fmt.Errorf("retry schedule: %q is not a duration", f)
		}
		out = append(out, d)
	}
	if len(out) == 0 || out[0] != 0 {
		return nil, errors.New("retry schedule: the first attempt must be immediate (0s)")
	}
	return out, nil
}

// NewClient returns the HTTP client deliveries use: connections through the
// SSRF guard, a 5 s limit on the whole exchange, and redirects not followed
// (a 3xx answer is a failed attempt).
func NewClient(g *ssrf.Guard) *http.Client {
	return &http.Client{
		Transport: g.Transport(),
		Timeout:   Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// Users finds a webhook owner, for the failing e-mail.
type Users interface {
	FindUser(ctx context.Context, id string) (*ams.User, error)
}

// Worker delivers queued events. Several workers (in several processes)
// may share one queue: each job is leased to one at a time.
type Worker struct {
	Queue    ams.DeliveryQueue
	Users    Users
	Client   *http.Client
	Clock    ams.Clock
	Logger   *slog.Logger
	Schedule []time.Duration // delays before each attempt; len is the number of attempts
	// Lease is how long a claimed job is reserved; a job whose worker dies
	// is delivered by another after it. Longer than Timeout.
	Lease time.Duration
	// Concurrency bounds deliveries in flight; PerWebhook bounds them per
	// webhook, so a slow or dead receiver holds at most PerWebhook slots.
	Concurrency, PerWebhook int
	// PollInterval is how often the queue is checked for retries that came
	// due and for jobs queued by other processes.
	PollInterval time.Duration
	// BaseURL is the service's public URL, named in e-mails.
	BaseURL string
	// Timeout is how long a receiver has to answer one delivery (0 or
	// more than the package's Timeout: Timeout, which the Client of
	// NewClient also enforces). Tests make it short.
	Timeout time.Duration
	// OnAttempt, when set, is called after each recorded attempt with
	// "succeeded", "retry" or "failed" (for metrics).
	OnAttempt func(outcome string)

	mu       sync.Mutex
	inFlight map[string]int
	total    int
	freed    chan struct{}
	wg       sync.WaitGroup
}

func (w *Worker) defaults() {
	if w.Schedule == nil {
		w.Schedule = DefaultSchedule
	}
	if w.Timeout <= 0 || w.Timeout > Timeout {
		w.Timeout = Timeout
	}
	if w.Lease <= Timeout {
		w.Lease = 3 * Timeout
	}
	if w.Concurrency <= 0 {
		w.Concurrency = 64
	}
	if w.PerWebhook <= 0 {
		w.PerWebhook = 8
	}
	if w.PollInterval <= 0 {
		w.PollInterval = time.Second
	}
	if w.Logger == nil {
		w.Logger = slog.Default()
	}
	if w.inFlight == nil {
		w.inFlight = map[string]int{}
		w.freed = make(chan struct{}, 1)
	}
}

// Run delivers until ctx is done, then waits for deliveries in flight to
// finish and be recorded.
func (w *Worker) Run(ctx context.Context) error {
	w.mu.Lock()
	w.defaults()
	w.mu.Unlock()
	tick := time.NewTicker(w.PollInterval)
	defer tick.Stop()
	for {
		for {
			n, free, err := w.fill(ctx)
			if err != nil {
				if ctx.Err() == nil { // a claim cut short by shutdown is no error
					w.Logger.Error("claim webhook deliveries", "err", err)
				}
				break
			}
			if n < free || n == 0 { // the queue has no more due jobs for us
				break
			}
		}
		select {
		case <-ctx.Done():
			w.wg.Wait()
			return nil
		case <-w.Queue.JobsReady():
		case <-w.freed:
		case <-tick.C:
		}
	}
}

// RunOnce delivers every job due now and waits for the attempts to be
// recorded. Tests drive the worker with it on an injected clock.
func (w *Worker) RunOnce(ctx context.Context) (int, error) {
	w.mu.Lock()
	w.defaults()
	w.mu.Unlock()
	total := 0
	for {
		n, _, err := w.fill(ctx)
		total += n
		if err != nil {
			w.wg.Wait()
			return total, err
		}
		if n > 0 {
			continue
		}
		// Nothing more can be claimed now; deliveries in flight may free
		// slots of webhooks that have more due jobs.
		w.mu.Lock()
		busy := w.total
		w.mu.Unlock()
		if busy == 0 {
			return total, nil
		}
		w.wg.Wait()
	}
}

// fill claims as many due jobs as there are free slots and starts them.
func (w *Worker) fill(ctx context.Context) (claimed, free int, err error) {
	w.mu.Lock()
	free = w.Concurrency - w.total
	busy := make(map[string]int, len(w.inFlight))
	for id, n := range w.inFlight {
		busy[id] = n
	}
	w.mu.Unlock()
	if free <= 0 || ctx.Err() != nil {
		return 0, free, nil
	}
	jobs, err := w.Queue.ClaimJobs(ctx, w.Clock.Now(), w.Lease, free, w.PerWebhook, busy)
	if err != nil {
		return 0, free, err
	}
	w.mu.Lock()
	for _, j := range jobs {
		w.inFlight[j.WebhookID]++
		w.total++
	}
	w.mu.Unlock()
	for _, j := range jobs {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			// A delivery in flight finishes and is recorded even when the
			// worker is stopping: it is bounded by the Timeout.
			w.deliver(context.WithoutCancel(ctx), j)
			w.mu.Lock()
			if w.inFlight[j.WebhookID]--; w.inFlight[j.WebhookID] <= 0 {
				delete(w.inFlight, j.WebhookID)
			}
			w.total--
			w.mu.Unlock()
			select {
			case w.freed <- struct{}{}:
			default:
			}
		}()
	}
	return len(jobs), free, nil
}

// envelope is the body of every delivery.
type envelope struct {
	ID        string         `json:"id"`
	Object    string         `json:"object"`
	Type      string         `json:"type"`
	CreatedAt time.Time      `json:"created_at"`
	Data      map[string]any `json:"data"`
}

// Body returns the exact bytes delivered for e; the same on every attempt.
func Body(e *ams.Event) ([]byte, error) {
	return json.Marshal(envelope{ID: e.ID, Object: "event", Type: e.Type, CreatedAt: e.CreatedAt, Data: e.Data})
}

// deliver makes one attempt of job j and records it.
func (w *Worker) deliver(ctx context.Context, j *ams.Job) {
	attempt := j.Attempts + 1
	d := &ams.Delivery{
		ID: ams.NewID(ams.PrefixDelivery), Object: "webhook_delivery", UserID: j.UserID, WebhookID: j.WebhookID,
		EventID: j.Event.ID, EventType: j.Event.Type, Attempt: attempt, URL: j.URL,
	}
	body, err := Body(j.Event)
	start := w.Clock.Now()
	d.CreatedAt = start
	var status int
	if err != nil {
		d.Error = ptr("internal error: the event could not be encoded")
		w.Logger.Error("encode event", "event", j.Event.ID, "err", err)
	} else {
		pctx, cancel := context.WithTimeout(ctx, w.Timeout)
		status, err = w.post(pctx, j, d, body, start)
		cancel()
		if err != nil {
			d.Error = ptr(describe(err, w.Timeout))
		}
	}
	d.DurationMS = time.Since(start).Milliseconds()
	now := w.Clock.Now()
	r := &ams.AttemptResult{Job: j, Delivery: d}
	switch {
	case d.Success:
		r.Outcome = ams.JobSucceeded
	case status == http.StatusGone:
		r.Outcome = ams.JobFailed
	case attempt >= len(w.Schedule):
		r.Outcome = ams.JobFailed
	default:
		r.Outcome, r.NextAt = ams.JobRetry, now.Add(w.Schedule[attempt])
	}
	if r.Outcome == ams.JobFailed {
		why := failingReason(j, d, status)
		r.Email = w.failingEmail(ctx, j, why)
		r.Event = ams.WebhookFailingEvent(j.UserID, j.WebhookID, j.URL, why, now)
	}
	failed, err := w.Queue.RecordAttempt(ctx, r, now)
	if err != nil {
		// The lease runs out and the job is attempted again: at least once.
		w.Logger.Error("record webhook delivery", "delivery", d.ID, "webhook", j.WebhookID, "err", err)
		return
	}
	if w.OnAttempt != nil {
		w.OnAttempt([...]string{ams.JobSucceeded: "succeeded", ams.JobRetry: "retry", ams.JobFailed: "failed"}[r.Outcome])
	}
	w.Logger.Info("webhook delivery", "delivery", d.ID, "webhook", j.WebhookID, "event", j.Event.ID,
		"attempt", attempt, "success", d.Success, "status", status, "duration_ms", d.DurationMS)
	if failed {
		w.Logger.Warn("webhook marked failing", "webhook", j.WebhookID, "url", j.URL)
	}
}

// post sends the delivery and fills d with the answer.
func (w *Worker) post(ctx context.Context, j *ams.Job, d *ams.Delivery, body []byte, at time.Time) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, j.URL, strings.NewReader(string(body)))
	if err != nil {
		return 0, err
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "ams-webhooks/"+ams.Version)
	h.Set("X-Service-Signature", Signature(j.Secret, body))
	h.Set("X-Service-Event", j.Event.Type)
	h.Set("X-Service-Delivery", d.ID)
	ts := at.Unix()
	h.Set("Webhook-Id", j.Event.ID)
	h.Set("Webhook-Timestamp", strconv.FormatInt(ts, 10))
	h.Set("Webhook-Signature", StandardSignature(j.Secret, j.Event.ID, ts, body))
	resp, err := w.Client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	d.StatusCode = &resp.StatusCode
	excerpt, _ := io.ReadAll(io.LimitReader(resp.Body, ams.MaxResponseExcerpt))
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // let the connection be reused
	d.ResponseBody = strings.ToValidUTF8(string(excerpt), "\uFFFD")
	for len(d.ResponseBody) > ams.MaxResponseExcerpt || !utf8.ValidString(d.ResponseBody) {
		d.ResponseBody = d.ResponseBody[:len(d.ResponseBody)-1]
	}
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		d.Success = true
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return resp.StatusCode, fmt.Errorf("redirect (%d) not followed: webhook URLs must answer directly", resp.StatusCode)
	case resp.StatusCode == http.StatusGone:
		return resp.StatusCode, errors.New("the receiver answered 410 Gone: the webhook is marked failing")
	default:
		return resp.StatusCode, fmt.Errorf("the receiver answered %d", resp.StatusCode)
	}
	return resp.StatusCode, nil
}

// describe turns a delivery error into a sentence for the delivery log,
// without internal detail; timeout is the attempt's limit.
func describe(err error, timeout time.Duration) string {
	var ne net.Error
	var ue *url.Error
	switch {
	case errors.Is(err, ssrf.ErrBlocked):
		return "the URL resolves to an internal address, which webhooks may not reach"
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Sprintf("timeout: no answer within %s", timeout)
	case errors.As(err, &ue):
		msg := ue.Err.Error()
		switch {
		case strings.Contains(msg, "connection refused"):
			return "connection refused"
		case strings.Contains(msg, "certificate"), strings.Contains(msg, "tls:"), strings.Contains(msg, "x509"):
			return "TLS error: " + msg
		case strings.Contains(msg, "no such host"):
			return "the host name does not resolve"
		}
		return msg
	}
	return err.Error()
}

func ptr[T any](v T) *T { return &v }

// failingReason says why the webhook of j is marked failing after attempt
// d (status: its HTTP status, 0 without an answer): the sentence of the
// owner's e-mail and the reason of the webhook.failing event.
func failingReason(j *ams.Job, d *ams.Delivery, status int) string {
	if status == http.StatusGone {
		return fmt.Sprintf("The receiver answered 410 Gone to event %s (%s), which asks us to stop.", j.Event.ID, j.Event.Type)
	}
	reason := "its last delivery failed"
	if d.Error != nil {
		reason = *d.Error
	}
	return fmt.Sprintf("Delivery of event %s (%s) failed %d times in a row; the last attempt: %s.", j.Event.ID, j.Event.Type, d.Attempt, reason)
}

// failingEmail is the e-mail the owner gets when the webhook is marked
// failing, for the reason why.
func (w *Worker) failingEmail(ctx context.Context, j *ams.Job, why string) *ams.Email {
	u, err := w.Users.FindUser(ctx, j.UserID)
	if err != nil {
		w.Logger.Error("find webhook owner", "user", j.UserID, "err", err)
		return nil
	}
	text := fmt.Sprintf(`Hello,

your webhook %s
(%s) has been marked failing and disabled: it receives no more events.

%s

Events are kept for 30 days. Once the receiver works again, turn the
webhook back on, then have the events it missed delivered to it, oldest
first:

  PATCH %s/v1/webhooks/%s  {"active": true}
  POST %s/v1/webhooks/%s/recover  {"since": "%s"}

(or Enable, then "Recover events since ..." on its page of your account).
They are also listed at GET %s/v1/events. Each delivery attempt, with the
receiver's answer, is listed at GET %s/v1/webhooks/%s/deliveries.

-- ams
`, j.URL, j.WebhookID, why, w.BaseURL, j.WebhookID, w.BaseURL, j.WebhookID, j.Event.CreatedAt.UTC().Format(time.RFC3339),
		w.BaseURL, w.BaseURL, j.WebhookID)
	return &ams.Email{ID: ams.NewID("eml_"), To: u.Email, Subject: "Your ams webhook is failing and has been disabled", Text: text}
}
