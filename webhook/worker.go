package webhook

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/batch"
	"github.com/amsdev/ams/mail"
	"github.com/amsdev/ams/ssrf"
	"github.com/amsdev/ams/tracing"
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

// MaxResponseBytes bounds the body of a receiver's answer that a delivery
// reads: the excerpt it records (ams.MaxResponseExcerpt) and what it
// drains after it so that the connection can be reused.
const MaxResponseBytes = ams.MaxResponseExcerpt + 64<<10

// NewClient returns the HTTP client deliveries use: connections through the
// SSRF guard, a 5 s limit on the whole exchange, answers bounded (headers
// to ssrf.DefaultMaxHeaderBytes, the body to MaxResponseBytes), and
// redirects not followed (a 3xx answer is a failed attempt).
func NewClient(g *ssrf.Guard) *http.Client {
	c := g.Client(ssrf.Limits{Timeout: Timeout, MaxBodyBytes: MaxResponseBytes})
	c.CheckRedirect = func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}
	return c
}

// Queue is what the Worker needs of the storage engine: the delivery
// jobs (ams.DeliveryQueue's job methods, whose comments say more;
// ams.Store gives them).
type Queue interface {
	// ClaimJobs leases up to c.Limit due jobs until now+c.Lease.
	ClaimJobs(ctx context.Context, now time.Time, c ams.Claim) ([]*ams.Job, error)
	// RecordAttempt stores an attempt and the job's new state, if the
	// job's lease is still r.Job's; else ams.ErrLeaseLost.
	RecordAttempt(ctx context.Context, r *ams.AttemptResult, now time.Time) (bool, error)
	// RecordAttempts records attempts that succeeded or will be retried,
	// in one transaction.
	RecordAttempts(ctx context.Context, rs []*ams.AttemptResult, now time.Time) (errs []error, err error)
	// JobsReady is signalled when new jobs were queued.
	JobsReady() <-chan struct{}
}

// RecordClaimer is a Queue that can claim in the transaction that records
// attempts (sqlite.DB's RecordAttemptsAndClaim): on an engine with one
// writer, a worker whose deliveries end takes their successors in the
// trip through the writer that records them. claimErr is the claim's
// error, after which the records are stored; err is the whole call's,
// after which nothing is.
type RecordClaimer interface {
	RecordAttemptsAndClaim(ctx context.Context, rs []*ams.AttemptResult, now time.Time, c ams.Claim) (errs []error, jobs []*ams.Job, claimErr, err error)
}

// Users finds a webhook owner, for the failing e-mail.
type Users interface {
	FindUser(ctx context.Context, id string) (*ams.User, error)
}

// Worker delivers queued events. Several workers (in several processes)
// may share one queue: each job is leased to one at a time.
type Worker struct {
	Queue    Queue
	Users    Users
	Client   *http.Client
	Clock    ams.Clock
	Logger   *slog.Logger
	Schedule []time.Duration // delays before each attempt; len is the number of attempts
	// Lease is how long a claimed job is reserved; a job whose worker dies
	// is delivered by another after it. Longer than Timeout.
	Lease time.Duration
	// Concurrency bounds this worker's deliveries in flight. PerWebhook
	// bounds those of one webhook, so a slow or dead receiver holds at most
	// PerWebhook slots, and PerAccount those of one account, so that one
	// account's slow receivers leave slots for the others; both count the
	// deliveries in flight of every process sharing the queue.
	Concurrency, PerWebhook, PerAccount int
	// PollInterval is how often the queue is checked for retries that came
	// due and for jobs queued by other processes.
	PollInterval time.Duration
	// BaseURL is the service's public URL, named in e-mails.
	BaseURL string
	// Timeout is how long a receiver has to answer one delivery (0: the
	// package's Timeout, which the Client of NewClient also enforces).
	// Tests make it shorter, or longer with a Client of their own.
	Timeout time.Duration
	// OnAttempt, when set, is called after each recorded attempt with
	// "succeeded", "retry" or "failed" (for metrics).
	OnAttempt func(outcome string)
	// OnLeaseExpired, when set, is called for each claimed job whose
	// earlier lease ran out with no attempt recorded (ams.Job's
	// LeaseExpired; for metrics). While no process dies there are none.
	OnLeaseExpired func()

	mu    sync.Mutex
	total int
	freed chan struct{}
	// running is Run's context while it runs: records then claim the
	// slots they free (RecordClaimer) until it ends.
	running context.Context
	// recorder gathers the attempts that finish together (see record);
	// set by defaults, before any delivery starts.
	recorder *batch.Batcher[attemptRecord, error]
	// fresh is Client (freshOf) on connections not kept alive (see
	// send); set by defaults.
	fresh, freshOf *http.Client
	wg             sync.WaitGroup
}

