package dump_test

import (
	"bytes"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/amsdev/ams/internal/dump"
	"github.com/amsdev/ams/internal/seal"
)

// row returns values for every column of t, of each kind's type.
func row(t *dump.Table, n int64) []any {
	vals := make([]any, len(t.Columns))
	for i, c := range t.Columns {
		switch c.Kind {
		case dump.Int:
			vals[i] = n*1_000_000_000_000 + int64(i) // beyond float64's exact integers when large
		case dump.Bool:
			vals[i] = n%2 == 0
		case dump.JSON:
			vals[i] = `{"a": [1, 2.5, "<x> & \u0000"], "b": null}`
		case dump.Bytes:
			vals[i] = []byte{0, 1, 2, 0xff, '\n'}
		default:
			vals[i] = "v\"al\\ue\n\t<é🎉>\x00 " + c.Name
		}
		if c.Null && n%3 == 0 {
			vals[i] = nil
		}
	}
	return vals
}

func TestWriteRead(t *testing.T) {
	var buf bytes.Buffer
	created := time.Date(2026, 11, 21, 10, 0, 0, 123e6, time.UTC)
	w, err := dump.NewWriter(&buf, dump.Header{Engine: "sqlite", SchemaVersion: 5, CreatedAt: created})
	if err != nil {
		t.Fatal(err)
	}
	type rec struct {
		table string
		vals  []any
	}
	var want []rec
	for _, tb := range dump.Tables {
		for n := range int64(4) {
			v := row(tb, 9000+n)
			if err := w.Write(tb, v); err != nil {
				t.Fatal(err)
			}
			want = append(want, rec{tb.Name, v})
		}
	}
	if err := w.Write(dump.Tables[0], row(dump.Tables[0], 1)); err == nil || !strings.Contains(err.Error(), "dependency order") {
		t.Fatalf("write out of order: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if strings.Count(buf.String(), "\n") != len(want)+2 {
		t.Fatalf("%d lines for %d rows", strings.Count(buf.String(), "\n"), len(want))
	}

	r, err := dump.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if h := r.Header(); h.Format != dump.Format || h.Version != dump.Version || h.Engine != "sqlite" || h.SchemaVersion != 5 || !h.CreatedAt.Equal(created) {
		t.Fatalf("header %+v", h)
	}
	var got []rec
	for {
		tb, vals, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, rec{tb.Name, vals})
	}
	if len(got) != len(want) {
		t.Fatalf("read %d rows, wrote %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("row %d:\nwrote %#v\nread  %#v", i, want[i], got[i])
		}
	}
	if r.Rows() != int64(len(want)) || r.Counts()["users"] != 4 {
		t.Fatalf("counts %d %v", r.Rows(), r.Counts())
	}
	if _, _, err := r.Next(); err != io.EOF {
		t.Fatalf("Next after the end: %v", err)
	}
}

func TestWriteRefusesBadValues(t *testing.T) {
	users := dump.Lookup("users")
	for name, mutate := range map[string]func([]any){
		"null in NOT NULL": func(v []any) { v[users.Index("id")] = nil },
		"int for text":     func(v []any) { v[users.Index("id")] = int64(1) },
		"string for int":   func(v []any) { v[users.Index("seq")] = "1" },
		"float for int":    func(v []any) { v[users.Index("rpm")] = 1.5 },
	} {
		w, _ := dump.NewWriter(io.Discard, dump.Header{})
		v := row(users, 1)
		mutate(v)
		if err := w.Write(users, v); err == nil {
			t.Errorf("%s: written", name)
		}
	}
	w, _ := dump.NewWriter(io.Discard, dump.Header{})
	if err := w.Write(users, row(users, 1)[1:]); err == nil {
		t.Error("too few values written")
	}
	if err := w.Write(&dump.Table{Name: "gadgets"}, nil); err == nil {
		t.Error("unknown table written")
	}
}

func TestSecrets(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	s, _ := seal.New(key)
	wh := dump.Lookup("webhooks")
	v := row(wh, 1)
	v[wh.Index("id")], v[wh.Index("secret")] = "wh_1", "plain"
	if err := dump.SealSecrets(wh, v, s); err != nil {
		t.Fatal(err)
	}
	sealed := v[wh.Index("secret")].(string)
	if sealed == "plain" || !strings.HasPrefix(sealed, "v1:") {
		t.Fatalf("sealed %q", sealed)
	}
	if p, err := s.Open(sealed, "wh_1"); err != nil || p != "plain" {
		t.Fatalf("sealed for another record: %q %v", p, err)
	}
	if err := dump.OpenSecrets(wh, v, s); err != nil || v[wh.Index("secret")] != "plain" {
		t.Fatalf("open: %v %v", v[wh.Index("secret")], err)
	}
	other, _ := seal.New(bytes.Repeat([]byte{8}, 32))
	v[wh.Index("secret")] = sealed
	if err := dump.OpenSecrets(wh, v, other); err == nil {
		t.Fatal("opened with another key")
	}
}

