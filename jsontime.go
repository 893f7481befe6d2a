package ams

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"
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
	return AppendJSONTime(make([]byte, 0, len(TimeFormat)+2), time.Time(t)), nil
}

// jsonTimePtr returns p as a *JSONTime (nil stays nil and encodes as null).
// nonEmpty is s, or nil (null) when s is "".
func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

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
	// The turn defaults read [] and "enqueue" when unset (a record made
	// before they existed, or in a test).
	if a.Tools == nil {
		a.Tools = []*ClientTool{}
	}
	if a.RequireApproval == nil {
		a.RequireApproval = []string{}
	}
	if a.MultitaskStrategy == "" {
		a.MultitaskStrategy = MultitaskEnqueue
	}
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

// MarshalJSON implements json.Marshaler (timestamps as TimeFormat). A
// message is what GET /v1/messages/{id} and the lists of messages answer,
// so it is written out by hand rather than by reflection; the bytes are
// those json.Marshal writes for the other records (fields in declaration
// order, the timestamps last; strings escaped as json.Marshal escapes
// them, HTML characters included), which TestMessageJSONAsReflection
// checks.
func (m Message) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 256+len(m.Content)+len(m.ID)+len(m.AssistantID)+len(m.ConversationID))
	b = append(b, `{"id":`...)
	b = appendJSONString(b, m.ID)
	b = append(b, `,"object":`...)
	b = appendJSONString(b, m.Object)
	b = append(b, `,"assistant_id":`...)
	b = appendJSONString(b, m.AssistantID)
	b = append(b, `,"conversation_id":`...)
	b = appendJSONString(b, m.ConversationID)
	b = append(b, `,"direction":`...)
	b = appendJSONString(b, m.Direction)
	b = append(b, `,"content":`...)
	b = appendJSONString(b, m.Content)
	b = append(b, `,"metadata":`...)
	b = appendMetadata(b, m.Metadata)
	b = append(b, `,"created_at":"`...)
	b = appendTime(b, m.CreatedAt)
	b = append(b, `","updated_at":"`...)
	b = appendTime(b, m.UpdatedAt)
	return append(b, `"}`...), nil
}

// appendMetadata appends m as Metadata.MarshalJSON writes it: {} when
// empty, else the pairs by key.
func appendMetadata(b []byte, m Metadata) []byte {
	if len(m) == 0 {
		return append(b, '{', '}')
	}
	b = append(b, '{')
	for i, k := range sortedKeys(m) {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, k)
		b = append(b, ':')
		b = appendJSONString(b, m[k])
	}
	return append(b, '}')
}

// jsonSafe tells the ASCII bytes that appendJSONString copies as they are.
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// appendTime appends t as TimeFormat in UTC, as t.UTC().AppendFormat(b,
// TimeFormat) does, without reading the layout each time.
func appendTime(b []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(b, TimeFormat)
	}
	hour, min, sec := t.Clock()
	ms := t.Nanosecond() / 1e6
	return append(b,
		byte('0'+year/1000), byte('0'+year/100%10), byte('0'+year/10%10), byte('0'+year%10), '-',
		byte('0'+month/10), byte('0'+month%10), '-', byte('0'+day/10), byte('0'+day%10), 'T',
		byte('0'+hour/10), byte('0'+hour%10), ':', byte('0'+min/10), byte('0'+min%10), ':',
		byte('0'+sec/10), byte('0'+sec%10), '.', byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z')
}

