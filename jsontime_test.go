package ams

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

// apiRecords are this package's records with timestamps in their JSON;
// TestTimestampsHaveThreeDecimals fails when a record with a json-tagged
// time field is missing here.
var apiRecords = map[string]any{
	"Assistant": Assistant{}, "Conversation": Conversation{}, "Message": Message{}, "Task": Task{},
	"CalendarEvent": CalendarEvent{}, "Action": Action{}, "APIKey": APIKey{}, "OAuthClient": OAuthClient{},
	"User": User{}, "Event": Event{}, "Webhook": Webhook{}, "Delivery": Delivery{}, "Integration": Integration{},
	"APIKeyRecord": APIKeyRecord{}, "Account": Account{}, "Turn": Turn{}, "RequiredAction": RequiredAction{},
}

// TestTimestampsHaveThreeDecimals checks that every record of the package
// whose JSON has a time writes it with exactly three decimals, also when
// the milliseconds end in zeros, where time.Time would shorten them.
func TestTimestampsHaveThreeDecimals(t *testing.T) {
	for _, name := range recordsWithTimes(t) {
		if _, ok := apiRecords[name]; !ok {
			t.Errorf("%s has json-tagged time fields but is not in apiRecords: give it a MarshalJSON that writes them as JSONTime, and list it", name)
		}
	}
	good := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)
	for _, at := range []time.Time{
		time.Date(2026, 11, 24, 18, 30, 0, 0, time.UTC),
		time.Date(2026, 11, 24, 18, 30, 0, 120e6, time.UTC),
		time.Date(2026, 11, 24, 19, 30, 0, 5e6, time.FixedZone("CET", 3600)),
	} {
		for name, rec := range apiRecords {
			v := reflect.New(reflect.TypeOf(rec)).Elem()
			fields := setTimes(v, at)
			b, err := json.Marshal(v.Interface())
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			for _, f := range fields {
				s, _ := m[f].(string)
				if !good.MatchString(s) || s != FormatTime(at) {
					t.Errorf("%s.%s = %q, want %q", name, f, m[f], FormatTime(at))
				}
			}
			// Pointers encode the same way.
			if pb, err := json.Marshal(v.Addr().Interface()); err != nil || string(pb) != string(b) {
				t.Errorf("%s: *%s encodes as %s, %s as %s", name, name, pb, name, b)
			}
		}
	}
}

// setTimes sets every json-tagged time.Time and *time.Time field of v to
// at and returns their JSON names.
func setTimes(v reflect.Value, at time.Time) []string {
	var names []string
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "" || tag == "-" {
			continue
		}
		switch f.Type {
		case reflect.TypeOf(time.Time{}):
			v.Field(i).Set(reflect.ValueOf(at))
		case reflect.TypeOf(&time.Time{}):
			a := at
			v.Field(i).Set(reflect.ValueOf(&a))
		default:
			continue
		}
		names = append(names, tag)
	}
	return names
}

// recordsWithTimes returns the package's struct types with a json-tagged
// time.Time or *time.Time field, read from its source.
func recordsWithTimes(t *testing.T) []string {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range pkgs {
		for _, f := range p.Files {
			ast.Inspect(f, func(n ast.Node) bool {
				ts, ok := n.(*ast.TypeSpec)
				if !ok {
					return true
				}
				st, ok := ts.Type.(*ast.StructType)
				if !ok || !ts.Name.IsExported() {
					return true
				}
				for _, fl := range st.Fields.List {
					typ := fl.Type
					if s, ok := typ.(*ast.StarExpr); ok {
						typ = s.X
					}
					sel, ok := typ.(*ast.SelectorExpr)
					if !ok || sel.Sel.Name != "Time" || fl.Tag == nil {
						continue
					}
					if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "time" {
						continue
					}
					tag := reflect.StructTag(strings.Trim(fl.Tag.Value, "`")).Get("json")
					if tag != "" && tag != "-" {
						out = append(out, ts.Name.Name)
						break
					}
				}
				return true
			})
		}
	}
	return out
}

