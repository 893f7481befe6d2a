package ams

import (
	"context"
	"errors"
	"time"
)

// Webhook statuses.
const (
	WebhookActive  = "active"  // deliveries succeed, or have not failed five times
	WebhookFailing = "failing" // a delivery failed five times (or got 410): disabled
)

// DefaultMaxWebhooks is how many webhooks an account may have unless `ams
// serve --max-webhooks-per-account` says otherwise (an enterprise account
// may have its own cap, User.MaxWebhooks).
const DefaultMaxWebhooks = 50

// ErrWebhookLimit is the error of creating a webhook beyond the account's
// cap of max.
func ErrWebhookLimit(max int) error {
	return Errorf(ECONFLICT, "webhook_limit_reached",
		"This account already has %d webhooks, the most it may have. Delete one to create another.", max)
}

// Webhook is an HTTPS endpoint that receives an account's events. Its
// secret signs every delivery; it is never shown after creation.
type Webhook struct {
	ID     string   `json:"id"`
	Object string   `json:"object"` // "webhook"
	UserID string   `json:"-"`
	URL    string   `json:"url"`
	Events []string `json:"events"`
	Active bool     `json:"active"`
	Status string   `json:"status"`
	Secret string   `json:"-"`
	// ManagementEvents says whether the webhook receives the
	// ManagementEventTypes: true when the last credential that created or
	// changed it held admin (the account holder, through the account
	// pages, does). Not shown.
	ManagementEvents bool `json:"-"`
	// PreviousSecret is the secret the current one replaced; it keeps
	// signing webhook-signature beside it until PreviousSecretExpiresAt
	// (nil: no previous secret). Only the expiry is shown.
	PreviousSecret          string     `json:"-"`
	PreviousSecretExpiresAt *time.Time `json:"previous_secret_expires_at"`
	Metadata                Metadata   `json:"metadata"`
	// Ordered webhooks get one delivery in flight at a time, in queue
	// order (the jobs' seq): the event log's for the events of one
	// transaction and of transactions that did not overlap, not always
	// between overlapping ones on PostgreSQL (docs/architecture.md). An
	// event whose delivery fails holds those behind it until it succeeds
	// or exhausts its attempts. Disabled,
	// they keep their pending deliveries for when they are enabled again.
	Ordered bool `json:"ordered"`
	// Filter selects the events of its types that it receives (zero:
	// all), applied when an event is fanned out: an event it leaves out
	// costs no delivery job.
	Filter WebhookFilter `json:"filter"`
	// Payload is PayloadFull (the record) or PayloadThin (ids only,
	// ThinData), applied at delivery.
	Payload string `json:"payload"`
	// FailureStreak is how many attempts in a row failed, as recorded
	// (WebhookDegradedAfter or more: degraded). Not shown.
	FailureStreak int `json:"-"`
	// Summary is the webhook's attempts of the last SummaryWindow: set
	// by GET /v1/webhooks/{id} (WebhookStore.SummarizeWebhook), nil
	// (null) in lists and in the answers of changes.
	Summary   *WebhookSummary `json:"summary"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// Secret rotation: when a webhook's secret is replaced, the previous one
// keeps signing webhook-signature beside the new one for
// DefaultSecretOverlap, or for what the request asks, 0 to MaxSecretOverlap.
const (
	DefaultSecretOverlap = 24 * time.Hour
	MaxSecretOverlap     = 7 * 24 * time.Hour
)

// ExpirePrevious forgets the previous secret when its overlap has ended at
// now, so that the webhook shows previous_secret_expires_at only while the
// previous secret still signs deliveries.
func (w *Webhook) ExpirePrevious(now time.Time) {
	if w.PreviousSecretExpiresAt != nil && !now.Before(*w.PreviousSecretExpiresAt) {
		w.PreviousSecret, w.PreviousSecretExpiresAt = "", nil
	}
}

// WebhookUpdate lists the fields of a webhook to change; nil fields are kept.
// Setting Active to true also clears a failing status.
type WebhookUpdate struct {
	// ManagementEvents, when set, says whether the webhook receives the
	// ManagementEventTypes (Webhook.ManagementEvents).
	ManagementEvents *bool
	URL              *string
	Events           []string // nil: keep
	Active           *bool
	Secret           *string
	// PreviousSecretOverlap is how long the replaced secret keeps signing
	// beside the new one, from the update's time (0: not at all). With
	// Secret, nil means DefaultSecretOverlap; a Secret equal to the current
	// one changes nothing. Replacing the secret again during an overlap
	// keeps only the secret just replaced: the older one is dropped.
	// Without Secret it sets when the current previous secret, if any,
	// stops signing (0: now).
	PreviousSecretOverlap *time.Duration
	// Metadata, when Set, is merged into the webhook's metadata (see
	// MetadataPatch.Merge), under the row's lock.
	Metadata MetadataPatch
	// Ordered, when set, says whether the webhook is ordered
	// (Webhook.Ordered).
	Ordered *bool
	// Filter, when set, replaces the webhook's filter (a zero filter:
	// none). Payload, when set, replaces its payload.
	Filter  *WebhookFilter
	Payload *string
}

// WebhookStore keeps webhooks and their delivery log.
type WebhookStore interface {
	// CreateWebhook stores w with its secret sealed.
	CreateWebhook(ctx context.Context, w *Webhook) error
	// CreateWebhookCapped stores w as CreateWebhook does unless the
	// account already has as many webhooks as its cap allows
	// (User.WebhookLimit(defaultCap)): then it is ErrWebhookLimit and
	// nothing is stored. The count and the insert are one transaction
	// that locks the account's row, so concurrent creations (from any
	// number of processes) never pass the cap.
	CreateWebhookCapped(ctx context.Context, w *Webhook, defaultCap int) error
	FindWebhook(ctx context.Context, userID, id string) (*Webhook, error)
	ListWebhooks(ctx context.Context, userID string, p ListParams) (*Page[*Webhook], error)
	// UpdateWebhook applies upd; deactivating a webhook (by the caller or
	// through failing) cancels its pending deliveries.
	UpdateWebhook(ctx context.Context, userID, id string, upd WebhookUpdate, now time.Time) (*Webhook, error)
	// DeleteWebhook removes it with its deliveries.
	DeleteWebhook(ctx context.Context, userID, id string) error
	// PingWebhook stores the webhook.ping event e and queues it for webhook
	// id only. EnqueueDelivery queues event eventID again for the webhook
	// (redelivery). Both return ECONFLICT if the webhook is not active.
	PingWebhook(ctx context.Context, userID, id string, e *Event) error
	EnqueueDelivery(ctx context.Context, userID, webhookID, eventID string, now time.Time) error
	// EnqueueRecovery queues for webhook webhookID, in one statement,
	// every retained event of the account of a type it subscribes to,
	// created in [since, until), that it has not received successfully
	// (no successful attempt of that event to it) and that is not already
	// pending for it — events emitted while it was failing or disabled
	// included. Jobs are queued in the events' order of creation, so they
	// are claimed oldest first. It returns how many it queued; ECONFLICT
	// (webhook_inactive) if the webhook is not active.
	EnqueueRecovery(ctx context.Context, userID, webhookID string, since, until, now time.Time) (int64, error)
	ListDeliveries(ctx context.Context, userID, webhookID string, f DeliveryFilter, p ListParams) (*Page[*Delivery], error)
	// SummarizeWebhook returns the summary of the attempts to webhook
	// webhookID of userID made at or after since (Webhook.Summary).
	SummarizeWebhook(ctx context.Context, userID, webhookID string, since time.Time) (*WebhookSummary, error)
	FindDelivery(ctx context.Context, userID, webhookID, id string) (*Delivery, error)
}

// DeliveryFilter selects a webhook's delivery attempts in ListDeliveries;
// zero fields select all.
type DeliveryFilter struct {
	EventID string // the attempts of this event only
	Success *bool  // the successful (true) or failed (false) attempts only
}

// Delivery is one attempt to deliver an event to a webhook.
type Delivery struct {
	ID           string    `json:"id"`     // dlv_
	Object       string    `json:"object"` // "webhook_delivery"
	UserID       string    `json:"-"`
	WebhookID    string    `json:"webhook_id"`
	EventID      string    `json:"event_id"`
	EventType    string    `json:"event_type"`
	Attempt      int       `json:"attempt"` // 1..5 within its delivery
	URL          string    `json:"url"`
	Success      bool      `json:"success"`
	StatusCode   *int      `json:"status_code"` // nil when no HTTP answer came
	DurationMS   int64     `json:"duration_ms"`
	Error        *string   `json:"error"`
	ResponseBody string    `json:"response_body"` // the first 1 KiB
	CreatedAt    time.Time `json:"created_at"`
}

// MaxResponseExcerpt is how much of a receiver's answer is kept.
const MaxResponseExcerpt = 1024

// Job is a queued delivery of one event to one webhook, claimed by one
// worker at a time under a lease.
type Job struct {
	Seq       int64
	UserID    string
	WebhookID string
	Attempts  int // attempts made before this one
	Event     *Event
	URL       string
	Secret    string
	// LeaseUntil is when the claim's lease runs out; it also fences the
	// job: RecordAttempt stores the attempt only while this lease is the
	// job's and has not run out.
	LeaseUntil time.Time
	// LeaseExpired is set by ClaimJobs when the job had been claimed
	// before and that lease ran out with no attempt recorded: its worker
	// died, or lost the claim's answer, or could not record the attempt.
	// The worker counts such jobs (ams_webhook_leases_expired_total).
	LeaseExpired bool
	// PreviousSecret signs beside Secret at attempts before
	// PreviousSecretExpiresAt ("" and zero: none); see Secrets.
	PreviousSecret          string
	PreviousSecretExpiresAt time.Time
	// Payload is the webhook's (Webhook.Payload), read by the claim:
	// the store makes Event thin (Event.Thin) for PayloadThin.
	Payload string
	// OpenErr is set by ClaimJobs when the job was leased but could not
	// be opened: its event's data did not decode, or its webhook's secret
	// did not unseal (a sealing key no longer configured). The other jobs
	// of the claim are unaffected. The worker sends nothing for it and
	// records a failed attempt, retried on the schedule like any other.
	OpenErr error
}

// Secrets returns the secrets that sign an attempt at time at, newest
// first: the webhook's secret, and its previous one while that is still
// within its overlap.
func (j *Job) Secrets(at time.Time) []string {
	if j.PreviousSecret != "" && at.Before(j.PreviousSecretExpiresAt) {
		return []string{j.Secret, j.PreviousSecret}
	}
	return []string{j.Secret}
}

// Claim says what one ClaimJobs call may lease. The caps count every
// leased job in the queue, whoever leased it, so they hold across all the
// processes that share the database.
type Claim struct {
	Lease time.Duration // how long the claimed jobs are reserved
	Limit int           // jobs at most
	// PerWebhook caps the deliveries in flight to one webhook, so that a
	// slow or dead receiver holds at most that many slots.
	PerWebhook int
	// PerAccount caps the deliveries in flight of one account (0: no cap),
	// so that one account's slow receivers cannot take every slot; due
	// jobs are also taken round-robin across accounts.
	PerAccount int
}

// ErrLeaseLost is what RecordAttempt returns, storing nothing, when the
// job's lease ran out or passed to another worker before the attempt was
// recorded: the job will be attempted again, and the late attempt is
// neither logged nor counted.
var ErrLeaseLost = errors.New("the job's lease ran out before its attempt was recorded")

// JobOutcome says what happened to a job after an attempt.
type JobOutcome int

// Job outcomes.
const (
	JobSucceeded JobOutcome = iota // delivered
	JobRetry                       // failed; try again at NextAt
	JobFailed                      // failed for the last time (or 410): the webhook is marked failing
)

// AttemptResult is what the worker reports after an attempt.
type AttemptResult struct {
	Job      *Job
	Delivery *Delivery
	Outcome  JobOutcome
	NextAt   time.Time // for JobRetry
	// Email is queued, in the same transaction, when this attempt marks an
	// active webhook failing (unless its recipient has reached the cap of
	// EmailWebhookFailing, EmailCaps).
	Email *Email
	// Event (a webhook.failing event) is emitted, in the same
	// transaction, when this attempt marks an active webhook failing: it
	// goes to the events outbox and to the account's other active
	// webhooks subscribed to it.
	Event *Event
	// Notices writes the e-mail of a change of the webhook's health that
	// this attempt causes (webhook.degraded at the WebhookDegradedAfter-th
	// failure in a row, webhook.recovered at the success after them);
	// nil: the events are emitted, no e-mail is queued.
	Notices WebhookNotices
}

// Email is an e-mail queued in the database and sent by the mail worker (mail.Worker).
type Email struct {
	ID string
	// Kind is what the e-mail is for; it must be one of EmailCaps': the
	// store refuses to queue an e-mail of another kind.
	Kind     EmailKind
	To       string
	Subject  string
	Text     string
	Attempts int
}

// EmailKind is what an e-mail is for. Each kind has a per-recipient cap
// (EmailCaps).
type EmailKind string

// The kinds of e-mail ams sends.
const (
	// EmailVerificationLink carries a link that verifies the address
	// (sign-up, the "send a new link" button).
	EmailVerificationLink EmailKind = "email_verification"
	// EmailPasswordResetLink carries a link that sets a new password
	// (the forgot-password form).
	EmailPasswordResetLink EmailKind = "password_reset"
	// EmailSignupTaken tells the owner of an address that someone tried
	// to sign up with it.
	EmailSignupTaken EmailKind = "signup_taken"
	// EmailKeyReminder tells that an API key expires or is due rotation.
	EmailKeyReminder EmailKind = "key_reminder"
	// EmailWebhookFailing tells that a webhook was marked failing.
	EmailWebhookFailing EmailKind = "webhook_failing"
)

// EmailCap is a per-recipient cap: at most Max e-mails of a kind to one
// address within Window (a sliding window, counted over every process
// on the database).
type EmailCap struct {
	Max    int
	Window time.Duration
}

// EmailCaps are the per-recipient caps, one per kind of e-mail, so that
// nobody can flood an address through ams, whatever forms they post and
// from however many addresses: an e-mail over its cap is not queued,
// and the answer to whoever caused it is the same as when it is (a
// sign-up with a taken address, a password reset, look the same). The
// windows are at most EventRetention, for which sent e-mails are kept.
//
// The links (verification, reset) have their own per-account caps too
// (account.MaxVerificationEmails, account.MaxResetEmails). Key reminders
// and failing-webhook notices are caused by the account's own keys and
// webhooks, so their caps are higher: they only stop a burst (hundreds of
// keys expiring at once, webhooks re-enabled and failing again in a loop).
var EmailCaps = map[EmailKind]EmailCap{
	EmailVerificationLink:  {Max: 5, Window: 24 * time.Hour},
	EmailPasswordResetLink: {Max: 6, Window: 24 * time.Hour},
	EmailSignupTaken:       {Max: 3, Window: 24 * time.Hour},
	EmailKeyReminder:       {Max: 20, Window: 24 * time.Hour},
	EmailWebhookFailing:    {Max: 20, Window: 24 * time.Hour},
	// A webhook that flaps between degraded and recovered tells its
	// owner at most this often.
	EmailWebhookHealth: {Max: 20, Window: 24 * time.Hour},
}

// DeliveryQueue is the durable queue the webhook worker and the mail worker use.
type DeliveryQueue interface {
	// ClaimJobs leases up to c.Limit due jobs (next attempt at or before
	// now, webhook active, not leased) until now+c.Lease, within the caps
	// of c counted over all leased jobs, taking the accounts' oldest jobs
	// in turn (the oldest job of each account with due work, then the
	// second, ...). A job whose lease ran out (its worker died) is due
	// again; the claim that takes it again sets its LeaseExpired. Claims of
	// several processes take disjoint jobs. A leased job that cannot be
	// opened comes back with its OpenErr set, beside the others.
	ClaimJobs(ctx context.Context, now time.Time, c Claim) ([]*Job, error)
	// RecordAttempt stores the attempt and the job's new state in one
	// transaction, if the job's lease is still r.Job's and has not run out
	// at now; else it stores nothing and returns ErrLeaseLost. For
	// JobFailed it marks the webhook failing and inactive, cancels its
	// pending jobs, queues r.Email and emits r.Event — all only if the
	// webhook was still active, so the owner gets one e-mail. It reports whether
	// the webhook was marked failing by this call.
	RecordAttempt(ctx context.Context, r *AttemptResult, now time.Time) (bool, error)
	// RecordAttempts records attempts whose outcome is JobSucceeded or
	// JobRetry, as RecordAttempt would one by one, in one transaction:
	// errs[i] is rs[i]'s answer (nil or ErrLeaseLost); err is an error of
	// the whole batch, after which nothing was stored.
	RecordAttempts(ctx context.Context, rs []*AttemptResult, now time.Time) (errs []error, err error)
	// JobsReady is signalled (without blocking) when a transaction has
	// queued new jobs, in this process or (on engines that can tell, such
	// as PostgreSQL) in another process sharing the database.
	JobsReady() <-chan struct{}
	// ClaimEmails leases up to limit e-mails due at now.
	ClaimEmails(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]*Email, error)
	// FinishEmail marks an e-mail sent, or schedules its retry at retryAt
	// (zero: give up).
	FinishEmail(ctx context.Context, id string, sent bool, errText string, retryAt time.Time, now time.Time) error
	// Purge deletes events older than EventRetention with their jobs and
	// attempts, and idempotency keys older than IdempotencyTTL.
	Purge(ctx context.Context, now time.Time) (int64, error)
	// QueueStats returns how many jobs are pending and how long the oldest
	// due one has waited at now (for metrics).
	QueueStats(ctx context.Context, now time.Time) (pending int64, oldest time.Duration, err error)
}