// DefaultPerAccount is the default cap on one account's deliveries in
// flight: half of the default Concurrency, so that an account whose
// receivers are slow leaves at least as many slots to the others.
const DefaultPerAccount = 32

func (w *Worker) defaults() {
	if w.Schedule == nil {
		w.Schedule = DefaultSchedule
	}
	if w.Timeout <= 0 {
		w.Timeout = Timeout
	}
	if w.Lease <= max(w.Timeout, Timeout) {
		w.Lease = 3 * max(w.Timeout, Timeout)
	}
	if w.Concurrency <= 0 {
		w.Concurrency = 64
	}
	if w.PerWebhook <= 0 {
		w.PerWebhook = 8
	}
	if w.PerAccount <= 0 {
		w.PerAccount = DefaultPerAccount
	}
	if w.PollInterval <= 0 {
		w.PollInterval = time.Second
	}
	if w.Logger == nil {
		w.Logger = slog.Default()
	}
	if w.freed == nil {
		w.freed = make(chan struct{}, 1)
	}
	if w.Client != nil && w.freshOf != w.Client {
		w.fresh, w.freshOf = ssrf.WithoutKeepAlives(w.Client), w.Client
	}
	if w.recorder == nil {
		w.recorder = &batch.Batcher[attemptRecord, error]{Max: maxRecordBatch, Run: w.recordBatch}
	}
}

// Run delivers until ctx is done, then waits for deliveries in flight to
// finish and be recorded.
func (w *Worker) Run(ctx context.Context) error {
	w.mu.Lock()
	w.defaults()
	w.running = ctx
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
			// The deliveries in flight at that claim may have ended since
			// (a job whose lease ran out meanwhile is due again): with
			// nothing in flight now, one more claim sees their ends.
			n, _, err := w.fill(ctx)
			total += n
			if err != nil || n == 0 {
				w.wg.Wait()
				return total, err
			}
			continue
		}
		w.wg.Wait()
	}
}

// fill claims as many due jobs as there are free slots and starts them.
func (w *Worker) fill(ctx context.Context) (claimed, free int, err error) {
	w.mu.Lock()
	free = w.Concurrency - w.total
	w.mu.Unlock()
	if free <= 0 || ctx.Err() != nil {
		return 0, free, nil
	}
	start := time.Now()
	jobs, err := w.Queue.ClaimJobs(ctx, w.Clock.Now(), w.claim(free))
	if err != nil {
		return 0, free, err
	}
	w.start(ctx, start, jobs)
	return len(jobs), free, nil
}

// claim is what a claim of up to limit jobs may lease.
func (w *Worker) claim(limit int) ams.Claim {
	return ams.Claim{Lease: w.Lease, Limit: limit, PerWebhook: w.PerWebhook, PerAccount: w.PerAccount}
}

// start delivers jobs claimed at claimStart, each in a goroutine that
// holds a slot until its attempt is recorded.
func (w *Worker) start(ctx context.Context, claimStart time.Time, jobs []*ams.Job) {
	if len(jobs) == 0 {
		return
	}
	ctx = tracing.Claim(ctx, claimStart, len(jobs)) // the deliveries' spans link to the claim's
	w.mu.Lock()
	w.total += len(jobs)
	w.mu.Unlock()
	for _, j := range jobs {
		if j.LeaseExpired {
			w.Logger.Warn("webhook delivery claimed again: an earlier lease ran out with no attempt recorded", "webhook", j.WebhookID,
				"event", j.Event.ID, "attempt", j.Attempts+1)
			if w.OnLeaseExpired != nil {
				w.OnLeaseExpired()
			}
		}
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			// A delivery in flight finishes and is recorded even when the
			// worker is stopping: it is bounded by the Timeout.
			handed := w.deliver(context.WithoutCancel(ctx), j)
			w.mu.Lock()
			w.total--
			w.mu.Unlock()
			if handed {
				// The record's claim took a successor for every slot its
				// batch freed, this one's among them: a claim now would
				// find nothing more, and would only queue for the writer
				// ahead of the next records.
				return
			}
			select {
			case w.freed <- struct{}{}:
			default:
			}
		}()
	}
}

