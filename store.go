package ams

import (
	"context"
	"time"
)

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

// Store is the storage engine: the per-entity stores below, each declared
// next to its records. Every method that reads or writes an account's data
// takes the account's user id and matches it in the query: a record of
// another account is reported as not found.
type Store interface {
	UserStore
	KeyStore
	AuthWatch
	KeyReminderStore
	AccountTokenStore
	AccountData
	DeliveryQueue
	OAuthStore
	UsageStore
	IdempotencyStore
	ReminderStore
	TurnStore
	TurnRequiredStore

	// Update runs fn in one transaction; see Tx. It commits when fn
	// returns nil and returns fn's error unchanged otherwise. fn must not
	// call the store's own methods (SQLite has one write connection, which
	// fn holds), nor use tx after it returns.
	Update(ctx context.Context, fn func(tx Tx) error) error

	// Ping checks that the database answers (for readiness).
	Ping(ctx context.Context) error
	// SchemaVersion returns the highest applied migration number.
	SchemaVersion(ctx context.Context) (int, error)
	Close() error
}

// AccountData is the records of an account: what a transaction (Tx) and
// the store alike expose.
type AccountData interface {
	AssistantStore
	ConversationStore
	EventStore
	WebhookStore
	TaskStore
	CalendarStore
	IntegrationStore
	ActionStore
}

// Tx is one transaction over an account's records: the same interfaces as
// the store's. Everything written through it, including the events
// emitted, commits together when the function given to Store.Update
// returns nil, and none of it otherwise. The Find methods lock the row
// they read until the transaction ends (where the engine needs row locks),
// so a read-modify-write cannot lose a concurrent update. Every method
// matches the user id: another account's record is ENOTFOUND. After an
// ENOTFOUND or ECONFLICT answer the transaction may go on; after any other
// error fn must return it.
type Tx interface {
	AccountData
	ManagementTx
}

// ManagementTx is what the management of an account, its API keys and
// its OAuth clients writes in a transaction, with the audit event of the
// change (api_key.created, oauth_client.deleted, account.updated, ...).
// FindUser, FindKey and FindOAuthClient lock the row they read, as the
// other Find methods of a Tx do.
type ManagementTx interface {
	FindUser(ctx context.Context, id string) (*User, error)
	UpdateUser(ctx context.Context, id string, upd UserUpdate, now time.Time) (*User, error)
	CreateKey(ctx context.Context, k *APIKey) error
	FindKey(ctx context.Context, id string) (*APIKey, error)
	RevokeKey(ctx context.Context, userID, id string, now time.Time) (*APIKey, error)
	CreateOAuthClient(ctx context.Context, c *OAuthClient) error
	FindOAuthClient(ctx context.Context, id string) (*OAuthClient, error)
	SetOAuthClientSecret(ctx context.Context, userID, id, hash string, now time.Time) (*OAuthClient, error)
	DeleteOAuthClient(ctx context.Context, userID, id string, now time.Time) error
	// CountActiveKeys counts the account's API keys that are neither
	// revoked nor expired at now, and CountOAuthClients its OAuth
	// clients, for the caps MaxAPIKeys and MaxOAuthClients. Each first
	// locks the account's row (FOR NO KEY UPDATE on PostgreSQL, which
	// still lets rows referencing it be inserted; SQLite's single writer
	// gives the same order), so that two creations in transactions of
	// any processes count one after the other.
	CountActiveKeys(ctx context.Context, userID string, now time.Time) (int, error)
	CountOAuthClients(ctx context.Context, userID string) (int, error)
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
	// Reset is when Remaining next grows: when enough of the requests
	// counted have left the (sliding) window for one more to be allowed,
	// or now when nothing is counted.
	Reset time.Time
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
