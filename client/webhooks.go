package client

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// This file covers webhook management: the webhooks themselves, their
// delivery attempts, redelivery, recovery of missed events and pings.
// Package github.com/amsdev/ams/client/webhook verifies the deliveries a
// receiver gets.

// EventTypeAll, alone in a webhook's Events, subscribes it to every event
// type, present and future (a list holding it is stored as ["*"]). It
// never subscribes to another webhook's pings.
const EventTypeAll = "*"

// Webhook statuses.
const (
	WebhookStatusActive  = "active"  // deliveries succeed, or have not failed for good
	WebhookStatusFailing = "failing" // the last attempt of a delivery failed; Active is false
)

// Webhook is an HTTPS endpoint that receives the account's events. Its
// secret is never returned.
type Webhook struct {
	ID     string   `json:"id"`     // "wh_..."
	Object string   `json:"object"` // "webhook"
	URL    string   `json:"url"`
	Events []string `json:"events"` // event types such as "message.created", or ["*"] (EventTypeAll)
	// Active says whether events are queued and delivered: false when
	// turned off, or when the webhook was marked failing.
	Active bool   `json:"active"`
	Status string `json:"status"` // WebhookStatusActive or WebhookStatusFailing
	// PreviousSecretExpiresAt is when the secret replaced by the last
	// rotation stops signing webhook-signature beside the new one; nil
	// when no previous secret signs.
	PreviousSecretExpiresAt *time.Time `json:"previous_secret_expires_at"`
	Metadata                Metadata   `json:"metadata"`
	// Ordered webhooks get one delivery at a time, in the order the
	// deliveries were queued (the event log's, except between changes
	// made at the same time: see the README): an event whose delivery
	// fails holds the ones behind it until it succeeds or exhausts its
	// attempts.
	Ordered bool `json:"ordered"`
	// Filter selects the events of its types the webhook receives:
	// "assistant_id", "conversation_id" and "metadata.<key>", each
	// equal to the event's; empty: all.
	Filter map[string]string `json:"filter"`
	// Payload is WebhookPayloadFull (the record) or WebhookPayloadThin
	// (its ids only).
	Payload string `json:"payload"`
	// Summary is the webhook's attempts of the last 24 hours; set by
	// GetWebhook only (nil in lists and in the answers of changes).
	Summary   *WebhookSummary `json:"summary"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// Webhook payloads: what a delivery's data holds.
const (
	WebhookPayloadFull = "full" // the record, as ListEvents shows it
	WebhookPayloadThin = "thin" // its ids only: id, object and the *_id fields
)

// Filter keys of Webhook.Filter; FilterMetadata("team") is
// "metadata.team".
const (
	FilterAssistantID    = "assistant_id"
	FilterConversationID = "conversation_id"
)

// FilterMetadata returns the filter key of the metadata key k.
func FilterMetadata(k string) string { return "metadata." + k }

// WebhookSummary is a webhook's delivery attempts of the last WindowHours.
type WebhookSummary struct {
	WindowHours int   `json:"window_hours"` // 24
	Attempts    int64 `json:"attempts"`
	Succeeded   int64 `json:"succeeded"`
	// SuccessRate is Succeeded/Attempts (4 places); nil without attempts.
	SuccessRate *float64 `json:"success_rate"`
	// P95DurationMS is the 95th percentile of the attempts' durations;
	// nil without attempts.
	P95DurationMS *int64 `json:"p95_duration_ms"`
}

// WebhookDelivery is one attempt to deliver an event to a webhook (first
// try, retry or redelivery).
type WebhookDelivery struct {
	ID        string `json:"id"`     // "dlv_..."
	Object    string `json:"object"` // "webhook_delivery"
	WebhookID string `json:"webhook_id"`
	EventID   string `json:"event_id"`
	EventType string `json:"event_type"`
	Attempt   int    `json:"attempt"` // 1 for the first try, counting again from 1 after a redelivery
	URL       string `json:"url"`
	Success   bool   `json:"success"`
	// StatusCode is the receiver's HTTP status; nil when it gave none
	// (connection failed, timeout).
	StatusCode   *int      `json:"status_code"`
	DurationMS   int64     `json:"duration_ms"`
	Error        *string   `json:"error"`         // why the attempt failed; nil on success
	ResponseBody string    `json:"response_body"` // the first 1,024 bytes of the answer
	CreatedAt    time.Time `json:"created_at"`
}

// WebhookRecovery is what RecoverWebhook queued.
type WebhookRecovery struct {
	Object    string    `json:"object"` // "webhook_recovery"
	WebhookID string    `json:"webhook_id"`
	Since     time.Time `json:"since"`
	Until     time.Time `json:"until"`
	Queued    int       `json:"queued"` // how many events were queued for delivery
}

// WebhookRedelivery is the answer of RedeliverWebhookDelivery: the event
// is queued for the webhook again.
type WebhookRedelivery struct {
	Object     string `json:"object"` // "webhook_redelivery"
	WebhookID  string `json:"webhook_id"`
	EventID    string `json:"event_id"`    // unchanged: a receiver can tell it got the event before
	DeliveryID string `json:"delivery_id"` // the attempt named in the call; new attempts get new ids
	Status     string `json:"status"`      // "queued"
}

// CreateWebhookParams is a webhook to create.
type CreateWebhookParams struct {
	// URL is where events are POSTed (required): https, and not a private
	// or internal address unless the server runs in development mode.
	URL string
	// Events are the event types to deliver (required, at least one),
	// such as "message.created", or EventTypeAll.
	Events []string
	// Secret signs every delivery (required, 16 to 256 characters). It is
	// never returned: keep it for webhook.Verify. A "whsec_<base64>"
	// secret is decoded for the Standard Webhooks signature, so that the
	// Standard Webhooks libraries verify deliveries too.
	Secret string
	// Active false creates the webhook turned off; nil means on.
	Active   *bool
	Metadata Metadata
	// Ordered creates an ordered webhook (Webhook.Ordered).
	Ordered bool
	// Filter selects the events it receives (Webhook.Filter); nil: all.
	Filter map[string]string
	// Payload is WebhookPayloadFull (the default, "") or WebhookPayloadThin.
	Payload string
	// IdempotencyKey is sent as the Idempotency-Key header; empty lets the
	// client generate one.
	IdempotencyKey string
}

// UpdateWebhookParams are the fields of a webhook to change; nil fields
// are kept.
type UpdateWebhookParams struct {
	URL *string
	// Events, when not nil, replaces the webhook's event types.
	Events []string
	// Secret rotates the signing secret: deliveries sent from now on are
	// signed with it, and the replaced secret keeps signing
	// webhook-signature beside it for PreviousSecretExpiresIn.
	Secret *string
	// Active true turns the webhook on and clears a failing status; false
	// turns it off and cancels its pending deliveries.
	Active *bool
	// PreviousSecretExpiresIn is, with Secret, how long the replaced
	// secret keeps signing (0 to 7 days in whole seconds; nil: 24 hours;
	// 0: cut over at once). Without Secret it sets, counted from now, when
	// the current previous secret stops signing.
	PreviousSecretExpiresIn *time.Duration
	Metadata                MetadataUpdate // merged into the webhook's
	// Ordered, when set, makes the webhook ordered or not
	// (Webhook.Ordered).
	Ordered *bool
	// Filter, when not nil, replaces the webhook's filter (an empty map
	// removes it).
	Filter map[string]string
	// Payload, when set, replaces its payload.
	Payload *string
}

// ListWebhookDeliveriesParams select one page of a webhook's delivery
// attempts.
type ListWebhookDeliveriesParams struct {
	ListParams
	EventID string // only the attempts to deliver this event ("evt_...")
	// Success, when set, selects the successful (true) or failed (false)
	// attempts only.
	Success *bool
}

func (p *ListWebhookDeliveriesParams) query() url.Values {
	if p == nil {
		return url.Values{}
	}
	q := p.ListParams.query()
	setQuery(q, "event_id", p.EventID)
	if p.Success != nil {
		q.Set("success", strconv.FormatBool(*p.Success))
	}
	return q
}

// RecoverWebhookParams is the range of events RecoverWebhook queues
// again: created at or after Since and before Until.
type RecoverWebhookParams struct {
	Since time.Time  // required; not in the future (older than 30 days: from 30 days ago)
	Until *time.Time // nil: now
	// IncludeEarlier also queues the events from before the webhook was
	// created; without it Since is clamped to the webhook's creation.
	IncludeEarlier bool
	// IdempotencyKey is sent as the Idempotency-Key header; empty lets the
	// client generate one.
	IdempotencyKey string
}

// CreateWebhook creates a webhook (createWebhook, POST /v1/webhooks;
// permission write). From then on the account's events of the types in
// p.Events are POSTed to p.URL, signed with p.Secret.
func (c *Client) CreateWebhook(ctx context.Context, p CreateWebhookParams) (*Webhook, error) {
	body := map[string]any{"url": p.URL, "events": p.Events, "secret": p.Secret}
	if p.Active != nil {
		body["active"] = *p.Active
	}
	if p.Ordered {
		body["ordered"] = true
	}
	setMetadata(body, p.Metadata)
	if p.Filter != nil {
		body["filter"] = p.Filter
	}
	if p.Payload != "" {
		body["payload"] = p.Payload
	}
	return post[Webhook](ctx, c, "/webhooks", body, p.IdempotencyKey)
}

// ListWebhooks returns one page of the account's webhooks (listWebhooks,
// GET /v1/webhooks; permission read).
func (c *Client) ListWebhooks(ctx context.Context, p *ListParams) (*List[Webhook], error) {
	return get[List[Webhook]](ctx, c, "/webhooks", p.query())
}

// AllWebhooks iterates over the webhooks from the page p selects on,
// fetching pages as needed; see Paginate.
func (c *Client) AllWebhooks(ctx context.Context, p *ListParams) iter.Seq2[Webhook, error] {
	return Paginate(ctx, p, c.ListWebhooks)
}

// GetWebhook returns the webhook with id (getWebhook, GET
// /v1/webhooks/{id}; permission read).
func (c *Client) GetWebhook(ctx context.Context, id string) (*Webhook, error) {
	return getByID[Webhook](ctx, c, "/webhooks", id)
}

// UpdateWebhook changes the fields p sets of the webhook with id
// (updateWebhook, PATCH /v1/webhooks/{id}; permission write). Turning a
// webhook back on does not queue the events it missed: RecoverWebhook
// does.
func (c *Client) UpdateWebhook(ctx context.Context, id string, p UpdateWebhookParams) (*Webhook, error) {
	body := map[string]any{}
	setString(body, "url", p.URL)
	if p.Events != nil {
		body["events"] = p.Events
	}
	setString(body, "secret", p.Secret)
	if p.Active != nil {
		body["active"] = *p.Active
	}
	if p.PreviousSecretExpiresIn != nil {
		body["previous_secret_expires_in"] = int64(*p.PreviousSecretExpiresIn / time.Second)
	}
	if p.Ordered != nil {
		body["ordered"] = *p.Ordered
	}
	setMetadataUpdate(body, p.Metadata)
	if p.Filter != nil {
		body["filter"] = p.Filter
	}
	setString(body, "payload", p.Payload)
	return patch[Webhook](ctx, c, "/webhooks", id, body)
}

// DeleteWebhook deletes the webhook with id and cancels its pending
// deliveries (deleteWebhook, DELETE /v1/webhooks/{id}; permission write).
func (c *Client) DeleteWebhook(ctx context.Context, id string) error {
	return del(ctx, c, "/webhooks", id)
}

// PingWebhook sends the webhook with id a test event of type
// "webhook.ping" and returns that event, queued for delivery (pingWebhook,
// POST /v1/webhooks/{id}/ping; permission write). Follow its delivery with
// ListWebhookDeliveries and EventID set to the event's ID. The webhook
// must be active (else 409 webhook_inactive).
func (c *Client) PingWebhook(ctx context.Context, id string) (*Event, error) {
	return postAction[Event](ctx, c, "/webhooks", id, "/ping", nil, "")
}

// RecoverWebhook queues again for the webhook with id every event of the
// range p names that it subscribes to and has not received (recoverWebhook,
// POST /v1/webhooks/{id}/recover; permission write), oldest first.
// Recovering the same range again queues only what is still missing. The
// webhook must be active (else 409 webhook_inactive).
func (c *Client) RecoverWebhook(ctx context.Context, id string, p RecoverWebhookParams) (*WebhookRecovery, error) {
	body := map[string]any{"since": formatTime(p.Since)}
	setTime(body, "until", p.Until, false)
	if p.IncludeEarlier {
		body["include_earlier"] = true
	}
	return postAction[WebhookRecovery](ctx, c, "/webhooks", id, "/recover", body, p.IdempotencyKey)
}

// ListWebhookDeliveries returns one page of the delivery attempts of the
// webhook with id, newest first by default (listWebhookDeliveries, GET
// /v1/webhooks/{id}/deliveries; permission read).
func (c *Client) ListWebhookDeliveries(ctx context.Context, webhookID string, p *ListWebhookDeliveriesParams) (*List[WebhookDelivery], error) {
	if webhookID == "" {
		return nil, fmt.Errorf("ams: GET /webhooks/{id}/deliveries: %w", errEmptyID)
	}
	return get[List[WebhookDelivery]](ctx, c, "/webhooks/"+url.PathEscape(webhookID)+"/deliveries", p.query())
}

// AllWebhookDeliveries iterates over the webhook's delivery attempts from
// the page p selects on, fetching pages as needed; see Paginate.
func (c *Client) AllWebhookDeliveries(ctx context.Context, webhookID string, p *ListWebhookDeliveriesParams) iter.Seq2[WebhookDelivery, error] {
	var params ListWebhookDeliveriesParams
	if p != nil {
		params = *p
	}
	return Paginate(ctx, &params.ListParams, func(ctx context.Context, lp *ListParams) (*List[WebhookDelivery], error) {
		q := params
		q.ListParams = *lp
		return c.ListWebhookDeliveries(ctx, webhookID, &q)
	})
}

// RedeliverWebhookDelivery queues the event of the delivery attempt
// deliveryID again for the webhook webhookID, as a new delivery starting
// over at attempt 1 (redeliverWebhookDelivery, POST
// /v1/webhooks/{id}/deliveries/{delivery_id}/redeliver; permission write).
// The event keeps its id. The webhook must be active and the event still
// kept (30 days), else 409 webhook_inactive or event_expired.
func (c *Client) RedeliverWebhookDelivery(ctx context.Context, webhookID, deliveryID string) (*WebhookRedelivery, error) {
	if deliveryID == "" {
		return nil, fmt.Errorf("ams: POST /webhooks/{id}/deliveries/{delivery_id}/redeliver: %w", errEmptyID)
	}
	return postAction[WebhookRedelivery](ctx, c, "/webhooks", webhookID, "/deliveries/"+url.PathEscape(deliveryID)+"/redeliver", nil, "")
}

// postAction POSTs body (nil: none) to prefix/id+suffix, an operation on
// one record, with an idempotency key (generated when key is empty), and
// decodes the answer into a new T.
func postAction[T any](ctx context.Context, c *Client, prefix, id, suffix string, body any, key string) (*T, error) {
	if id == "" {
		return nil, fmt.Errorf("ams: POST %s/{id}%s: %w", prefix, suffix, errEmptyID)
	}
	out := new(T)
	if err := c.Request(ctx, http.MethodPost, prefix+"/"+url.PathEscape(id)+suffix, body, out, WithIdempotencyKey(key)); err != nil {
		return nil, err
	}
	return out, nil
}