// Body returns the exact bytes delivered for e; the same on every attempt:
// the event as the API shows it (id, object, type, created_at, request,
// turn_id, previous_attributes when set, test when true, data), written
// directly rather than through reflection, since every attempt encodes
// one (TestBodyAsReflection compares it with json.Marshal's encoding).
func Body(e *ams.Event) ([]byte, error) {
	b := make([]byte, 0, 192+ams.DataSize(e.Data)+ams.DataSize(e.PreviousAttributes))
	b = append(b, `{"id":`...)
	b = ams.AppendJSONString(b, e.ID)
	b = append(b, `,"object":"event","type":`...)
	b = ams.AppendJSONString(b, e.Type)
	b = append(b, `,"created_at":`...)
	b = ams.AppendJSONTime(b, e.CreatedAt)
	b = append(b, `,"request":`...)
	b = ams.AppendEventRequest(b, e.Request)
	b = append(b, `,"turn_id":`...)
	if e.TurnID == nil {
		b = append(b, "null"...)
	} else {
		b = ams.AppendJSONString(b, *e.TurnID)
	}
	var err error
	if len(e.PreviousAttributes) > 0 {
		b = append(b, `,"previous_attributes":`...)
		if b, err = ams.AppendData(b, e.PreviousAttributes); err != nil {
			return nil, err
		}
	}
	if e.Test {
		b = append(b, `,"test":true`...)
	}
	b = append(b, `,"data":`...)
	if b, err = ams.AppendData(b, e.Data); err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// deliver makes one attempt of job j and records it. It reports whether
// the transaction that recorded it claimed for the slot it frees (see
// recordBatch).
func (w *Worker) deliver(ctx context.Context, j *ams.Job) (handed bool) {
	attempt := j.Attempts + 1
	ctx, span := tracing.Delivery(ctx, j.Event.Trace, j.UserID, j.Event.ID, j.Event.Type, j.WebhookID, attempt)
	defer span.End()
	d := &ams.Delivery{
		ID: ams.NewID(ams.PrefixDelivery), Object: "webhook_delivery", UserID: j.UserID, WebhookID: j.WebhookID,
		EventID: j.Event.ID, EventType: j.Event.Type, Attempt: attempt, URL: j.URL,
	}
	body, err := []byte(nil), j.OpenErr
	if err == nil {
		body, err = Body(j.Event)
	}
	start := w.Clock.Now()
	d.CreatedAt = start
	var status int
	var retryAfter string
	switch {
	case j.OpenErr != nil:
		// Nothing is sent: the attempt fails, and is retried on the
		// schedule (the key may be configured again meanwhile).
		d.Error = ptr("internal error: the delivery could not be prepared")
		w.Logger.Error("open webhook job", "webhook", j.WebhookID, "event", j.Event.ID, "err", err)
	case err != nil:
		d.Error = ptr("internal error: the event could not be encoded")
		w.Logger.Error("encode event", "event", j.Event.ID, "err", err)
	default:
		pctx, cancel := context.WithTimeout(ctx, w.Timeout)
		status, retryAfter, err = w.post(pctx, j, d, body, start)
		cancel()
		if err != nil {
			d.Error = ptr(describe(err, w.Timeout))
		}
	}
	d.DurationMS = time.Since(start).Milliseconds()
	tracing.Attempted(span, d.ID, status, d.Success)
	now := w.Clock.Now()
	// Notices: the e-mail of a change of the webhook's health that the
	// store finds this attempt makes (webhook.degraded, .recovered).
	r := &ams.AttemptResult{Job: j, Delivery: d, Notices: mail.WebhookNotices{BaseURL: w.BaseURL}}
	switch {
	case d.Success:
		r.Outcome = ams.JobSucceeded
	case status == http.StatusGone:
		r.Outcome = ams.JobFailed
	case attempt >= len(w.Schedule):
		r.Outcome = ams.JobFailed
	default:
		delay := w.Schedule[attempt]
		if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
			if ra, ok := ParseRetryAfter(retryAfter, now); ok {
				delay = RetryDelay(w.Schedule, attempt, ra)
				if delay > w.Schedule[attempt] && d.Error != nil {
					d.Error = ptr(fmt.Sprintf("%s; it asked to retry after %s (Retry-After), the next attempt waits %s", *d.Error, ra, delay))
				}
			}
		}
		r.Outcome, r.NextAt = ams.JobRetry, now.Add(delay)
	}
	if r.Outcome == ams.JobFailed {
		why := failingReason(j, d, status)
		r.Email = w.failingEmail(ctx, j, why)
		r.Event = ams.WebhookFailingEvent(j.UserID, j.WebhookID, j.URL, why, now)
	}
	failed, handed, err := w.record(ctx, r, now)
	if errors.Is(err, ams.ErrLeaseLost) {
		// Too late: the job is another worker's now, or will be. Whatever
		// the receiver answered, the attempt is not counted.
		w.Logger.Warn("webhook delivery not recorded: its lease ran out before the attempt finished", "delivery", d.ID,
			"webhook", j.WebhookID, "event", j.Event.ID, "attempt", attempt, "status", status, "lease_until", j.LeaseUntil)
		return handed
	}
	if err != nil {
		// The lease runs out and the job is attempted again: at least once.
		w.Logger.Error("record webhook delivery", "delivery", d.ID, "webhook", j.WebhookID, "err", err)
		return false
	}
	if w.OnAttempt != nil {
		w.OnAttempt([...]string{ams.JobSucceeded: "succeeded", ams.JobRetry: "retry", ams.JobFailed: "failed"}[r.Outcome])
	}
	w.Logger.Info("webhook delivery", "delivery", d.ID, "webhook", j.WebhookID, "event", j.Event.ID,
		"attempt", attempt, "success", d.Success, "status", status, "duration_ms", d.DurationMS)
	if failed {
		w.Logger.Warn("webhook marked failing", "webhook", j.WebhookID, "url", j.URL)
	}
	return handed
}

