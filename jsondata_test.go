package ams

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestMarshalDataAsJSON checks that MarshalData writes what json.Marshal
// writes, byte for byte, for the data of every kind of event and for
// values that need care (escapes, invalid UTF-8, numbers of every size,
// nil of each type).
func TestMarshalDataAsJSON(t *testing.T) {
	at := time.Date(2026, 11, 28, 21, 30, 0, 5e6, time.FixedZone("CET", 3600))
	texts := messageJSONTexts()
	code, text := 503, "the receiver <said> no"
	var datas []map[string]any
	for i, s := range texts {
		meta := Metadata{"b": s, "a": "x", s + "k": "<v>"}
		m := &Message{ID: "msg_" + s, Object: "message", UserID: "usr_1", AssistantID: "ast_1", ConversationID: "conv_1",
			Direction: DirectionInbound, Content: s, Metadata: meta, CreatedAt: at, UpdatedAt: at}
		c := &Conversation{ID: "conv_" + s, Object: "conversation", UserID: "usr_1", AssistantID: "ast_1", Title: s,
			MessageCount: i, LastMessageAt: at, Metadata: meta, CreatedAt: at, UpdatedAt: at.Add(time.Second)}
		done := at.Add(time.Minute)
		tu := &Turn{ID: "turn_" + s, UserID: "usr_1", AssistantID: "ast_1", ConversationID: "conv_1", Status: TurnCompleted,
			InboundMessageID: "msg_1", ReplyMessageID: s, CreatedAt: at, UpdatedAt: at, CompletedAt: &done,
			Error: &ActionError{Code: "x", Message: s}}
		tu.Usage.InputTokens, tu.Usage.OutputTokens = int64(i), int64(2*i)
		for _, e := range []*Event{
			MessageCreatedEvent(m), MessageEvent(EventMessageUpdated, m, at), MessageDeletedEvent(m, at),
			ConversationEvent(EventConversationCreated, c, at), ConversationEvent(EventConversationUpdated, &Conversation{}, at),
			TurnLifecycleEvent(tu, at), TurnLifecycleEvent(&Turn{Status: TurnCancelled}, at),
			WebhookFailingEvent("usr_1", "wh_1", "https://example.com/"+s, s, at),
			WebhookHealthEvent(EventWebhookDegraded, "usr_1", "wh_1", s, &code, &text, i, at),
			WebhookHealthEvent(EventWebhookRecovered, "usr_1", "wh_1", s, nil, nil, 0, at),
			TaskEvent(EventTaskCreated, &Task{ID: "task_1", Title: s, CreatedAt: at}, at),
		} {
			datas = append(datas, e.Data)
		}
	}
	datas = append(datas, nil, map[string]any{}, map[string]any{
		"nil": nil, "nil_map": map[string]any(nil), "nil_strings": map[string]string(nil), "nil_slice": []any(nil),
		"nil_list": []string(nil), "nil_meta": Metadata(nil), "nil_ptr": (*string)(nil), "empty_list": []string{},
		"strings": map[string]string{"z": "<", "a": "\u2028"}, "list": []any{1, "a", nil, []any{true}, map[string]any{"k": 1.5}},
		"time": at, "json_time": JSONTime(at), "far_time": JSONTime(time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC)),
		"int64": int64(math.MinInt64), "int32": int32(-7), "uint": uint(7), "ptr": &text, "error": &ActionError{Code: "x", Message: "<y>"},
		"\xff<key>\u2028": "v",
	})
	for _, f := range []float64{0, math.Copysign(0, -1), 1, -1.5, 1e-6, 9.99e-7, 1e-7, 123456789, 1e20, 1e21, -1e21, 1.7976931348623157e308,
		5e-324, 0.1, 1.0 / 3, 12345678901234567890, float64(math.MaxInt64)} {
		datas = append(datas, map[string]any{"f": f, "list": []any{f, -f}})
	}
	// What decoding a stored event gives (json.Unmarshal: float64, string,
	// bool, nil, []any, map[string]any), made at random.
	r := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		datas = append(datas, randomData(r, texts, 3).(map[string]any))
	}
	for _, d := range datas {
		want, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		got, err := MarshalData(d)
		if err != nil {
			t.Fatalf("MarshalData(%v): %v", d, err)
		}
		if string(got) != string(want) {
			t.Fatalf("MarshalData(%v) =\n%s\nwant\n%s", d, got, want)
		}
	}
	for _, bad := range []any{math.NaN(), math.Inf(1), func() {}} {
		if _, err := MarshalData(map[string]any{"k": []any{bad}}); err == nil {
			t.Errorf("MarshalData of %T: no error", bad)
		}
	}
}

// randomData returns a random value of what json.Unmarshal decodes into
// an any, a map at the top (depth > 0).
func randomData(r *rand.Rand, texts []string, depth int) any {
	kind := r.IntN(7)
	if depth == 3 {
		kind = 6
	} else if depth == 0 {
		kind = r.IntN(4)
	}
	switch kind {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2:
		switch r.IntN(3) {
		case 0:
			return float64(r.IntN(1 << 20))
		case 1:
			return r.NormFloat64() * math.Pow(10, float64(r.IntN(50)-25))
		}
		return math.Float64frombits(r.Uint64() &^ (0x7ff << 52)) // finite
	case 3:
		return texts[r.IntN(len(texts))] + strings.Repeat("x", r.IntN(3))
	case 4, 5:
		l := make([]any, r.IntN(4))
		for i := range l {
			l[i] = randomData(r, texts, depth-1)
		}
		return l
	}
	m := map[string]any{}
	for range r.IntN(6) {
		m[texts[r.IntN(len(texts))]+string(rune('a'+r.IntN(26)))] = randomData(r, texts, depth-1)
	}
	return m
}

// FuzzMarshalData compares MarshalData with json.Marshal on the data a
// decoded JSON object gives.
func FuzzMarshalData(f *testing.F) {
	f.Add(`{"a":1,"b":[true,null,"<x>"],"c":{"d":1e-7}}`)
	f.Add(`{"\u2028":"\ud800","k":-0.0}`)
	f.Fuzz(func(t *testing.T, s string) {
		var d map[string]any
		if json.Unmarshal([]byte(s), &d) != nil {
			return
		}
		want, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		got, err := MarshalData(d)
		if err != nil || string(got) != string(want) {
			t.Fatalf("MarshalData = %s, %v; want %s", got, err, want)
		}
	})
}

func BenchmarkMarshalData(b *testing.B) {
	at := time.Date(2026, 11, 28, 21, 30, 0, 0, time.UTC)
	m := &Message{ID: NewID(PrefixMessage), UserID: "usr_1", AssistantID: NewID(PrefixAssistant), ConversationID: NewID(PrefixConversation),
		Direction: DirectionInbound, Content: "Hello! What can you do?", CreatedAt: at, UpdatedAt: at}
	tu := &Turn{ID: NewID(PrefixTurn), Status: TurnCompleted, CreatedAt: at, UpdatedAt: at, CompletedAt: &at}
	for _, c := range []struct {
		name string
		data map[string]any
	}{{"message", MessageCreatedEvent(m).Data}, {"turn", TurnLifecycleEvent(tu, at).Data}} {
		b.Run(c.name+"/json", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				json.Marshal(c.data)
			}
		})
		b.Run(c.name+"/MarshalData", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				MarshalData(c.data)
			}
		})
	}
}
