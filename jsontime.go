package ams

import (
	"encoding/json"
	"time"
)

// TimeFormat is how the API writes every timestamp: RFC 3339 in UTC with
// exactly three decimals ("2026-11-24T18:30:00.120Z"), the millisecond
// precision every stored time has. Go's time.Time alone would drop
// trailing zeros ("…:00.12Z", "…:00Z").
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// FormatTime formats t as the API does (TimeFormat, in UTC).
func FormatTime(t time.Time) string { return t.UTC().Format(TimeFormat) }

// JSONTime is a time.Time that encodes as TimeFormat. Records shadow their
// time fields with it in their MarshalJSON (only for encoding: they decode
// into time.Time, which accepts any RFC 3339 time).
type JSONTime time.Time

// MarshalJSON implements json.Marshaler.
func (t JSONTime) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, len(TimeFormat)+2)
	b = append(b, '"')
	b = time.Time(t).UTC().AppendFormat(b, TimeFormat)
	return append(b, '"'), nil
}

// jsonTimePtr returns p as a *JSONTime (nil stays nil and encodes as null).
func jsonTimePtr(p *time.Time) *JSONTime {
	if p == nil {
		return nil
	}
	t := JSONTime(*p)
	return &t
}

// The records' encoders. Each embeds the record under a type without
// methods and shadows its time fields (the outer field of the same JSON
// name wins), so every other field keeps its tag.

// MarshalJSON implements json.Marshaler (timestamps as TimeFormat).
func (a Assistant) MarshalJSON() ([]byte, error) {
	type plain Assistant
	return json.Marshal(struct {
		plain
		CreatedAt JSONTime `json:"created_at"`
		UpdatedAt JSONTime `json:"updated_at"`
	}{plain(a), JSONTime(a.CreatedAt), JSONTime(a.UpdatedAt)})
}

// MarshalJSON implements json.Marshaler (timestamps as TimeFormat).
func (c Conversation) MarshalJSON() ([]byte, error) {
	type plain Conversation
	return json.Marshal(struct {
		plain
		LastMessageAt JSONTime `json:"last_message_at"`
		CreatedAt     JSONTime `json:"created_at"`
		UpdatedAt     JSONTime `json:"updated_at"`
	}{plain(c), JSONTime(c.LastMessageAt), JSONTime(c.CreatedAt), JSONTime(c.UpdatedAt)})
}

// MarshalJSON implements json.Marshaler (timestamps as TimeFormat).
func (m Message) MarshalJSON() ([]byte, error) {
	type plain Message
	return json.Marshal(struct {
		plain
		CreatedAt JSONTime `json:"created_at"`
		UpdatedAt JSONTime `json:"updated_at"`
	}{plain(m), JSONTime(m.CreatedAt), JSONTime(m.UpdatedAt)})
}

// MarshalJSON implements json.Marshaler (timestamps as TimeFormat).
func (t Task) MarshalJSON() ([]byte, error) {
	type plain Task
	return json.Marshal(struct {
		plain
		DueAt       *JSONTime `json:"due_at"`
		RemindAt    *JSONTime `json:"remind_at"`
		CompletedAt *JSONTime `json:"completed_at"`
		CreatedAt   JSONTime  `json:"created_at"`
		UpdatedAt   JSONTime  `json:"updated_at"`
	}{plain(t), jsonTimePtr(t.DueAt), jsonTimePtr(t.RemindAt), jsonTimePtr(t.CompletedAt), JSONTime(t.CreatedAt), JSONTime(t.UpdatedAt)})
}

// MarshalJSON implements json.Marshaler (timestamps as TimeFormat).
func (e CalendarEvent) MarshalJSON() ([]byte, error) {
	type plain CalendarEvent
	return json.Marshal(struct {
		plain
		StartsAt  JSONTime  `json:"starts_at"`
		EndsAt    JSONTime  `json:"ends_at"`
		RemindAt  *JSONTime `json:"remind_at"`
		CreatedAt JSONTime  `json:"created_at"`
		UpdatedAt JSONTime  `json:"updated_at"`
	}{plain(e), JSONTime(e.StartsAt), JSONTime(e.EndsAt), jsonTimePtr(e.RemindAt), JSONTime(e.CreatedAt), JSONTime(e.UpdatedAt)})
}

// MarshalJSON implements json.Marshaler (timestamps as TimeFormat).
func (a Action) MarshalJSON() ([]byte, error) {
	type plain Action
	return json.Marshal(struct {
		plain
		CreatedAt JSONTime `json:"created_at"`
	}{plain(a), JSONTime(a.CreatedAt)})
}

