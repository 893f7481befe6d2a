package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/amsdev/ams"
)

// webhookCols are a webhook's columns and its subscribed event types,
// joined with commas.
const webhookCols = `id, user_id, url, secret_sealed, active, status, created_at, updated_at,
	previous_secret_sealed, previous_secret_expires_at, metadata, management_events, ordered,
	failure_streak, payload, filter_assistant_id, filter_conversation_id, filter_metadata,
	(SELECT string_agg(s.event_type, ',') FROM webhook_subscriptions s WHERE s.webhook_id = webhooks.id)`

// sortEvents puts event types in their canonical order, dropping blanks,
// duplicates and unknown types; a subscription to every type is ["*"].
func sortEvents(types []string) []string {
	if slices.Contains(types, ams.EventAll) {
		return []string{ams.EventAll}
	}
	out := []string{}
	for _, t := range ams.EventTypes {
		if slices.Contains(types, t) {
			out = append(out, t)
		}
	}
	return out
}

func (q *Queries) scanWebhook(s scanner) (*ams.Webhook, error) {
	w := &ams.Webhook{Object: "webhook"}
	var sealed string
	var events *string
	var c, u int64
	var prevSealed *string
	var prevExpires *int64
	var meta string
	var fAssistant, fConversation, fMetadata *string
	if err := s.Scan(&w.ID, &w.UserID, &w.URL, &sealed, &w.Active, &w.Status, &c, &u, &prevSealed, &prevExpires, &meta, &w.ManagementEvents, &w.Ordered,
		&w.FailureStreak, &w.Payload, &fAssistant, &fConversation, &fMetadata, &events); err != nil {
		return nil, err
	}
	var err error
	if w.Metadata, err = ams.DecodeMetadata(meta); err != nil {
		return nil, fmt.Errorf("webhook %s: metadata: %w", w.ID, err)
	}
	w.Filter.AssistantID, w.Filter.ConversationID = deref(fAssistant), deref(fConversation)
	if fMetadata != nil {
		if err := json.Unmarshal([]byte(*fMetadata), &w.Filter.Metadata); err != nil {
			return nil, fmt.Errorf("webhook %s: filter: %w", w.ID, err)
		}
	}
	w.CreatedAt, w.UpdatedAt = FromMS(c), FromMS(u)
	w.Events = sortEvents(strings.Split(deref(events), ","))
	secret, err := q.s.sealer.Open(sealed, w.ID)
	if err != nil {
		return nil, fmt.Errorf("webhook %s: %w", w.ID, err)
	}
	w.Secret = secret
	if w.PreviousSecret, w.PreviousSecretExpiresAt, err = q.s.openPrevious(w.ID, prevSealed, prevExpires); err != nil {
		return nil, err
	}
	return w, nil
}

// openPrevious unseals a webhook's previous secret and reads its expiry
// (both NULL: none).
func (s *Store) openPrevious(webhookID string, sealed *string, expires *int64) (string, *time.Time, error) {
	if sealed == nil || expires == nil {
		return "", nil, nil
	}
	secret, err := s.sealer.Open(*sealed, webhookID)
	if err != nil {
		return "", nil, fmt.Errorf("webhook %s: previous secret: %w", webhookID, err)
	}
	at := FromMS(*expires)
	return secret, &at, nil
}

// sealPrevious returns the column values of w's previous secret: sealed,
// and its expiry in Unix milliseconds; NULL both when it has none.
func (q *Queries) sealPrevious(w *ams.Webhook) (*string, *int64) {
	if w.PreviousSecretExpiresAt == nil {
		return nil, nil
	}
	sealed, at := q.s.sealer.Seal(w.PreviousSecret, w.ID), MS(*w.PreviousSecretExpiresAt)
	return &sealed, &at
}

// CreateWebhook stores w, its subscriptions, and its secret sealed.
func (q *Queries) CreateWebhook(ctx context.Context, w *ams.Webhook) error {
	w.Events = sortEvents(w.Events)
	return q.inTx(ctx, func(q *Queries) error {
		if w.Payload == "" {
			w.Payload = ams.PayloadFull
		}
		fa, fc, fm := filterColumns(w.Filter)
		if _, err := q.exec(ctx, "insert webhook", `INSERT INTO webhooks (id, user_id, url, secret_sealed, active, status, created_at, updated_at, metadata, management_events,
			ordered, payload, filter_assistant_id, filter_conversation_id, filter_metadata)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`, w.ID, w.UserID, w.URL, q.s.sealer.Seal(w.Secret, w.ID), w.Active, w.Status,
			MS(w.CreatedAt), MS(w.UpdatedAt), ams.EncodeMetadata(w.Metadata), w.ManagementEvents, w.Ordered, w.Payload, fa, fc, fm); err != nil {
			return err
		}
		return q.setSubscriptions(ctx, w)
	})
}

// CreateWebhookCapped stores w unless its account already has as many
// webhooks as its cap allows (ams.User.WebhookLimit(defaultCap)). The
// account's row is locked first (FOR NO KEY UPDATE, which still lets rows
// referencing it be inserted meanwhile), so two creations of one account
// count one after the other, whichever processes run them; SQLite's single
// writer gives the same order.
func (q *Queries) CreateWebhookCapped(ctx context.Context, w *ams.Webhook, defaultCap int) error {
	return q.inTx(ctx, func(q *Queries) error {
		u := &ams.User{ID: w.UserID}
		var maxWebhooks *int64
		err := q.r.QueryRow(ctx, `SELECT plan, max_webhooks FROM users WHERE id = $1`+q.lock("FOR NO KEY UPDATE"), w.UserID).Scan(&u.Plan, &maxWebhooks)
		if errors.Is(err, sql.ErrNoRows) {
			return ams.NotFound("user", w.UserID)
		} else if err != nil {
			return q.fail("lock user", err)
		}
		if maxWebhooks != nil {
			u.MaxWebhooks = int(*maxWebhooks)
		}
		var n int
		if err := q.r.QueryRow(ctx, `SELECT count(*) FROM webhooks WHERE user_id = $1`, w.UserID).Scan(&n); err != nil {
			return q.fail("count webhooks", err)
		}
		if max := u.WebhookLimit(defaultCap); n >= max {
			return ams.ErrWebhookLimit(max)
		}
		return q.CreateWebhook(ctx, w)
	})
}