func TestCheckSchema(t *testing.T) {
	typeOK := func(k dump.Kind, typ string) bool { return typ == k.String() }
	live := map[string][]dump.LiveColumn{dump.Bookkeeping: {{Name: "version", Type: "integer", NotNull: true}}, "oauth_locks": nil}
	for _, tb := range dump.Tables {
		for _, c := range tb.Columns {
			live[tb.Name] = append(live[tb.Name], dump.LiveColumn{Name: c.SQL, Type: c.Kind.String(), NotNull: !c.Null})
		}
	}
	// A local column (events.txid) is known, and not exported.
	live["events"] = append(live["events"], dump.LiveColumn{Name: "txid", Type: "integer", NotNull: true})
	if err := dump.CheckSchema(live, typeOK); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(dump.Lookup("events").SQLColumns(), "txid") {
		t.Fatal("events.txid is exported")
	}
	live["events"] = live["events"][:len(live["events"])-1]
	live["gadgets"] = nil
	live["users"] = append(live["users"], dump.LiveColumn{Name: "nickname", Type: "text"})
	live["messages"] = live["messages"][1:] // no seq
	for i, c := range live["emails"] {
		if c.Name == "sent_at" {
			live["emails"][i].NotNull = true
		}
	}
	live["events"][len(live["events"])-1].Type = "json"
	delete(live, "login_sessions")
	err := dump.CheckSchema(live, typeOK)
	for _, want := range []string{"table gadgets is unknown", "users.nickname is unknown", "messages.seq is missing", "emails.sent_at should be nullable",
		"events.created_at has type json", "table login_sessions is missing"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("schema check: %v, want %q", err, want)
		}
	}
}

func TestReaderHeader(t *testing.T) {
	for in, want := range map[string]string{
		"":                                    "empty",
		"{}":                                  "not an ams export",
		`{"format":"ams-export","version":3}`: "format version 3 is newer than this ams reads (1)",
		`{"format":"ams-export","version":0}`: "bad format version",
		`{"format":"ams-export","version":1,"surprise":true}`: "malformed header",
		"\x89PNG\r\n": "not an ams export",
		`{"format":"ams-export","version":1,"engine":"sqlite"} extra`: "not an ams export",
	} {
		_, err := dump.NewReader(strings.NewReader(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("header %q: %v, want %q", in, err, want)
		}
	}
}

func TestSummary(t *testing.T) {
	if s := dump.Summary(map[string]int64{"messages": 10, "users": 2, "emails": 0}); s != "users 2, messages 10" {
		t.Fatal(s)
	}
	if s := dump.Summary(nil); s != "no rows" {
		t.Fatal(s)
	}
}

// A dump made before a nullable column or a table was added reads, the
// column as NULL (metadata, NOT NULL with a default, as "{}"); a missing
// NOT NULL column without a default is refused.
func TestReadOlderDump(t *testing.T) {
	head := `{"format":"ams-export","version":1,"engine":"sqlite","schema_version":4,"created_at":"2026-11-21T10:00:00Z"}` + "\n"
	asst := `{"table":"assistants","row":{"seq":1,"id":"ast_1","user_id":"usr_1","name":"A","description":"","instructions":"","model":"builtin","created_at":1,"updated_at":2}}` + "\n"
	end := `{"end":{"rows":1,"counts":{"assistants":1}}}` + "\n"
	r, err := dump.NewReader(strings.NewReader(head + asst + end))
	if err != nil {
		t.Fatal(err)
	}
	tb, vals, err := r.Next()
	if err != nil || tb.Name != "assistants" || vals[tb.Index("deleted_at")] != nil || vals[tb.Index("name")] != "A" ||
		vals[tb.Index("metadata")] != "{}" {
		t.Fatalf("older row: %v %v", vals, err)
	}
	if _, _, err := r.Next(); err != io.EOF {
		t.Fatalf("end: %v", err)
	}
	r, _ = dump.NewReader(strings.NewReader(head + strings.Replace(asst, `"model":"builtin",`, "", 1) + end))
	if _, _, err := r.Next(); err == nil || !strings.Contains(err.Error(), "without column model") {
		t.Fatalf("row without a NOT NULL column: %v", err)
	}
}