// reflectMessageJSON is how Message encoded before its MarshalJSON was
// written out by hand: by reflection, its times shadowed by JSONTime.
func reflectMessageJSON(m Message) ([]byte, error) {
	type plain Message
	return json.Marshal(struct {
		plain
		CreatedAt JSONTime `json:"created_at"`
		UpdatedAt JSONTime `json:"updated_at"`
	}{plain(m), JSONTime(m.CreatedAt), JSONTime(m.UpdatedAt)})
}

// messageJSONTexts are strings that json.Marshal escapes in every way it
// has: every ASCII byte, HTML characters, U+2028/U+2029, invalid UTF-8.
func messageJSONTexts() []string {
	var all []byte
	for c := 0; c < 0x80; c++ {
		all = append(all, byte(c))
	}
	return []string{"", "Hello! What can you do?", string(all), "<script>&amp;</script>", "a\u2028b\u2029c\u2027",
		"é€𝄞", "\xff\xfe", "a\xc3", "\xe2\x80", "\xed\xa0\x80", "tab\there\r\n\b\f\\\"", "\x7f\x00"}
}

// TestMessageJSONAsReflection checks that Message's hand-written encoder
// writes what the reflective encoding of the other records writes, byte
// for byte.
func TestMessageJSONAsReflection(t *testing.T) {
	at := time.Date(2026, 11, 24, 19, 30, 0, 5e6, time.FixedZone("CET", 3600))
	texts := messageJSONTexts()
	for i, s := range texts {
		for _, meta := range []Metadata{nil, {}, {"b": s, "a": "x", s + "k": "<v>"}} {
			m := Message{ID: "msg_" + s, Object: "message", UserID: "usr_1", AssistantID: s, ConversationID: "conv_1",
				Direction: texts[(i+1)%len(texts)], Content: s, Metadata: meta, CreatedAt: at, UpdatedAt: at.Add(time.Duration(i) * time.Millisecond)}
			checkMessageJSON(t, m)
		}
	}
	checkMessageJSON(t, Message{})
}

func checkMessageJSON(t *testing.T, m Message) {
	t.Helper()
	want, err := reflectMessageJSON(m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("Message %q encodes as\n%s\nwant\n%s", m.Content, got, want)
	}
	if direct, _ := m.MarshalJSON(); string(direct) != string(want) {
		t.Errorf("Message.MarshalJSON %q =\n%s\nwant\n%s", m.Content, direct, want)
	}
}

// FuzzMessageJSON compares the hand-written encoder with the reflective
// one on any text.
func FuzzMessageJSON(f *testing.F) {
	for i, s := range messageJSONTexts() {
		f.Add(s, "k", int64(i)*1_790_000_000_123_456_789/7)
	}
	f.Fuzz(func(t *testing.T, content, key string, ns int64) {
		at := time.Unix(0, ns)
		checkMessageJSON(t, Message{ID: "msg_1", Object: "message", AssistantID: key, Direction: "inbound", Content: content,
			Metadata: Metadata{key: content}, CreatedAt: at, UpdatedAt: at.Add(time.Duration(len(content)) * time.Hour)})
	})
}

// TestAppendTime compares appendTime with time's formatting of
// TimeFormat, at the edges of every field, in other zones, and outside
// the years of four digits.
func TestAppendTime(t *testing.T) {
	zones := []*time.Location{time.UTC, time.FixedZone("CET", 3600), time.FixedZone("west", -11*3600-1800)}
	times := []time.Time{{}, time.Unix(0, 0), time.Unix(0, -1), time.Now(),
		time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(0, 1, 1, 0, 0, 0, 1e6, time.UTC)}
	for y := 1969; y <= 2101; y += 11 {
		for mo := time.January; mo <= time.December; mo++ {
			times = append(times, time.Date(y, mo, 1+int(mo)*2, int(mo)*2-1, int(mo)*5, int(mo)*4+11, int(mo)*83_333_333, time.UTC))
		}
	}
	for _, at := range times {
		for _, z := range zones {
			at := at.In(z)
			want := at.UTC().AppendFormat(nil, TimeFormat)
			if got := appendTime(nil, at); string(got) != string(want) {
				t.Errorf("appendTime(%v) = %s, want %s", at, got, want)
			}
		}
	}
}