// setSubscriptions replaces the webhook's subscriptions with w.Events,
// as sortEvents keeps them (a subscription to all is the one row "*", so
// that an event matches a webhook's subscriptions once).
func (q *Queries) setSubscriptions(ctx context.Context, w *ams.Webhook) error {
	stmts := []Stmt{{"clear subscriptions", `DELETE FROM webhook_subscriptions WHERE webhook_id = $1`, []any{w.ID}}}
	if events := sortEvents(w.Events); len(events) > 0 {
		var values []string
		args := []any{w.ID, w.UserID}
		for _, t := range events {
			args = append(args, t)
			values = append(values, fmt.Sprintf("($1, $2, $%d)", len(args)))
		}
		stmts = append(stmts, Stmt{"insert subscriptions", `INSERT INTO webhook_subscriptions (webhook_id, user_id, event_type) VALUES ` +
			strings.Join(values, ", "), args})
	}
	_, err := q.batch(ctx, stmts)
	return err
}

// FindWebhook returns the user's webhook; ENOTFOUND otherwise. In a
// transaction it locks the row (FOR NO KEY UPDATE, which lets deliveries
// and jobs referencing it be inserted meanwhile), so concurrent updates
// from several processes apply one after the other.
func (q *Queries) FindWebhook(ctx context.Context, userID, id string) (*ams.Webhook, error) {
	return findOne(ctx, q, q.scanWebhook, "webhook", id,
		`SELECT `+webhookCols+` FROM webhooks WHERE id = $1 AND user_id = $2`+q.lock("FOR NO KEY UPDATE"), id, userID)
}

// ListWebhooks returns a page of the user's webhooks.
func (q *Queries) ListWebhooks(ctx context.Context, userID string, p ams.ListParams) (*ams.Page[*ams.Webhook], error) {
	return list(ctx, q, webhookCols, "webhooks", where("user_id = $1", userID), p, q.scanWebhook)
}

// UpdateWebhook applies upd. Turning a webhook off cancels its pending
// deliveries; turning it on clears a failing status.
func (q *Queries) UpdateWebhook(ctx context.Context, userID, id string, upd ams.WebhookUpdate, now time.Time) (*ams.Webhook, error) {
	var w *ams.Webhook
	err := q.inTx(ctx, func(q *Queries) error {
		if upd.Active != nil && *upd.Active {
			// Turning a webhook on may emit webhook.enabled, whose fan-out
			// share-locks the account's other webhooks: lock the account
			// first, as a final failure does (RecordAttempt), so that the
			// two never wait for each other's webhook.
			if err := q.lockUser(ctx, userID); err != nil {
				return err
			}
		}
		var err error
		if w, err = q.FindWebhook(ctx, userID, id); err != nil {
			return err
		}
		enabled := upd.Active != nil && *upd.Active && !w.Active
		if w.Metadata, err = upd.Metadata.Merge(w.Metadata, "metadata"); err != nil {
			return err
		}
		if upd.URL != nil {
			w.URL = *upd.URL
		}
		if upd.ManagementEvents != nil {
			w.ManagementEvents = *upd.ManagementEvents
		}
		if upd.Ordered != nil {
			w.Ordered = *upd.Ordered
		}
		if upd.Filter != nil {
			w.Filter = *upd.Filter
		}
		if upd.Payload != nil {
			w.Payload = *upd.Payload
		}
		rotate(w, upd, now)
		if upd.Events != nil {
			w.Events = sortEvents(upd.Events)
			if err := q.setSubscriptions(ctx, w); err != nil {
				return err
			}
		}
		if upd.Active != nil {
			if *upd.Active {
				w.Status = ams.WebhookActive
			} else if w.Active {
				if err := q.cancelJobs(ctx, w.ID, now); err != nil {
					return err
				}
			}
			w.Active = *upd.Active
		}
		w.UpdatedAt = now
		prevSealed, prevExpires := q.sealPrevious(w)
		fa, fc, fm := filterColumns(w.Filter)
		_, err = q.exec(ctx, "update webhook", `UPDATE webhooks SET url = $1, secret_sealed = $2, active = $3, status = $4, updated_at = $5,
			previous_secret_sealed = $6, previous_secret_expires_at = $7, metadata = $8, management_events = $9, ordered = $10,
			payload = $11, filter_assistant_id = $12, filter_conversation_id = $13, filter_metadata = $14 WHERE id = $15`,
			w.URL, q.s.sealer.Seal(w.Secret, w.ID), w.Active, w.Status, MS(now), prevSealed, prevExpires, ams.EncodeMetadata(w.Metadata), w.ManagementEvents,
			w.Ordered, w.Payload, fa, fc, fm, w.ID)
		if err != nil || !enabled {
			return err
		}
		return q.emit(ctx, nil, []*ams.Event{ams.WebhookEnabledEvent(w, now)})
	})
	if err != nil {
		return nil, err
	}
	return w, nil
}

// webhookFilter reads the filter of webhook id (activeWebhook has
// share-locked it).
func (q *Queries) webhookFilter(ctx context.Context, id string) (ams.WebhookFilter, error) {
	var f ams.WebhookFilter
	var a, c, m *string
	if err := q.r.QueryRow(ctx, `SELECT filter_assistant_id, filter_conversation_id, filter_metadata FROM webhooks WHERE id = $1`, id).Scan(&a, &c, &m); err != nil {
		return f, q.fail("read webhook filter", err)
	}
	f.AssistantID, f.ConversationID = deref(a), deref(c)
	if m != nil {
		if err := json.Unmarshal([]byte(*m), &f.Metadata); err != nil {
			return f, fmt.Errorf("webhook %s: filter: %w", id, err)
		}
	}
	return f, nil
}

// filterColumns returns the columns of filter f: its assistant, its
// conversation, and its metadata pairs as a JSON object; NULL each that f
// does not set.
func filterColumns(f ams.WebhookFilter) (assistant, conversation, metadata *string) {
	if f.AssistantID != "" {
		assistant = &f.AssistantID
	}
	if f.ConversationID != "" {
		conversation = &f.ConversationID
	}
	if len(f.Metadata) > 0 {
		b, _ := json.Marshal(f.Metadata) // a map of strings always encodes
		m := string(b)
		metadata = &m
	}
	return assistant, conversation, metadata
}

// rotate applies the secret fields of upd to w at now; see
// ams.WebhookUpdate. A replaced secret becomes the previous one for the
// overlap asked (default ams.DefaultSecretOverlap), dropping any older
// previous secret; an overlap of 0 keeps none. A previous secret whose
// overlap has ended is dropped on every update.
func rotate(w *ams.Webhook, upd ams.WebhookUpdate, now time.Time) {
	w.ExpirePrevious(now)
	overlap := ams.DefaultSecretOverlap
	if upd.PreviousSecretOverlap != nil {
		overlap = max(0, *upd.PreviousSecretOverlap)
	}
	switch {
	case upd.Secret != nil && *upd.Secret != w.Secret:
		w.PreviousSecret, w.PreviousSecretExpiresAt = w.Secret, nil
		w.Secret = *upd.Secret
	case upd.Secret != nil || upd.PreviousSecretOverlap == nil || w.PreviousSecretExpiresAt == nil:
		return // the same secret again, or nothing about secrets: as it was
	}
	if overlap > 0 {
		at := now.Add(overlap)
		w.PreviousSecretExpiresAt = &at
	} else {
		w.PreviousSecret, w.PreviousSecretExpiresAt = "", nil
	}
}