// MarshalJSON implements json.Marshaler (timestamps as TimeFormat).
func (k APIKey) MarshalJSON() ([]byte, error) {
	type plain APIKey
	return json.Marshal(struct {
		plain
		CreatedAt  JSONTime  `json:"created_at"`
		LastUsedAt *JSONTime `json:"last_used_at"`
		ExpiresAt  *JSONTime `json:"expires_at"`
		RevokedAt  *JSONTime `json:"revoked_at"`
	}{plain(k), JSONTime(k.CreatedAt), jsonTimePtr(k.LastUsedAt), jsonTimePtr(k.ExpiresAt), jsonTimePtr(k.RevokedAt)})
}

// MarshalJSON implements json.Marshaler (timestamps as TimeFormat).
func (c OAuthClient) MarshalJSON() ([]byte, error) {
	type plain OAuthClient
	return json.Marshal(struct {
		plain
		CreatedAt JSONTime `json:"created_at"`
		UpdatedAt JSONTime `json:"updated_at"`
	}{plain(c), JSONTime(c.CreatedAt), JSONTime(c.UpdatedAt)})
}

// MarshalJSON implements json.Marshaler (timestamps as TimeFormat).
func (u User) MarshalJSON() ([]byte, error) {
	type plain User
	return json.Marshal(struct {
		plain
		CreatedAt  JSONTime  `json:"created_at"`
		UpdatedAt  JSONTime  `json:"updated_at"`
		ApprovedAt *JSONTime `json:"approved_at"`
	}{plain(u), JSONTime(u.CreatedAt), JSONTime(u.UpdatedAt), jsonTimePtr(u.ApprovedAt)})
}

// MarshalJSON implements json.Marshaler (timestamps as TimeFormat).
func (e Event) MarshalJSON() ([]byte, error) {
	type plain Event
	return json.Marshal(struct {
		plain
		CreatedAt JSONTime `json:"created_at"`
	}{plain(e), JSONTime(e.CreatedAt)})
}

// MarshalJSON implements json.Marshaler (timestamps as TimeFormat).
func (w Webhook) MarshalJSON() ([]byte, error) {
	type plain Webhook
	return json.Marshal(struct {
		plain
		PreviousSecretExpiresAt *JSONTime `json:"previous_secret_expires_at"`
		CreatedAt               JSONTime  `json:"created_at"`
		UpdatedAt               JSONTime  `json:"updated_at"`
	}{plain(w), jsonTimePtr(w.PreviousSecretExpiresAt), JSONTime(w.CreatedAt), JSONTime(w.UpdatedAt)})
}

// MarshalJSON implements json.Marshaler (timestamps as TimeFormat).
func (d Delivery) MarshalJSON() ([]byte, error) {
	type plain Delivery
	return json.Marshal(struct {
		plain
		CreatedAt JSONTime `json:"created_at"`
	}{plain(d), JSONTime(d.CreatedAt)})
}

// MarshalJSON implements json.Marshaler (timestamps as TimeFormat).
func (in Integration) MarshalJSON() ([]byte, error) {
	type plain Integration
	return json.Marshal(struct {
		plain
		ConnectedAt JSONTime `json:"connected_at"`
		CreatedAt   JSONTime `json:"created_at"`
		UpdatedAt   JSONTime `json:"updated_at"`
	}{plain(in), JSONTime(in.ConnectedAt), JSONTime(in.CreatedAt), JSONTime(in.UpdatedAt)})
}

// MarshalJSON implements json.Marshaler (timestamps as TimeFormat).
func (k APIKeyRecord) MarshalJSON() ([]byte, error) {
	type plain APIKeyRecord
	return json.Marshal(struct {
		plain
		CreatedAt  JSONTime  `json:"created_at"`
		LastUsedAt *JSONTime `json:"last_used_at"`
		ExpiresAt  *JSONTime `json:"expires_at"`
		RevokedAt  *JSONTime `json:"revoked_at"`
	}{plain(k), JSONTime(k.CreatedAt), jsonTimePtr(k.LastUsedAt), jsonTimePtr(k.ExpiresAt), jsonTimePtr(k.RevokedAt)})
}

// MarshalJSON implements json.Marshaler (timestamps as TimeFormat).
func (a Account) MarshalJSON() ([]byte, error) {
	type plain Account
	return json.Marshal(struct {
		plain
		CreatedAt JSONTime `json:"created_at"`
		UpdatedAt JSONTime `json:"updated_at"`
	}{plain(a), JSONTime(a.CreatedAt), JSONTime(a.UpdatedAt)})
}

// MarshalJSON implements json.Marshaler (timestamps as TimeFormat).
func (t Turn) MarshalJSON() ([]byte, error) {
	type plain Turn
	return json.Marshal(struct {
		plain
		CreatedAt   JSONTime  `json:"created_at"`
		UpdatedAt   JSONTime  `json:"updated_at"`
		CompletedAt *JSONTime `json:"completed_at"`
	}{plain(t), JSONTime(t.CreatedAt), JSONTime(t.UpdatedAt), jsonTimePtr(t.CompletedAt)})
}