// reflectTurnJSON is the reflective encoding Turn.MarshalJSON writes by
// hand.
func reflectTurnJSON(t Turn) ([]byte, error) {
	type plain Turn
	if t.ActionIDs == nil {
		t.ActionIDs = []string{}
	}
	if t.MultitaskStrategy == "" {
		t.MultitaskStrategy = MultitaskEnqueue
	}
	return json.Marshal(struct {
		plain
		CreatedAt   JSONTime  `json:"created_at"`
		UpdatedAt   JSONTime  `json:"updated_at"`
		CompletedAt *JSONTime `json:"completed_at"`
	}{plain(t), JSONTime(t.CreatedAt), JSONTime(t.UpdatedAt), jsonTimePtr(t.CompletedAt)})
}

// TestTurnJSONAsReflection checks that Turn's hand-written encoder writes
// what the reflective encoding writes, byte for byte, with and without
// each optional part.
func TestTurnJSONAsReflection(t *testing.T) {
	at := time.Date(2026, 11, 28, 21, 30, 0, 5e6, time.FixedZone("CET", 3600))
	done := at.Add(time.Minute)
	texts := messageJSONTexts()
	for i, s := range texts {
		u := Usage{InputTokens: int64(i), OutputTokens: int64(i) * 1_000_000_007, TotalTokens: -int64(i)}
		for _, tu := range []Turn{
			{ID: "trn_" + s, Object: "turn", UserID: "usr_1", AssistantID: s, ConversationID: "conv_1", Status: TurnCompleted,
				InboundMessageID: "msg_1", ReplyMessageID: s, StopReason: s, Usage: u, CreatedAt: at, UpdatedAt: done, CompletedAt: &done,
				ActionIDs: []string{s, "act_2"}, Background: i%2 == 0, CancelRequested: i%3 == 0, MultitaskStrategy: texts[(i+1)%len(texts)],
				IdempotencyKey: "k", Request: &EventRequest{ID: "req"}, Stream: true},
			{ID: "trn_1", Status: TurnFailed, Error: &ActionError{Type: "api_error", Code: s, Message: s, Param: s}, ActionIDs: []string{}},
			{ID: "trn_1", Status: TurnRequiresAction, RequiredAction: &RequiredAction{Type: s}},
		} {
			checkTurnJSON(t, tu)
		}
	}
	checkTurnJSON(t, Turn{})
}

func checkTurnJSON(t *testing.T, tu Turn) {
	t.Helper()
	want, err := reflectTurnJSON(tu)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []func() ([]byte, error){func() ([]byte, error) { return json.Marshal(tu) }, tu.MarshalJSON} {
		got, err := f()
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("Turn %q encodes as\n%s\nwant\n%s", tu.StopReason, got, want)
		}
	}
}

// FuzzTurnJSON compares Turn's hand-written encoder with the reflective
// one on any text.
func FuzzTurnJSON(f *testing.F) {
	for i, s := range messageJSONTexts() {
		f.Add(s, int64(i)*1_790_000_000_123_456_789/7, int64(i))
	}
	f.Fuzz(func(t *testing.T, s string, ns, n int64) {
		at := time.Unix(0, ns)
		checkTurnJSON(t, Turn{ID: s, Object: "turn", Status: s, StopReason: s, ActionIDs: []string{s}, MultitaskStrategy: s,
			Usage: Usage{InputTokens: n, OutputTokens: -n, TotalTokens: n * 3}, CreatedAt: at, UpdatedAt: at, CompletedAt: &at,
			Error: &ActionError{Message: s}})
	})
}