// cancelJobs cancels the pending jobs of a webhook being disabled, unless
// it is ordered: an ordered webhook keeps them, in order, for when it is
// enabled again (a final failure thus releases the jobs behind it).
func (q *Queries) cancelJobs(ctx context.Context, webhookID string, now time.Time) error {
	_, err := q.exec(ctx, "cancel deliveries", `UPDATE webhook_jobs SET state = 'canceled', updated_at = $1 WHERE webhook_id = $2 AND state = 'pending'
		AND NOT EXISTS (SELECT 1 FROM webhooks w WHERE w.id = $2 AND w.ordered)`,
		MS(now), webhookID)
	return err
}

// DeleteWebhook removes the webhook, its subscriptions, jobs and delivery
// log.
func (q *Queries) DeleteWebhook(ctx context.Context, userID, id string) error {
	n, err := q.exec(ctx, "delete webhook", `DELETE FROM webhooks WHERE id = $1 AND user_id = $2`, id, userID)
	if err != nil {
		return err
	}
	return affected(n, "webhook", id)
}

// lockUser locks the account's row until the transaction ends (FOR NO
// KEY UPDATE: rows referencing it may still be inserted) where the engine
// takes row locks. Transactions that change a webhook's state and then
// fan an event out to the account's other webhooks take it first, so that
// they run one after the other and never wait for each other's webhooks.
func (q *Queries) lockUser(ctx context.Context, userID string) error {
	lock := q.lock("FOR NO KEY UPDATE")
	if lock == "" {
		return nil
	}
	_, err := q.exec(ctx, "lock user", `SELECT 1 FROM users WHERE id = $1`+lock, userID)
	return err
}

// activeWebhook checks that the user's webhook exists and is active,
// share-locking it in a transaction: a concurrent deactivation waits, then
// cancels the job queued here.
func (q *Queries) activeWebhook(ctx context.Context, userID, id string) error {
	var active bool
	err := q.r.QueryRow(ctx, `SELECT active FROM webhooks WHERE id = $1 AND user_id = $2`+q.lock("FOR SHARE"), id, userID).Scan(&active)
	if errors.Is(err, sql.ErrNoRows) {
		return ams.NotFound("webhook", id)
	} else if err != nil {
		return q.fail("find webhook", err)
	}
	if !active {
		return ams.Errorf(ams.ECONFLICT, "webhook_inactive", "Webhook '%s' is not active; enable it with PATCH {\"active\": true} first.", id)
	}
	return nil
}

const insertJob = `INSERT INTO webhook_jobs (user_id, webhook_id, event_id, next_at, created_at, updated_at) VALUES ($1, $2, $3, $4, $4, $4)`

// PingWebhook stores e (a webhook.ping event) and queues it for this
// webhook only.
func (q *Queries) PingWebhook(ctx context.Context, userID, id string, e *ams.Event) error {
	e.Cause(ctx)
	data, err := encodeEventData(e)
	if err != nil {
		return err
	}
	return q.inTx(ctx, func(q *Queries) error {
		if err := q.activeWebhook(ctx, userID, id); err != nil {
			return err
		}
		if _, err := q.batch(ctx, []Stmt{
			{opInsertEvents, insertEventsSQL(1), []any{e.ID, e.UserID, e.Type, string(data), MS(e.CreatedAt)}},
			{"queue delivery", insertJob, []any{userID, id, e.ID, MS(e.CreatedAt)}},
		}); err != nil {
			return err
		}
		q.queued(1)
		return nil
	})
}

// EnqueueDelivery queues the event for the webhook again; ECONFLICT if the
// event is past its retention.
func (q *Queries) EnqueueDelivery(ctx context.Context, userID, webhookID, eventID string, now time.Time) error {
	return q.inTx(ctx, func(q *Queries) error {
		if err := q.activeWebhook(ctx, userID, webhookID); err != nil {
			return err
		}
		ok, err := q.exists(ctx, "event", `SELECT 1 FROM events WHERE id = $1 AND user_id = $2`, eventID, userID)
		if err != nil {
			return err
		}
		if !ok {
			return ams.Errorf(ams.ECONFLICT, "event_expired", "Event '%s' is no longer kept (events are kept %d days).", eventID, int(ams.EventRetention.Hours()/24))
		}
		if _, err := q.exec(ctx, "queue delivery", insertJob, userID, webhookID, eventID, MS(now)); err != nil {
			return err
		}
		q.queued(1)
		return nil
	})
}