// maxRecordBatch bounds the attempts recorded in one transaction.
const maxRecordBatch = 64

// attemptRecord is one attempt waiting to be recorded in a batch.
type attemptRecord struct {
	ctx context.Context
	r   *ams.AttemptResult
	now time.Time
	// handed is set by recordBatch, before Do returns, when the batch's
	// transaction claimed for the slots it freed (see recordBatch).
	handed *bool
}

// record stores an attempt's outcome. An attempt that fails its webhook
// is recorded alone (it also marks the webhook failing, e-mails its owner
// and emits webhook.failing); the others are recorded with the attempts
// that finish meanwhile, in one transaction (see ams.DeliveryQueue's
// RecordAttempts), so that a busy worker pays one commit for many
// attempts. A lone attempt is recorded at once. handed reports that the
// transaction also claimed for the slot the attempt frees (recordBatch).
func (w *Worker) record(ctx context.Context, r *ams.AttemptResult, now time.Time) (failed, handed bool, err error) {
	if r.Outcome == ams.JobFailed {
		failed, err = w.Queue.RecordAttempt(ctx, r, now)
		return failed, false, err
	}
	err = w.recorder.Do(attemptRecord{ctx: ctx, r: r, now: now, handed: &handed})
	return false, handed, err
}

// recordBatch records a batch of attempts, at the latest of their times
// (a later time only makes the lease fence stricter). While Run runs, on
// a RecordClaimer queue, the same transaction claims as many jobs as the
// batch frees slots, and starts them: the slots pass from the ended
// deliveries to their successors (which may briefly count twice, until
// the ended ones return) without a claim of their own, and Run is not
// woken to claim for them (attemptRecord.handed).
func (w *Worker) recordBatch(items []attemptRecord) []error {
	rs := make([]*ams.AttemptResult, len(items))
	now := items[0].now
	for i, it := range items {
		rs[i] = it.r
		if it.now.After(now) {
			now = it.now
		}
	}
	w.mu.Lock()
	running := w.running
	w.mu.Unlock()
	var errs []error
	var err error
	if rc, ok := w.Queue.(RecordClaimer); ok && running != nil && running.Err() == nil {
		start := time.Now()
		var jobs []*ams.Job
		var claimErr error
		errs, jobs, claimErr, err = rc.RecordAttemptsAndClaim(items[0].ctx, rs, now, w.claim(len(items)))
		if claimErr != nil && running.Err() == nil {
			w.Logger.Error("claim webhook deliveries", "err", claimErr)
		}
		w.start(running, start, jobs)
		// A claim that took a successor for every slot freed leaves
		// nothing for Run's claim to find; one that took fewer may have
		// stopped at the webhooks it probes, so Run claims again.
		if err == nil && claimErr == nil && len(jobs) >= len(items) {
			for _, it := range items {
				*it.handed = true
			}
		}
	} else {
		errs, err = w.Queue.RecordAttempts(items[0].ctx, rs, now)
	}
	if err != nil {
		errs = make([]error, len(items))
		for i := range errs {
			errs[i] = err
		}
	}
	return errs
}

