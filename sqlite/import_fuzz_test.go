package sqlite_test

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/dump"
	"github.com/amsdev/ams/internal/dump/dumptest"
	"github.com/amsdev/ams/sqlite"
)

// fuzzSmallDump returns the export of a store holding a user with an API key,
// an assistant, a conversation of one exchange and a webhook.
func fuzzSmallDump(f *testing.F) []byte {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(f.TempDir(), "src.db"))
	if err != nil {
		f.Fatal(err)
	}
	defer db.Close()
	t0 := dumptest.T0
	u := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: "ann@example.com", Plan: ams.PlanStandard, Timezone: "UTC", CreatedAt: t0, UpdatedAt: t0}
	a := &ams.Assistant{ID: ams.NewID(ams.PrefixAssistant), Object: "assistant", UserID: u.ID, Name: "Ann's", Model: ams.ModelBuiltin, CreatedAt: t0, UpdatedAt: t0}
	w := &ams.Webhook{ID: ams.NewID(ams.PrefixWebhook), Object: "webhook", UserID: u.ID, URL: "https://hooks.example.com/ann",
		Events: []string{ams.EventMessageCreated}, Secret: "whsec_c2VjcmV0", Active: true, Status: ams.WebhookActive, CreatedAt: t0, UpdatedAt: t0}
	_, key := ams.NewAPIKey(u.ID, "ci", ams.Permissions{ams.PermRead}, t0, nil)
	c := &ams.Conversation{ID: ams.NewID(ams.PrefixConversation), Object: "conversation", UserID: u.ID, AssistantID: a.ID, Title: "Hi",
		LastMessageAt: t0, CreatedAt: t0, UpdatedAt: t0}
	msg := func(dir, text string) *ams.Message {
		return &ams.Message{ID: ams.NewID(ams.PrefixMessage), Object: "message", UserID: u.ID, AssistantID: a.ID, ConversationID: c.ID,
			Direction: dir, Content: text, CreatedAt: t0, UpdatedAt: t0}
	}
	x := &ams.Exchange{NewConversation: c, ConversationID: c.ID, Inbound: msg(ams.DirectionInbound, "Hi"), Reply: msg(ams.DirectionOutbound, "Hello")}
	x.Events = []*ams.Event{ams.MessageCreatedEvent(x.Inbound), ams.MessageCreatedEvent(x.Reply)}
	for _, err := range []error{db.CreateUser(ctx, u), db.CreateKey(ctx, key), db.CreateAssistant(ctx, a), db.CreateWebhook(ctx, w), db.SaveExchange(ctx, x)} {
		if err != nil {
			f.Fatal(err)
		}
	}
	var buf bytes.Buffer
	dw, err := dump.NewWriter(&buf, dump.Header{Engine: sqlite.Engine, CreatedAt: t0})
	if err != nil {
		f.Fatal(err)
	}
	if err := db.Export(ctx, dw.Write); err != nil {
		f.Fatal(err)
	}
	if err := dw.Close(); err != nil {
		f.Fatal(err)
	}
	return buf.Bytes()
}

// fuzzCanonical reads a dump and writes its rows again, as the writer writes
// them: what a store that imported it exports. ok is false if the dump
// does not read.
func fuzzCanonical(b []byte) (rows []string, ok bool) {
	r, err := dump.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, false
	}
	var buf bytes.Buffer
	w, _ := dump.NewWriter(&buf, dump.Header{Engine: "test", CreatedAt: time.Unix(1, 0)})
	for {
		t, vals, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, false
		}
		if err := w.Write(t, vals); err != nil {
			return nil, false
		}
	}
	w.Close()
	lines := bytes.Split(bytes.TrimSuffix(buf.Bytes(), []byte("\n")), []byte("\n"))
	for _, l := range lines[1 : len(lines)-1] {
		rows = append(rows, string(l))
	}
	return rows, true
}

// FuzzImport: a dump that is corrupt in any way (or that the database
// refuses: a foreign key, a CHECK, a duplicate id) is refused with an
// error and leaves the store as empty as it was; a dump that imports
// leaves exactly its rows.
func FuzzImport(f *testing.F) {
	good := fuzzSmallDump(f)
	f.Add(good)
	lines := bytes.SplitAfter(good, []byte("\n"))
	n := len(lines) - 1                                                                        // the last element is empty
	f.Add(bytes.Join(lines[:n-1], nil))                                                        // no trailer
	f.Add(bytes.Join(append(append([][]byte{}, lines[:2]...), lines[3:]...), nil))             // a row missing
	f.Add(bytes.Join(append(append([][]byte{}, lines[:n-1]...), lines[n-2], lines[n-1]), nil)) // a row twice
	f.Add(bytes.Replace(good, []byte(`"seq":1,`), []byte(`"seq":"1",`), 1))
	f.Add(bytes.Replace(good, []byte(`"plan":"standard"`), []byte(`"plan":"platinum"`), 1))
	f.Add(good[:len(good)-20])

	// One store for every input: a successful import is emptied again
	// (EmptyForTest) rather than replaced by a new store, whose opening
	// (migrations) would cost many imports.
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(f.TempDir(), "fuzz.db"))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { db.Close() })
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := importAll(db, b); err != nil {
			if n, cerr := db.RowsForTest(ctx); cerr != nil || n != 0 {
				t.Fatalf("a refused import (%v) left %d rows (%v): %.2000q", err, n, cerr, dumptest.Lines(t, db))
			}
			return
		}
		got := dumptest.Lines(t, db)
		want, ok := fuzzCanonical(b)
		if !ok {
			t.Fatalf("imported a dump that does not read")
		}
		// The export orders each table's rows its own way (the dump's
		// order need not be it): compare the rows as sets.
		slices.Sort(want)
		slices.Sort(got)
		dumptest.SameLines(t, want, got)
		if err := db.EmptyForTest(ctx); err != nil { // an import needs an empty store
			t.Fatal(err)
		}
		if n, err := db.RowsForTest(ctx); err != nil || n != 0 {
			t.Fatalf("%d rows left after EmptyForTest (%v)", n, err)
		}
	})
}