// EnqueueRecovery queues, in one INSERT … SELECT, the retained events of
// the account in [since, until) of the webhook's subscribed types that it
// has not received successfully (no job of the event for the webhook
// succeeded: a successful attempt marks its job succeeded, even one
// canceled while in flight) and that are not pending for it, in
// the event log's order (jobs' seq follows the events' catch-up order
// (txid, seq) of ListEvents, and all are due now, so they are claimed
// oldest first, and an ordered webhook gets them in the log's order,
// after the jobs already pending for it). The
// webhook is share-locked, as by a ping: a concurrent deactivation waits,
// then cancels what was queued here.
func (q *Queries) EnqueueRecovery(ctx context.Context, userID, webhookID string, since, until, now time.Time) (int64, error) {
	var n int64
	err := q.inTx(ctx, func(q *Queries) error {
		if err := q.activeWebhook(ctx, userID, webhookID); err != nil {
			return err
		}
		from := since
		if kept := now.Add(-ams.EventRetention); from.Before(kept) {
			from = kept
		}
		f, err := q.webhookFilter(ctx, webhookID)
		if err != nil {
			return err
		}
		if !f.IsZero() {
			n, err = q.recoverFiltered(ctx, userID, webhookID, f, MS(from), MS(until), MS(now))
			return err
		}
		n, err = q.exec(ctx, "queue recovery", `INSERT INTO webhook_jobs (user_id, webhook_id, event_id, next_at, created_at, updated_at)
			SELECT e.user_id, $2, e.id, $5, $5, $5 `+recoverable,
			userID, webhookID, MS(from), MS(until), MS(now))
		if err != nil {
			return err
		}
		q.queued(n)
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// recoverable is the FROM, WHERE and ORDER BY of the events a recovery
// queues for webhook $2 of account $1, created in [$3, $4): see
// EnqueueRecovery.
var recoverable = `FROM events e
			WHERE e.user_id = $1 AND e.created_at >= $3 AND e.created_at < $4
				AND (e.type IN (SELECT s.event_type FROM webhook_subscriptions s WHERE s.webhook_id = $2)
					OR (e.type <> 'webhook.ping' AND EXISTS (SELECT 1 FROM webhook_subscriptions s WHERE s.webhook_id = $2 AND s.event_type = '*')))
				AND (e.type NOT IN (` + ams.ManagementEventList() + `) OR EXISTS (SELECT 1 FROM webhooks w WHERE w.id = $2 AND w.management_events))
				AND NOT EXISTS (SELECT 1 FROM webhook_jobs j WHERE j.event_id = e.id AND j.webhook_id = $2 AND j.state IN ('pending', 'succeeded'))
			ORDER BY e.txid, e.seq`

// recoverFiltered is EnqueueRecovery's queueing for a webhook with filter
// f: it reads the recoverable events in [from, until), keeps those f
// selects (ams.WebhookFilter.Matches, as the fan-out does),
// and queues them in their order. It returns how many.
func (q *Queries) recoverFiltered(ctx context.Context, userID, webhookID string, f ams.WebhookFilter, from, until, now int64) (int64, error) {
	rows, err := q.w.Query(ctx, `SELECT e.id, e.type, e.data `+recoverable, userID, webhookID, from, until)
	if err != nil {
		return 0, q.fail("read recovery", err)
	}
	var ids []string
	for rows.Next() {
		e := &ams.Event{}
		var data []byte
		if err := rows.Scan(&e.ID, &e.Type, &data); err != nil {
			rows.Close()
			return 0, q.fail("read recovery", err)
		}
		if err := decodeEventData(data, e); err != nil {
			rows.Close()
			return 0, err
		}
		if f.Matches(e) {
			ids = append(ids, e.ID)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, q.fail("read recovery", err)
	}
	var n int64
	for c := range slices.Chunk(ids, 100) {
		args := make([]any, 0, 6*len(c))
		for _, id := range c {
			args = append(args, userID, webhookID, id, now, now, now)
		}
		k, err := q.exec(ctx, "queue recovery", `INSERT INTO webhook_jobs (user_id, webhook_id, event_id, next_at, created_at, updated_at) VALUES `+valueRows(len(c), 6), args...)
		if err != nil {
			return 0, err
		}
		n += k
	}
	q.queued(n)
	return n, nil
}

const deliveryCols = `id, user_id, webhook_id, event_id, event_type, attempt, url, success, status_code, duration_ms, error, response_body, created_at`

func scanDelivery(s scanner) (*ams.Delivery, error) {
	d := &ams.Delivery{Object: "webhook_delivery"}
	var code *int64
	var c int64
	if err := s.Scan(&d.ID, &d.UserID, &d.WebhookID, &d.EventID, &d.EventType, &d.Attempt, &d.URL, &d.Success, &code,
		&d.DurationMS, &d.Error, &d.ResponseBody, &c); err != nil {
		return nil, err
	}
	if code != nil {
		v := int(*code)
		d.StatusCode = &v
	}
	d.CreatedAt = FromMS(c)
	return d, nil
}

// ListDeliveries returns a page of a webhook's delivery attempts selected
// by df.
func (q *Queries) ListDeliveries(ctx context.Context, userID, webhookID string, df ams.DeliveryFilter, p ams.ListParams) (*ams.Page[*ams.Delivery], error) {
	f := where("webhook_id = $1 AND user_id = $2", webhookID, userID)
	if df.EventID != "" {
		f.add("event_id = $?", df.EventID)
	}
	if df.Success != nil {
		f.add("success = $?", *df.Success)
	}
	return list(ctx, q, deliveryCols, "webhook_deliveries", f, p, scanDelivery)
}

// FindDelivery returns one attempt of the user's webhook; ENOTFOUND otherwise.
func (q *Queries) FindDelivery(ctx context.Context, userID, webhookID, id string) (*ams.Delivery, error) {
	return findOne(ctx, q, scanDelivery, "delivery", id,
		`SELECT `+deliveryCols+` FROM webhook_deliveries WHERE id = $1 AND webhook_id = $2 AND user_id = $3`, id, webhookID, userID)
}

// RecordAttempt stores an attempt and its consequences; see
// ams.DeliveryQueue. It is a batch of one (recordAttempts).
func (q *Queries) RecordAttempt(ctx context.Context, r *ams.AttemptResult, now time.Time) (bool, error) {
	out, err := q.recordAttempts(ctx, []*ams.AttemptResult{r}, now, nil)
	if err != nil {
		return false, err
	}
	return out[0].failed, out[0].err
}

// RecordAttempts records attempts whose outcome is JobSucceeded or
// JobRetry, as RecordAttempt would one by one, in one transaction
// (recordAttempts). errs[i] is rs[i]'s answer; err is an error of the
// whole batch, after which nothing was stored. A final failure is
// recorded alone (RecordAttempt): it locks its account and webhook.
func (q *Queries) RecordAttempts(ctx context.Context, rs []*ams.AttemptResult, now time.Time) (errs []error, err error) {
	errs, _, err = q.RecordAttemptsThen(ctx, rs, now, nil)
	return errs, err
}

// RecordAttemptsThen is RecordAttempts with then run after the records,
// in the same transaction, inside a savepoint of its own: an error of
// then undoes then's writes only and is its answer (thenErr), the records
// stay. A SQLite store claims the next jobs so (sqlite.DB's
// RecordAttemptsAndClaim): one trip through its one writer where a record
// and a claim took two.
func (q *Queries) RecordAttemptsThen(ctx context.Context, rs []*ams.AttemptResult, now time.Time, then func(context.Context, Conn) error) (errs []error, thenErr, err error) {
	for _, r := range rs {
		if r.Outcome == ams.JobFailed {
			return nil, nil, fmt.Errorf("RecordAttempts: a failed job's attempt goes through RecordAttempt")
		}
	}
	var after func(context.Context, Conn) error
	if then != nil {
		after = func(ctx context.Context, c Conn) error {
			thenErr = nil // the transaction's function may run again
			if _, err := c.Exec(ctx, "SAVEPOINT record_then"); err != nil {
				return err
			}
			if thenErr = then(ctx, c); thenErr != nil {
				if _, err := c.Exec(ctx, "ROLLBACK TO record_then"); err != nil {
					return err
				}
			}
			_, err := c.Exec(ctx, "RELEASE record_then")
			return err
		}
	}
	out, err := q.recordAttempts(ctx, rs, now, after)
	if err != nil {
		return nil, nil, err
	}
	errs = make([]error, len(rs))
	for i, o := range out {
		errs[i] = o.err
	}
	return errs, thenErr, nil
}

// recorded is one attempt's answer: whether it marked its webhook
// failing, or ErrLeaseLost.
type recorded struct {
	failed bool
	err    error
}

// recordAttempts is the one path that stores attempts, in one
// transaction: it locks what the attempts' consequences change
// (lockAttempts), updates their jobs fenced by each claim's lease and
// logs the attempts whose job it matched (recordAttemptChunk, two
// statements per 16 attempts), applies them to their webhooks' failure
// streaks (recordHealth: nothing on the common path, successes to healthy
// webhooks), then applies the consequences of a final failure
// (failWebhook), and runs then, if any, last. An attempt whose job the
// update did not match stores nothing: its answer is ErrLeaseLost,
// unless its webhook was deleted while the delivery was in flight (which
// took the jobs and log with it): then there is nothing to record, and
// its answer is nil.
//
// Where transactions take the claims' lock (Dialect.ClaimsLock), a record
// of successes only, outside a transaction and with nothing to run after
// it, begins without it (WithoutClaimsLock): it queues no job and makes
// none due, so a claim need not wait for it, nor it for a claim. Should
// one of its webhooks have a failure streak to end (which may emit
// webhook.recovered, whose fan-out queues jobs), it starts again with
// the lock.
func (q *Queries) recordAttempts(ctx context.Context, rs []*ams.AttemptResult, now time.Time, then func(context.Context, Conn) error) ([]recorded, error) {
	if len(rs) == 0 {
		return nil, nil
	}
	unlocked := q.s.d.ClaimsLock && q.tx == nil && then == nil && !slices.ContainsFunc(rs, func(r *ams.AttemptResult) bool {
		return r.Outcome != ams.JobSucceeded
	})
	if unlocked {
		out, err := q.recordAttemptsIn(WithoutClaimsLock(ctx), rs, now, nil, true)
		if !errors.Is(err, errClaimsLockNeeded) {
			return out, err
		}
	}
	return q.recordAttemptsIn(ctx, rs, now, then, false)
}

// errClaimsLockNeeded ends a record begun without the claims' lock that
// has a webhook's failure streak to end.
var errClaimsLockNeeded = errors.New("the record needs the claims' lock")

// recordAttemptsIn is recordAttempts in one transaction; unlocked: one
// begun without the claims' lock, which gives up with
// errClaimsLockNeeded before any write when it would change a webhook's
// health.
func (q *Queries) recordAttemptsIn(ctx context.Context, rs []*ams.AttemptResult, now time.Time, then func(context.Context, Conn) error, unlocked bool) ([]recorded, error) {
	out := make([]recorded, len(rs))
	matched := make(map[int64]bool, len(rs))
	hooks := map[int64]bool{} // unmatched attempts' webhooks found, where the record's statement looked
	err := q.inTx(ctx, func(q *Queries) error {
		clear(matched)
		clear(hooks)
		clear(out)
		held, err := q.lockAttempts(ctx, rs)
		if err != nil {
			return err
		}
		if unlocked && len(held) > 0 {
			return errClaimsLockNeeded
		}
		for i := 0; i < len(rs); i += attemptsPerStatement {
			c := rs[i:min(i+attemptsPerStatement, len(rs))]
			// A record begun without the claims' lock is successes only
			// and writes nothing after its attempts (it has no streak to
			// end, no failure, no then): its last statement may carry the
			// COMMIT.
			last := unlocked && i+len(c) == len(rs)
			if err := q.recordAttemptChunk(ctx, c, now, matched, hooks, last); err != nil {
				return err
			}
		}
		if err := q.recordHealth(ctx, rs, func(i int) bool { return matched[rs[i].Job.Seq] }, held, now); err != nil {
			return err
		}
		for i, r := range rs {
			var err error
			switch {
			case !matched[r.Job.Seq]:
				out[i].err, err = q.unmatched(ctx, r, hooks)
			case r.Outcome == ams.JobFailed:
				out[i].failed, err = q.failWebhook(ctx, r, now)
			}
			if err != nil {
				return err
			}
		}
		if then != nil {
			return then(ctx, q.w)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// attemptsPerStatement bounds the attempts of one UPDATE and one INSERT
// of recordAttempts: SQLite's driver binds numbered parameters in time
// that grows with the square of their number (13 per attempt).
const attemptsPerStatement = 16

// recordAttemptChunk updates the jobs of rs, fenced by their leases, and
// logs the attempts of those it matched, adding them to matched. A
// job's new state is the attempt's outcome: succeeded; pending again at
// NextAt (a retry); failed. Only a success overrides a job canceled
// while its delivery was in flight. Where the engine writes inside WITH
// (Dialect.WritableWith) it is one statement (recordAttemptsWith), which
// also says of each attempt it did not match whether its webhook exists
// (in hooks); last: it is the transaction's last statement, which may
// carry the COMMIT (lastQuery).
func (q *Queries) recordAttemptChunk(ctx context.Context, rs []*ams.AttemptResult, now time.Time, matched, hooks map[int64]bool, last bool) error {
	if q.s.d.WritableWith {
		return q.recordAttemptsWith(ctx, rs, now, matched, hooks, last)
	}
	var b strings.Builder
	args := []any{MS(now)}
	b.WriteString(updateJobsSQL + `(VALUES `)
	for i, r := range rs {
		state, next := jobAfter(r)
		if i > 0 {
			b.WriteString(", ")
		}
		n := len(args)
		fmt.Fprintf(&b, "(CAST($%d AS BIGINT), CAST($%d AS BIGINT), CAST($%d AS TEXT), CAST($%d AS BIGINT))", n+1, n+2, n+3, n+4)
		args = append(args, r.Job.Seq, MS(r.Job.LeaseUntil), state, next)
	}
	b.WriteString(`) AS v WHERE ` + jobsFenceSQL + ` RETURNING webhook_jobs.seq`)
	rows, err := q.w.Query(ctx, b.String(), args...)
	if err != nil {
		return q.fail("update jobs", err)
	}
	here := map[int64]bool{}
	for rows.Next() {
		var seq int64
		if err := rows.Scan(&seq); err != nil {
			rows.Close()
			return q.fail("update jobs", err)
		}
		here[seq], matched[seq] = true, true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return q.fail("update jobs", err)
	}
	if len(here) == 0 {
		return nil
	}
	args = args[:0]
	for _, r := range rs {
		if !here[r.Job.Seq] {
			continue
		}
		d := r.Delivery
		args = append(args, d.ID, d.UserID, d.WebhookID, d.EventID, d.EventType, d.Attempt, d.URL, d.Success, d.StatusCode,
			d.DurationMS, d.Error, d.ResponseBody, MS(d.CreatedAt))
	}
	_, err = q.exec(ctx, "insert deliveries", `INSERT INTO webhook_deliveries (`+deliveryCols+`) VALUES `+valueRows(len(here), 13), args...)
	return err
}

// updateJobsSQL begins the update of attempts' jobs, on both engines:
// the VALUES that follow it, as v, hold per attempt its job's seq and
// lease, and the job's new state and next time (jobAfter), whose names
// (column1 to column4) SQLite and PostgreSQL both give them; $1 is now.
const updateJobsSQL = `UPDATE webhook_jobs SET state = CASE WHEN webhook_jobs.state = 'pending' OR v.column3 = 'succeeded' THEN v.column3 ELSE webhook_jobs.state END,
		attempts = webhook_jobs.attempts + 1, next_at = CASE WHEN v.column4 > 0 THEN v.column4 ELSE webhook_jobs.next_at END, lease_until = 0, updated_at = $1
		FROM `

// jobsFenceSQL matches an attempt's job (updateJobsSQL's v) only under
// the claim's lease the attempt was made under, and only while that
// lease runs.
const jobsFenceSQL = `webhook_jobs.seq = v.column1 AND webhook_jobs.lease_until = v.column2 AND webhook_jobs.lease_until > $1`

// jobAfter is the state an attempt leaves its job in, and the job's next
// attempt's time (0: unchanged).
func jobAfter(r *ams.AttemptResult) (state string, next int64) {
	switch r.Outcome {
	case ams.JobRetry:
		return "pending", MS(r.NextAt)
	case ams.JobFailed:
		return "failed", 0
	}
	return "succeeded", 0
}

// recordAttemptsWith is recordAttemptChunk in one statement, for an
// engine that writes inside WITH: the jobs' UPDATE … RETURNING feeds the
// attempts' INSERT, and the statement returns, for each attempt whose
// job it did not match, whether its webhook exists (hooks). A record of
// successes, the common path, is then two round trips: BEGIN with the
// webhooks' streaks (lockAttempts), and this statement with the COMMIT.
func (q *Queries) recordAttemptsWith(ctx context.Context, rs []*ams.AttemptResult, now time.Time, matched, hooks map[int64]bool, last bool) error {
	args := make([]any, 1, 1+len(rs)*recordWithWidth)
	args[0] = MS(now)
	for _, r := range rs {
		state, next := jobAfter(r)
		d := r.Delivery
		args = append(args, r.Job.Seq, MS(r.Job.LeaseUntil), state, next,
			d.ID, d.UserID, d.WebhookID, d.EventID, d.EventType, d.Attempt, d.URL, d.Success, d.StatusCode,
			d.DurationMS, d.Error, d.ResponseBody, MS(d.CreatedAt))
		matched[r.Job.Seq] = true // until the statement says otherwise
	}
	return q.lastQuery(ctx, "record attempts", RecordAttemptsSQL(len(rs)), args, func(rows Rows) error {
		for rows.Next() {
			var seq int64
			var found bool
			if err := rows.Scan(&seq, &found); err != nil {
				return err
			}
			delete(matched, seq)
			hooks[seq] = found
		}
		return rows.Err()
	}, last)
}

// recordWithWidth is the parameters of one attempt in RecordAttemptsSQL: the
// job's seq, lease, new state and next time, and the attempt's
// deliveryCols.
const recordWithWidth = 17

// recordWithTypes casts RecordAttemptsSQL's parameters, whose types a VALUES
// in a WITH does not infer.
var recordWithTypes = [recordWithWidth]string{"BIGINT", "BIGINT", "TEXT", "BIGINT",
	"TEXT", "TEXT", "TEXT", "TEXT", "TEXT", "INTEGER", "TEXT", "BOOLEAN", "INTEGER", "BIGINT", "TEXT", "TEXT", "BIGINT"}

// recordWithCache keeps RecordAttemptsSQL's statements by their number of
// attempts (at most attemptsPerStatement).
var recordWithCache sync.Map

// RecordAttemptsSQL is recordAttemptsWith's statement for n attempts (at
// most attemptsPerStatement; exported for the engine's plan tests): $1 is
// now, then recordWithWidth parameters per attempt. Each attempt's
// parameters appear in three VALUES: its job's fence (the UPDATE's FROM,
// updateJobsSQL and jobsFenceSQL, as on SQLite),
// its log row (inserted when its job was matched), and its job and
// webhook (looked up when it was not). The UPDATE also lists the jobs'
// seqs (IN), so that the planner reads them by the primary key in every
// plan: joined to the VALUES alone, the generic plan PostgreSQL keeps of
// the statement, if made while the queue was small (a new queue, not yet
// analyzed), read webhook_jobs whole, on every record, however large the
// queue grew (TestRecordPlanReadsJobsByKey; BenchmarkClaimAndRecordBatch:
// 4.3 ms a cycle after 100 batches, 11.7 ms after 1,500).
func RecordAttemptsSQL(n int) string {
	if s, ok := recordWithCache.Load(n); ok {
		return s.(string)
	}
	var b strings.Builder
	values := func(cols ...int) {
		b.WriteString("(VALUES ")
		for i := range n {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteByte('(')
			for k, j := range cols {
				if k > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "CAST($%d AS %s)", 2+i*recordWithWidth+j, recordWithTypes[j])
			}
			b.WriteByte(')')
		}
		b.WriteByte(')')
	}
	b.WriteString(`WITH u AS (` + updateJobsSQL)
	values(0, 1, 2, 3)
	b.WriteString(` AS v WHERE webhook_jobs.seq IN (`)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "CAST($%d AS BIGINT)", 2+i*recordWithWidth)
	}
	b.WriteString(`) AND ` + jobsFenceSQL + ` RETURNING webhook_jobs.seq),
	logged AS (INSERT INTO webhook_deliveries (` + deliveryCols + `) SELECT ` + deliveryCols + ` FROM `)
	values(0, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)
	b.WriteString(` AS d (job_seq, ` + deliveryCols + `) WHERE d.job_seq IN (SELECT seq FROM u))
	SELECT a.seq, EXISTS (SELECT 1 FROM webhooks WHERE webhooks.id = a.webhook_id) FROM `)
	values(0, 6)
	b.WriteString(` AS a (seq, webhook_id) WHERE a.seq NOT IN (SELECT seq FROM u)`)
	s, _ := recordWithCache.LoadOrStore(n, b.String())
	return s.(string)
}

// unmatched returns the answer to an attempt whose job
// recordAttemptChunk did not match: ErrLeaseLost while its webhook exists (the lease ran out or
// passed to another worker), nil when the webhook was deleted (its jobs
// went with it). lockAttempts locked the webhook, if it was there, for
// the rest of the transaction. hooks holds what the record's statement
// found of the webhook, where it looked (recordAttemptsWith).
func (q *Queries) unmatched(ctx context.Context, r *ams.AttemptResult, hooks map[int64]bool) (answer, err error) {
	ok, known := hooks[r.Job.Seq]
	if !known {
		if ok, err = q.exists(ctx, "webhook", `SELECT 1 FROM webhooks WHERE id = $1`, r.Job.WebhookID); err != nil {
			return nil, err
		}
	}
	if !ok {
		return nil, nil
	}
	return ams.ErrLeaseLost, nil
}

// failWebhook applies the consequences of a final failure recorded (r):
// the webhook, if still active, is marked failing and inactive, its
// pending jobs are canceled, its owner's e-mail (r.Email) is queued and
// webhook.failing (r.Event) emitted. It reports whether it marked the
// webhook (false: it was inactive already, by an earlier failure or its
// owner).
func (q *Queries) failWebhook(ctx context.Context, r *ams.AttemptResult, now time.Time) (bool, error) {
	marked, err := q.exec(ctx, "mark webhook failing", `UPDATE webhooks SET active = FALSE, status = $1, updated_at = $2 WHERE id = $3 AND active`,
		ams.WebhookFailing, MS(now), r.Job.WebhookID)
	if err != nil || marked != 1 {
		return false, err
	}
	if err := q.cancelJobs(ctx, r.Job.WebhookID, now); err != nil {
		return false, err
	}
	if e := r.Email; e != nil {
		if _, err := q.queueEmail(ctx, e, now); err != nil {
			return false, err
		}
	}
	if e := r.Event; e != nil {
		// webhook.failing, to the outbox and the account's other active
		// webhooks subscribed to it (this one is inactive now).
		if err := q.emit(ctx, nil, []*ams.Event{e}); err != nil {
			return false, err
		}
	}
	return true, nil
}

// PurgeStmt is one retention rule of Purge: a DELETE of the rows older
// than its one argument, Cutoff.
type PurgeStmt struct {
	SQL    string
	Cutoff int64
}

// PurgeBatch is the most rows one transaction of Purge deletes from a
// table that grows with traffic (events and their jobs, deliveries, turn
// events, e-mails, deleted calendar events): the purge runs as a series
// of short transactions that never hold the writer (SQLite) or many row
// locks (PostgreSQL) for long, however much history has come of age.
// How many a batch deletes is paced by how long the one before took
// (purgePace): a thousand events with their jobs took SQLite's writer
// 100–250 ms on a store of a million rows, which every write waiting
// behind it waited too.
const PurgeBatch = 1000

// PurgeHold is what a purge transaction aims to take, its wait for the
// writer included: a write that arrives meanwhile waits about as long.
const PurgeHold = 5 * time.Millisecond

// purgePace sizes the purge's batches: it starts small, doubles a batch
// while batches take less than half of PurgeHold, and scales it down to
// the rows that fit PurgeHold when one took longer (at least
// minPurgeBatch, at most PurgeBatch). A busy writer (the wait counts)
// slows the purge down; an idle one lets it run at full batches.
type purgePace struct{ size int }

// minPurgeBatch is the fewest rows a purge batch deletes, so that a purge
// ends however slow each row is.
const minPurgeBatch = 16

func newPurgePace() *purgePace { return &purgePace{size: 4 * minPurgeBatch} }

// took adjusts the next batch's size to how long the last one took.
func (p *purgePace) took(d time.Duration) {
	switch {
	case d > PurgeHold:
		p.size = max(minPurgeBatch, int(int64(p.size)*int64(PurgeHold)/int64(d)))
	case d < PurgeHold/2:
		p.size = min(PurgeBatch, 2*p.size)
	}
}

// purgeBatched is a retention rule of a growing table, deleted a batch
// at a time: the rows of table whose key is among the first $2 matching
// where (which takes the cutoff as $1), in order of order (an indexed
// column, so that each batch is a range scan from the oldest).
type purgeBatched struct {
	table, key, where, order string
	cutoff                   int64
}

func (r purgeBatched) pick() string {
	return `SELECT ` + r.key + ` FROM ` + r.table + ` WHERE ` + r.where + ` ORDER BY ` + r.order + ` LIMIT $2`
}

func (r purgeBatched) stmt() Stmt {
	return Stmt{"purge", `DELETE FROM ` + r.table + ` WHERE (` + r.key + `) IN (` + r.pick() + `)`, []any{r.cutoff}}
}

// Purge deletes what is past its retention, and what extra (the engine's
// own tables) says.
func (q *Queries) Purge(ctx context.Context, now time.Time) (int64, error) {
	return q.purge(ctx, now)
}

// purge deletes the growing tables' old rows in batches (at most
// PurgeBatch, paced by purgePace: a batch's statements take the cutoff as
// $1 and the batch's size as $2), each batch its own transaction
// (followed by a rest when writes wait: purgeRest), and
// then the small tables' rules (and extra) in one transaction. Events go
// with their jobs, a batch at a time, oldest first: a batch deletes the
// jobs of the events it deletes, so no batch rescans events whose jobs
// are gone.
func (q *Queries) purge(ctx context.Context, now time.Time, extra ...PurgeStmt) (int64, error) {
	events := MS(now.Add(-ams.EventRetention))
	oldEvents := purgeBatched{table: "events", key: "seq", where: "created_at < $1", order: "created_at", cutoff: events}
	jobs := Stmt{"purge", `DELETE FROM webhook_jobs WHERE event_id IN (SELECT id FROM events WHERE seq IN (` + oldEvents.pick() + `))`,
		[]any{events}}
	batched := [][]Stmt{
		{jobs, oldEvents.stmt()},
		{purgeBatched{table: "webhook_deliveries", key: "seq", where: "created_at < $1", order: "created_at", cutoff: events}.stmt()},
		// A turn's stream events are kept as long as the events (a turn
		// runs for minutes at most); the turn itself stays.
		{purgeBatched{table: "turn_events", key: "turn_id, seq", where: "created_at < $1", order: "created_at", cutoff: events}.stmt()},
		// Deleted calendar events are restorable as long as events are
		// kept (their event.deleted among them).
		{purgeBatched{table: "calendar_events", key: "seq", where: "deleted_at IS NOT NULL AND deleted_at < $1", order: "deleted_at", cutoff: events}.stmt()},
		{purgeBatched{table: "emails", key: "seq", where: "state != 'pending' AND created_at < $1", order: "seq", cutoff: events}.stmt()},
	}
	var total int64
	pace := newPurgePace()
	waiter, _ := q.s.eng.(WriteWaiter)
	for _, stmts := range batched {
		for {
			if err := ctx.Err(); err != nil {
				return total, err
			}
			size := pace.size
			sized := make([]Stmt, len(stmts))
			for i, st := range stmts {
				sized[i] = Stmt{st.Op, st.SQL, append(slices.Clip(st.Args), size)}
			}
			var n []int64
			var mark int64
			if waiter != nil {
				mark = waiter.WriteMark()
			}
			start := time.Now()
			err := q.inTx(ctx, func(q *Queries) error {
				var err error
				n, err = q.batch(ctx, sized)
				return err
			})
			if err != nil {
				return total, err
			}
			took := time.Since(start)
			pace.took(took)
			for _, k := range n {
				total += k
			}
			// The last statement deletes the batch's own rows: fewer
			// than a batch means the table has no more of age.
			if n[len(n)-1] < int64(size) {
				break
			}
			if err := purgeRest(ctx, waiter, mark, took); err != nil {
				return total, err
			}
		}
	}
	rules := append([]PurgeStmt{
		{`DELETE FROM idempotency_keys WHERE created_at < $1`, MS(now.Add(-ams.IdempotencyTTL))},
		{`DELETE FROM oauth_tokens WHERE expires_at < $1`, MS(now.Add(-24 * time.Hour))},
		// A client that registered itself (RFC 7591, of no account) and
		// holds no token a day after registering is gone (oauth/register.go).
		{`DELETE FROM oauth_clients WHERE user_id IS NULL AND created_at < $1
			AND NOT EXISTS (SELECT 1 FROM oauth_tokens t WHERE t.client_id = oauth_clients.id)`, MS(now.Add(-24 * time.Hour))},
		{`DELETE FROM login_sessions WHERE expires_at < $1`, MS(now)},
		{`DELETE FROM oauth_locks WHERE expires_at < $1`, MS(now)},
		{`DELETE FROM usage_minutes WHERE minute_start < $1`, MS(now.Add(-ams.UsageRetention))},
		// E-mailed links, used or not, once expired for as long as events
		// are kept (the caps on links look back a day at most).
		{`DELETE FROM account_tokens WHERE expires_at < $1`, events},
		// A replaced webhook secret is kept only for its overlap.
		{`UPDATE webhooks SET previous_secret_sealed = NULL, previous_secret_expires_at = NULL WHERE previous_secret_expires_at <= $1`, MS(now)},
	}, extra...)
	stmts := make([]Stmt, len(rules))
	for i, r := range rules {
		stmts[i] = Stmt{"purge", r.SQL, []any{r.Cutoff}}
	}
	err := q.inTx(ctx, func(q *Queries) error {
		n, err := q.batch(ctx, stmts)
		for _, k := range n {
			total += k
		}
		return err
	})
	return total, err
}

// purgeRest waits after a purge batch that took took, when other writes
// wanted the engine's one writer (w) since mark, taken before the batch:
// as long as the batch took, so that the purge holds the writer half of
// the time at most and the writes that arrive find it free the other
// half, instead of queued behind batch after batch (docs/benchmarks.md,
// issue 33). With no other writes (a quiet store), or no one writer (w
// nil: PostgreSQL's many writers), the purge goes on at once.
func purgeRest(ctx context.Context, w WriteWaiter, mark int64, took time.Duration) error {
	if w == nil || !w.WritesWaiting(mark) {
		return nil
	}
	rest := time.NewTimer(took)
	defer rest.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-rest.C:
		return nil
	}
}

// PurgeWith is Purge with the engine's own retention rules added.
func (s *Store) PurgeWith(ctx context.Context, now time.Time, extra ...PurgeStmt) (int64, error) {
	return s.purge(ctx, now, extra...)
}

// QueueStats reports the delivery queue for metrics: how many jobs are
// pending, and how long the oldest due one has waited at now.
func (q *Queries) QueueStats(ctx context.Context, now time.Time) (int64, time.Duration, error) {
	var n int64
	var oldest *int64
	err := q.r.QueryRow(ctx, `SELECT count(*), min(CASE WHEN next_at <= $1 THEN next_at END) FROM webhook_jobs WHERE state = 'pending'`,
		MS(now)).Scan(&n, &oldest)
	if err != nil {
		return 0, 0, q.fail("queue stats", err)
	}
	var age time.Duration
	if oldest != nil {
		age = now.Sub(FromMS(*oldest))
	}
	return n, age, nil
}

// OpenPreviousSecret sets j's previous secret from the columns an engine's
// claim read (previous_secret_sealed, previous_secret_expires_at; both
// NULL: none). The worker signs with it too at attempts before its expiry.
func (s *Store) OpenPreviousSecret(j *ams.Job, sealed *string, expires *int64) error {
	secret, at, err := s.openPrevious(j.WebhookID, sealed, expires)
	if err != nil || at == nil {
		return err
	}
	j.PreviousSecret, j.PreviousSecretExpiresAt = secret, *at
	return nil
}

// OpenClaimed opens a job an engine's claim leased (OpenJob, then
// OpenPreviousSecret), and sets its OpenErr if it cannot be opened: one
// job that cannot be opened does not keep the claim's others from their
// deliveries, and is not left to wait out its lease claim after claim.
func (s *Store) OpenClaimed(j *ams.Job, data []byte, sealed string, prevSealed *string, prevExpires *int64) {
	err := s.OpenJob(j, data, sealed)
	if err == nil {
		err = s.OpenPreviousSecret(j, prevSealed, prevExpires)
	}
	if err != nil {
		j.OpenErr = fmt.Errorf("open job %d: %w", j.Seq, err)
	}
}

// OpenJob finishes a job an engine's claim read: it decodes the event's
// data, thin when the job's webhook takes thin payloads (j.Payload), and
// unseals the webhook's secret.
func (s *Store) OpenJob(j *ams.Job, data []byte, sealed string) error {
	if err := decodeEventData(data, j.Event); err != nil {
		return err
	}
	if j.Payload == ams.PayloadThin {
		j.Event.Thin()
	}
	secret, err := s.sealer.Open(sealed, j.WebhookID)
	if err != nil {
		return fmt.Errorf("webhook %s: %w", j.WebhookID, err)
	}
	j.Secret = secret
	return nil
}