// post sends the delivery and fills d with the answer; it returns the
// status code and the Retry-After header of the answer.
func (w *Worker) post(ctx context.Context, j *ams.Job, d *ams.Delivery, body []byte, at time.Time) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, j.URL, strings.NewReader(string(body)))
	if err != nil {
		return 0, "", err
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "ams-webhooks/"+ams.Version)
	// The interface's signature uses the newest secret only; the
	// Standard Webhooks one carries a signature per secret valid at this
	// attempt (the previous secret too, during its overlap).
	h.Set("X-Service-Signature", Signature(j.Secret, body))
	h.Set("X-Service-Event", j.Event.Type)
	h.Set("X-Service-Delivery", d.ID)
	ts := at.Unix()
	h.Set("Webhook-Id", j.Event.ID)
	h.Set("Webhook-Timestamp", strconv.FormatInt(ts, 10))
	h.Set("Webhook-Signature", StandardSignatures(j.Secrets(at), j.Event.ID, ts, body))
	tracing.Inject(ctx, h) // traceparent: the delivery's span
	resp, err := w.send(req)
	if err != nil {
		return 0, "", err
	}
	retryAfter := resp.Header.Get("Retry-After")
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
		return resp.StatusCode, retryAfter, fmt.Errorf("redirect (%d) not followed: webhook URLs must answer directly", resp.StatusCode)
	case resp.StatusCode == http.StatusGone:
		return resp.StatusCode, retryAfter, errors.New("the receiver answered 410 Gone: the webhook is marked failing")
	default:
		return resp.StatusCode, retryAfter, fmt.Errorf("the receiver answered %d", resp.StatusCode)
	}
	return resp.StatusCode, retryAfter, nil
}

// send sends req, and sends it again once, at once, on a new connection
// that is not kept alive, when it failed with no answer on a connection
// kept alive from an earlier delivery. A receiver closes an idle
// connection when its keep-alive timeout ends (5 s for Node.js, uvicorn
// and hypercorn); a delivery that takes that connection just then (a
// window that a loaded machine widens: the client has not yet read the
// receiver's close) is written to a socket the receiver has closed, and
// fails with EOF or a reset before the receiver read it. net/http sends
// such a request again itself only if it is idempotent, which a POST is
// not; so the attempt failed, and the receiver got the event only at the
// next attempt, a minute later by default. Sending it again may deliver
// it twice if the receiver read it and then dropped the connection
// without answering: deliveries are at least once, and receivers tell
// them apart by Webhook-Id.
func (w *Worker) send(req *http.Request) (*http.Response, error) {
	var reused atomic.Bool
	resp, err := w.Client.Do(req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		GotConn: func(c httptrace.GotConnInfo) { reused.Store(c.Reused) },
	})))
	var ne net.Error
	if err == nil || !reused.Load() || req.Context().Err() != nil || (errors.As(err, &ne) && ne.Timeout()) {
		return resp, err
	}
	body, berr := req.GetBody()
	if berr != nil {
		return resp, err
	}
	w.Logger.Debug("webhook delivery sent again on a new connection: a kept-alive one failed it", "url", req.URL.Redacted(), "err", err)
	again := req.Clone(req.Context())
	again.Body = body
	return w.fresh.Do(again)
}