// appendJSONString appends s as a JSON string, escaped as json.Marshal
// escapes it: quote, backslash and control characters (\b \f \n \r \t
// short), <, > and & as \u00XX, U+2028 and U+2029 as \u202X, and each
// byte of invalid UTF-8 as \ufffd.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if jsonSafe[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
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
		DeletedAt *JSONTime `json:"deleted_at"`
		DeletedBy *string   `json:"deleted_by"` // null for a live event
	}{plain(e), JSONTime(e.StartsAt), JSONTime(e.EndsAt), jsonTimePtr(e.RemindAt), JSONTime(e.CreatedAt), JSONTime(e.UpdatedAt),
		jsonTimePtr(e.DeletedAt), nonEmpty(e.DeletedBy)})
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
	// The MCP settings, null for the other providers.
	type mcp struct {
		Name            *string           `json:"name"`
		URL             *string           `json:"url"`
		AllowedTools    []string          `json:"allowed_tools"`
		RequireApproval []string          `json:"require_approval"`
		Tools           []IntegrationTool `json:"tools"`
	}
	var m mcp
	if s := in.MCPSettings; s != nil {
		m = mcp{&s.Name, &s.URL, s.AllowedTools, s.RequireApproval, s.Tools}
		if m.RequireApproval == nil {
			m.RequireApproval = []string{}
		}
		if m.Tools == nil {
			m.Tools = []IntegrationTool{}
		}
	}
	return json.Marshal(struct {
		plain
		mcp
		ConnectedAt JSONTime `json:"connected_at"`
		CreatedAt   JSONTime `json:"created_at"`
		UpdatedAt   JSONTime `json:"updated_at"`
	}{plain(in), m, JSONTime(in.ConnectedAt), JSONTime(in.CreatedAt), JSONTime(in.UpdatedAt)})
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
// action_ids is always an array, and a turn stored before strategies
// existed has multitask_strategy "enqueue". Every turn writes its record
// into its stream and its turn.* event, so, like Message's, it is written
// out by hand; the bytes are those of the reflective encoding of the
// other records, which TestTurnJSONAsReflection checks.
func (t Turn) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 512+len(t.StopReason)+16*len(t.ActionIDs))
	b = append(b, `{"id":`...)
	b = appendJSONString(b, t.ID)
	b = append(b, `,"object":`...)
	b = appendJSONString(b, t.Object)
	b = append(b, `,"assistant_id":`...)
	b = appendJSONString(b, t.AssistantID)
	b = append(b, `,"conversation_id":`...)
	b = appendJSONString(b, t.ConversationID)
	b = append(b, `,"status":`...)
	b = appendJSONString(b, t.Status)
	b = append(b, `,"inbound_message_id":`...)
	b = appendJSONString(b, t.InboundMessageID)
	b = append(b, `,"reply_message_id":`...)
	b = appendJSONString(b, t.ReplyMessageID)
	b = append(b, `,"error":`...)
	var err error
	if b, err = appendMarshaled(b, t.Error, t.Error == nil); err != nil {
		return nil, err
	}
	b = append(b, `,"cancel_requested":`...)
	b = strconv.AppendBool(b, t.CancelRequested)
	b = append(b, `,"background":`...)
	b = strconv.AppendBool(b, t.Background)
	b = append(b, `,"multitask_strategy":`...)
	if t.MultitaskStrategy == "" {
		b = appendJSONString(b, MultitaskEnqueue)
	} else {
		b = appendJSONString(b, t.MultitaskStrategy)
	}
	b = append(b, `,"required_action":`...)
	if b, err = appendMarshaled(b, t.RequiredAction, t.RequiredAction == nil); err != nil {
		return nil, err
	}
	b = append(b, `,"usage":{"input_tokens":`...)
	b = strconv.AppendInt(b, t.Usage.InputTokens, 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, t.Usage.OutputTokens, 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, t.Usage.TotalTokens, 10)
	b = append(b, `},"stop_reason":`...)
	b = appendJSONString(b, t.StopReason)
	b = append(b, `,"action_ids":[`...)
	for i, id := range t.ActionIDs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, id)
	}
	b = append(b, `],"created_at":`...)
	b = AppendJSONTime(b, t.CreatedAt)
	b = append(b, `,"updated_at":`...)
	b = AppendJSONTime(b, t.UpdatedAt)
	b = append(b, `,"completed_at":`...)
	if t.CompletedAt == nil {
		b = append(b, "null"...)
	} else {
		b = AppendJSONTime(b, *t.CompletedAt)
	}
	return append(b, '}'), nil
}

// appendMarshaled appends json.Marshal(v), or null when isNil (v being a
// nil pointer, which json.Marshal writes as null too).
func appendMarshaled(b []byte, v any, isNil bool) ([]byte, error) {
	if isNil {
		return append(b, "null"...), nil
	}
	j, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, j...), nil
}
