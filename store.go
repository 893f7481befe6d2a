package ams

import (
	"context"
	"time"
)

// Integration is a connection of an account to an outside service.
type Integration struct {
	ID          string         `json:"id"`
	Object      string         `json:"object"` // "integration"
	UserID      string         `json:"-"`
	Provider    string         `json:"provider"`
	Status      string         `json:"status"` // "connected", "error" or "disconnected"
	Config      map[string]any `json:"config"`
	LastError   *string        `json:"last_error"`
	ConnectedAt time.Time      `json:"connected_at"`
	CreatedAt   time.Time      `json:"created_at"`
	UpdatedAt   time.Time      `json:"updated_at"`
}

// List orders.
const (
	OrderDesc = "desc" // newest first, the default
	OrderAsc  = "asc"
)

// ListParams select one page of a list. After and Before are ids of
// records of the same list; at most one of them is set.
type ListParams struct {
	Limit  int    // 1..100
	After  string // records that follow this one in the list's order
	Before string // records that precede this one in the list's order
	Order  string // OrderDesc or OrderAsc
}

// Page is one page of a list, in the list's order.
type Page[T any] struct {
	Data    []T
	HasMore bool
}

// Exchange is one turn of a conversation: the inbound message, the
// assistant's reply, and (when the conversation is new) the conversation.
// The store writes all of it, with its events, in one transaction.
type Exchange struct {
	NewConversation *Conversation // set when the exchange starts a conversation
	ConversationID  string
	Inbound         *Message
	Reply           *Message
	Events          []*Event
}

// IdempotencyRecord is the stored outcome of a request made with an
// Idempotency-Key.
type IdempotencyRecord struct {
	UserID      string
	Key         string
	RequestHash string // hash of method, path and body
	Done        bool   // false while the first request is still running
	Status      int
	Header      map[string]string
	Body        []byte
	CreatedAt   time.Time
}

// IdempotencyTTL is how long an idempotency key is remembered.
const IdempotencyTTL = 24 * time.Hour

// IdempotencyAbandoned is how long a key may stay claimed by a request that
// never finished (its process died) before another request may take it
// over: longer than any request may run.
const IdempotencyAbandoned = 5 * time.Minute

