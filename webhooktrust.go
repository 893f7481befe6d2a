package ams

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"time"
)

// Events a receiver can trust (DESIGN.md): a webhook's early warning
// (webhook.degraded, webhook.recovered), its filter and its payload.

// Early-warning event types, additions beyond the interface's 13: emitted,
// with an e-mail to the owner, in the transaction that records the attempt
// that changed the webhook's health. Only webhooks that subscribe to them
// (or to "*") receive them.
const (
	// EventWebhookDegraded: a webhook's deliveries failed
	// WebhookDegradedAfter times in a row (the webhook stays active).
	EventWebhookDegraded = "webhook.degraded"
	// EventWebhookRecovered: a degraded webhook's delivery succeeded.
	EventWebhookRecovered = "webhook.recovered"
)

// WebhookDegradedAfter is how many failed attempts in a row, to one
// webhook and whatever their events, make it degraded.
const WebhookDegradedAfter = 3

// WebhookHealthEvent returns a webhook.degraded or webhook.recovered
// event (typ) of webhook webhookID of userID at url: the last attempt's
// status code (nil without an answer) and error (nil for a success), and
// failed, the failed attempts in a row (for webhook.recovered: before
// this success).
func WebhookHealthEvent(typ, userID, webhookID, url string, statusCode *int, errText *string, failed int, at time.Time) *Event {
	var code, e any
	if statusCode != nil {
		code = *statusCode
	}
	if errText != nil {
		e = *errText
	}
	return &Event{ID: NewID(PrefixEvent), Object: "event", UserID: userID, Type: typ, CreatedAt: at,
		Data: map[string]any{"webhook_id": webhookID, "url": url, "status_code": code, "error": e, "failed_attempts": failed}}
}

// WebhookNotices writes the e-mails that tell an account's owner of a
// change of a webhook's health (package mail's WebhookNotices).
type WebhookNotices interface {
	// HealthEmail returns the e-mail telling u of e, a webhook.degraded
	// or webhook.recovered event; nil: none.
	HealthEmail(u *User, e *Event) *Email
}

// EmailWebhookHealth tells that a webhook is degraded or has recovered.
const EmailWebhookHealth EmailKind = "webhook_health"

// Webhook payloads: what a delivery's data holds.
const (
	PayloadFull = "full" // the record, as GET /v1/events shows it
	PayloadThin = "thin" // its ids only (ThinData)
)

// ThinData returns the ids of an event's data, what a webhook whose
// payload is "thin" receives: id and object, and every other field named
// *_id (assistant_id, conversation_id, message_id, webhook_id, ...) whose
// value is a string.
func ThinData(data map[string]any) map[string]any {
	out := make(map[string]any, 4)
	for k, v := range data {
		s, ok := v.(string)
		if ok && (k == "id" || k == "object" || strings.HasSuffix(k, "_id")) {
			out[k] = s
		}
	}
	return out
}

// Thin makes e a thin event: its data reduced to ThinData, without
// previous_attributes.
func (e *Event) Thin() {
	e.Data = ThinData(e.Data)
	e.PreviousAttributes = nil
}

// WebhookFilter selects, among the events of the types a webhook
// subscribes to, those it receives: every field set must equal the
// event's (an event without that field does not match). Zero: all. It
// encodes as a flat JSON object: "assistant_id", "conversation_id" and
// "metadata.<key>".
type WebhookFilter struct {
	AssistantID    string
	ConversationID string
	Metadata       map[string]string
}

// IsZero reports whether f selects every event.
func (f WebhookFilter) IsZero() bool {
	return f.AssistantID == "" && f.ConversationID == "" && len(f.Metadata) == 0
}

// Filter keys beside metadata.<key>.
const (
	FilterAssistantID    = "assistant_id"
	FilterConversationID = "conversation_id"
	FilterMetadataPrefix = "metadata."
)

// MaxFilterMetadata is how many metadata pairs a filter may name.
const MaxFilterMetadata = 10

// MarshalJSON implements json.Marshaler: the flat object, {} when zero.
func (f WebhookFilter) MarshalJSON() ([]byte, error) {
	m := make(map[string]string, 2+len(f.Metadata))
	if f.AssistantID != "" {
		m[FilterAssistantID] = f.AssistantID
	}
	if f.ConversationID != "" {
		m[FilterConversationID] = f.ConversationID
	}
	for k, v := range f.Metadata {
		m[FilterMetadataPrefix+k] = v
	}
	return json.Marshal(m)
}