// ParseRetryAfter reads a Retry-After header value at now: delta-seconds
// (digits only; a value too large to represent is the longest duration)
// or an HTTP-date (the three forms of RFC 9110), as a delay from now. A
// missing, malformed or negative value (a date in the past) is not ok.
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if strings.Trim(v, "0123456789") == "" {
		n, err := strconv.ParseInt(v, 10, 64)
		switch {
		case err != nil: // digits only: out of range
			return math.MaxInt64, true
		case n > int64(math.MaxInt64/time.Second):
			return math.MaxInt64, true
		}
		return time.Duration(n) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	d := t.Sub(now)
	if d < 0 {
		return 0, false
	}
	return d, true
}

// RetryDelay is the delay before the next attempt after attempt (1-based)
// failed and the receiver asked to wait retryAfter: at least the
// schedule's delay, at least retryAfter, and never more than the sum of
// the schedule's remaining delays, so that a receiver's back-pressure
// cannot stretch a delivery beyond the time the schedule gives it.
func RetryDelay(schedule []time.Duration, attempt int, retryAfter time.Duration) time.Duration {
	if attempt < 1 || attempt >= len(schedule) {
		return 0
	}
	var remaining time.Duration
	for _, d := range schedule[attempt:] {
		remaining += d
	}
	return max(schedule[attempt], min(retryAfter, remaining))
}

// describe turns a delivery error into a sentence for the delivery log,
// without internal detail; timeout is the attempt's limit.
func describe(err error, timeout time.Duration) string {
	var ne net.Error
	var ue *url.Error
	var tl *ssrf.TooLargeError
	switch {
	case errors.Is(err, ssrf.ErrBlocked):
		return "the URL resolves to an internal address, which webhooks may not reach"
	case errors.As(err, &tl):
		return fmt.Sprintf("the receiver's answer was refused: its %s %s the limit of %s", tl.Part, tl.Verb(), ssrf.Size(tl.Limit))
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
// failing, for the reason why; nil when the owner turned these e-mails
// off (email_notifications.webhook_failing of /v1/account).
func (w *Worker) failingEmail(ctx context.Context, j *ams.Job, why string) *ams.Email {
	u, err := w.Users.FindUser(ctx, j.UserID)
	if err != nil {
		w.Logger.Error("find webhook owner", "user", j.UserID, "err", err)
		return nil
	}
	if u.WebhookFailingEmailsOff {
		return nil
	}
	text := fmt.Sprintf(`Hello,

your webhook %s
(%s) has been marked failing and disabled: it receives no more events.

%s

Events are kept for 30 days. Once the receiver works again, turn the
webhook back on, then have the events it missed delivered to it (queued
oldest first; up to 8 are delivered at once and failures are retried
later, so they may arrive out of order: compare each event's created_at
with what your receiver holds):

  PATCH %s/v1/webhooks/%s  {"active": true}
  POST %s/v1/webhooks/%s/recover  {"since": "%s"}

(or Enable, then "Recover events since ..." on its page of your account).
They are also listed at GET %s/v1/events. Each delivery attempt, with the
receiver's answer, is listed at GET %s/v1/webhooks/%s/deliveries.

-- ams
`, j.URL, j.WebhookID, why, w.BaseURL, j.WebhookID, w.BaseURL, j.WebhookID, j.Event.CreatedAt.UTC().Format(time.RFC3339),
		w.BaseURL, w.BaseURL, j.WebhookID)
	return &ams.Email{ID: ams.NewID("eml_"), Kind: ams.EmailWebhookFailing, To: u.Email, Subject: "Your ams webhook is failing and has been disabled", Text: text}
}