// Store is the storage engine. Every method that reads or writes an
// account's data takes the account's user id and matches it in the query:
// a record of another account is reported as not found.
type Store interface {
	// Users. FindUserByEmail and FindUser return ENOTFOUND when missing;
	// CreateUser returns ECONFLICT if the e-mail is taken.
	CreateUser(ctx context.Context, u *User) error
	FindUser(ctx context.Context, id string) (*User, error)
	FindUserByEmail(ctx context.Context, email string) (*User, error)
	UpdateUser(ctx context.Context, id string, upd UserUpdate, now time.Time) (*User, error)

	// API keys. AuthenticateKey finds a key by the hash of its secret, with
	// its user, whether revoked or expired or not (the caller decides);
	// ENOTFOUND if no key has that hash. It runs on every request, so it
	// fills only what authentication needs: the key's id, user id,
	// permissions, expiry and revocation, and the user's id, e-mail, plan,
	// limits and time zone. TouchKey records a use.
	CreateKey(ctx context.Context, k *APIKey) error
	ListKeys(ctx context.Context, userID string) ([]*APIKey, error)
	FindKey(ctx context.Context, id string) (*APIKey, error)
	RevokeKey(ctx context.Context, userID, id string, now time.Time) (*APIKey, error)
	AuthenticateKey(ctx context.Context, hash string) (*APIKey, *User, error)
	TouchKey(ctx context.Context, id string, now time.Time) error

	// Assistants.
	CreateAssistant(ctx context.Context, a *Assistant) error
	FindAssistant(ctx context.Context, userID, id string) (*Assistant, error)
	ListAssistants(ctx context.Context, userID string, p ListParams) (*Page[*Assistant], error)

	// Conversations and messages. RecentMessages returns the last n
	// messages of a conversation, oldest first.
	FindConversation(ctx context.Context, userID, id string) (*Conversation, error)
	ListConversations(ctx context.Context, userID, assistantID string, p ListParams) (*Page[*Conversation], error)
	FindMessage(ctx context.Context, userID, id string) (*Message, error)
	ListMessages(ctx context.Context, userID, conversationID string, p ListParams) (*Page[*Message], error)
	RecentMessages(ctx context.Context, userID, conversationID string, n int) ([]*Message, error)
	SaveExchange(ctx context.Context, x *Exchange) error

	// Integrations.
	ListIntegrations(ctx context.Context, userID string, p ListParams) (*Page[*Integration], error)

	// Events.
	ListEvents(ctx context.Context, userID, eventType string, p ListParams) (*Page[*Event], error)

	// Webhooks. CreateWebhook stores w with its secret sealed.
	// UpdateWebhook applies upd; deactivating a webhook (by the caller or
	// through failing) cancels its pending deliveries. DeleteWebhook removes
	// it with its deliveries.
	CreateWebhook(ctx context.Context, w *Webhook) error
	FindWebhook(ctx context.Context, userID, id string) (*Webhook, error)
	ListWebhooks(ctx context.Context, userID string, p ListParams) (*Page[*Webhook], error)
	UpdateWebhook(ctx context.Context, userID, id string, upd WebhookUpdate, now time.Time) (*Webhook, error)
	DeleteWebhook(ctx context.Context, userID, id string) error
	// PingWebhook stores the webhook.ping event e and queues it for webhook id
	// only. EnqueueDelivery queues event eventID again for the webhook
	// (redelivery). Both return ECONFLICT if the webhook is not active.
	PingWebhook(ctx context.Context, userID, id string, e *Event) error
	EnqueueDelivery(ctx context.Context, userID, webhookID, eventID string, now time.Time) error
	ListDeliveries(ctx context.Context, userID, webhookID, eventID string, p ListParams) (*Page[*Delivery], error)
	FindDelivery(ctx context.Context, userID, webhookID, id string) (*Delivery, error)
	FindEvent(ctx context.Context, userID, id string) (*Event, error)

	DeliveryQueue
	OAuthStore
	// The assistant's world: tasks, calendar events, actions, integration
	// secrets, reminders.
	WorldStore
	// Per-minute request counts of accounts (usage metering).
	UsageStore

	// Idempotency. BeginIdempotent stores a running record for (userID,
	// key) and returns nil, or returns the record already stored (done or
	// still running). Records older than IdempotencyTTL, and running ones
	// older than IdempotencyAbandoned, are replaced.
	BeginIdempotent(ctx context.Context, rec *IdempotencyRecord) (*IdempotencyRecord, error)
	FinishIdempotent(ctx context.Context, rec *IdempotencyRecord) error
	ReleaseIdempotent(ctx context.Context, userID, key string) error

	// Ping checks that the database answers (for readiness).
	Ping(ctx context.Context) error
	Close() error
}

// RateLimiter counts an account's requests in a per-minute and a per-day
// window. The in-process limiter serves one process; a shared store backs
// it when several processes serve one database.
type RateLimiter interface {
	// Take counts one request of account at now, unless a window is full.
	Take(ctx context.Context, account string, l Limits, now time.Time) (RateDecision, error)
}

// RateWindow is the state of one rate-limit window after a request.
type RateWindow struct {
	Name      string        // "minute" or "day"
	Limit     int           // requests allowed in the window
	Remaining int           // requests left in the window
	Length    time.Duration // the window's length
	Reset     time.Time     // when the current window ends
}

// RateDecision is the outcome of RateLimiter.Take.
type RateDecision struct {
	Allowed bool
	Minute  RateWindow
	Day     RateWindow
}

// Tightest returns the window nearest to running out: the one with fewer
// remaining requests, the shorter one on a tie.
func (d RateDecision) Tightest() RateWindow {
	if d.Day.Remaining < d.Minute.Remaining {
		return d.Day
	}
	return d.Minute
}

// RetryAfter returns how long to wait until a request would be allowed.
func (d RateDecision) RetryAfter(now time.Time) time.Duration {
	var wait time.Duration
	for _, w := range []RateWindow{d.Minute, d.Day} {
		if w.Remaining <= 0 {
			if dt := w.Reset.Sub(now); dt > wait {
				wait = dt
			}
		}
	}
	return wait
}