// ParseWebhookFilter reads a filter from its JSON object (null or {}:
// none). Each error is EINVALID naming its parameter: "filter" when raw
// is not an object, else "filter.<key>" for an unknown key, a value that
// is not a string, an id of the wrong kind, or a metadata key or value
// out of bounds.
func ParseWebhookFilter(raw []byte) (WebhookFilter, error) {
	var f WebhookFilter
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return f, nil
	}
	var m map[string]json.RawMessage
	if raw[0] != '{' || json.Unmarshal(raw, &m) != nil {
		return f, ParamError("parameter_invalid", "filter", "'filter' must be an object such as {\"assistant_id\": \"ast_...\", \"metadata.team\": \"billing\"}.")
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		param := "filter." + Clip(k)
		var v string
		if err := json.Unmarshal(m[k], &v); err != nil {
			return f, ParamError("parameter_invalid", param, "'%s' must be a string: events match when their value equals it.", param)
		}
		switch {
		case k == FilterAssistantID:
			if !HasPrefixID(v, PrefixAssistant) {
				return f, ParamError("parameter_invalid", param, "'%s' must be an assistant id (%s...).", param, PrefixAssistant)
			}
			f.AssistantID = v
		case k == FilterConversationID:
			if !HasPrefixID(v, PrefixConversation) {
				return f, ParamError("parameter_invalid", param, "'%s' must be a conversation id (%s...).", param, PrefixConversation)
			}
			f.ConversationID = v
		case strings.HasPrefix(k, FilterMetadataPrefix):
			key := strings.TrimPrefix(k, FilterMetadataPrefix)
			if n := len([]rune(key)); n < 1 || n > MaxMetadataKeyLen {
				return f, ParamError("parameter_invalid", param, "A metadata key of a filter has 1 to %d characters.", MaxMetadataKeyLen)
			}
			if n := len([]rune(v)); n < 1 || n > MaxMetadataValueLen {
				return f, ParamError("parameter_invalid", param, "'%s' must have 1 to %d characters.", param, MaxMetadataValueLen)
			}
			if f.Metadata == nil {
				f.Metadata = map[string]string{}
			}
			if len(f.Metadata) == MaxFilterMetadata {
				return f, ParamError("parameter_invalid", param, "A filter names at most %d metadata keys.", MaxFilterMetadata)
			}
			f.Metadata[key] = v
		default:
			return f, ParamError("parameter_invalid", param,
				"Unknown filter field '%s': a webhook filters on %s, %s and %s<key> (equal values).", Clip(k), FilterAssistantID, FilterConversationID, FilterMetadataPrefix)
		}
	}
	return f, nil
}

// Facets returns what a webhook's filter compares in e: its record's
// assistant and conversation ("" when it has none; an assistant's and a
// conversation's own events name themselves) and its record's metadata
// (nil when it has none).
func (e *Event) Facets() (assistantID, conversationID string, metadata map[string]any) {
	d := e.Data
	assistantID, _ = d["assistant_id"].(string)
	conversationID, _ = d["conversation_id"].(string)
	switch d["object"] {
	case "assistant":
		assistantID, _ = d["id"].(string)
	case "conversation":
		conversationID, _ = d["id"].(string)
	}
	switch m := d["metadata"].(type) {
	case map[string]any:
		metadata = m
	case Metadata:
		metadata = make(map[string]any, len(m))
		for k, v := range m {
			metadata[k] = v
		}
	}
	return assistantID, conversationID, metadata
}

// Matches reports whether f selects e.
func (f WebhookFilter) Matches(e *Event) bool {
	if f.IsZero() {
		return true
	}
	a, c, md := e.Facets()
	if f.AssistantID != "" && f.AssistantID != a {
		return false
	}
	if f.ConversationID != "" && f.ConversationID != c {
		return false
	}
	for k, v := range f.Metadata {
		if got, ok := md[k].(string); !ok || got != v {
			return false
		}
	}
	return true
}

// WebhookSummary is a webhook's delivery attempts over the last
// SummaryWindow: how many, the share that succeeded and the 95th
// percentile of their durations (nil without attempts).
type WebhookSummary struct {
	WindowHours   int      `json:"window_hours"`
	Attempts      int64    `json:"attempts"`
	Succeeded     int64    `json:"succeeded"`
	SuccessRate   *float64 `json:"success_rate"`
	P95DurationMS *int64   `json:"p95_duration_ms"`
}

// SummaryWindow is the period of a WebhookSummary.
const SummaryWindow = 24 * time.Hour
