package dump_test

import (
	"bytes"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/amsdev/ams/internal/dump"
)

// fuzzValidDump writes a dump of two rows of every table (values of row).
func fuzzValidDump(tb testing.TB) []byte {
	tb.Helper()
	var buf bytes.Buffer
	w, err := dump.NewWriter(&buf, dump.Header{Engine: "sqlite", SchemaVersion: 5, CreatedAt: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)})
	if err != nil {
		tb.Fatal(err)
	}
	for _, t := range dump.Tables {
		for n := range int64(2) {
			if err := w.Write(t, row(t, n)); err != nil {
				tb.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

type fuzzRow struct {
	table string
	vals  []any
}

// fuzzReadAll reads a whole dump, checking each row's values against its
// table's columns as it goes. It returns the rows and the error that
// ended the reading (nil: the dump is complete and consistent).
func fuzzReadAll(t *testing.T, b []byte) (*dump.Reader, []fuzzRow, error) {
	r, err := dump.NewReader(bytes.NewReader(b))
	if err != nil {
		if r != nil {
			t.Fatal("NewReader returned a reader and an error")
		}
		return nil, nil, err
	}
	var rows []fuzzRow
	for {
		tb, vals, err := r.Next()
		if err == io.EOF {
			return r, rows, nil
		}
		if err != nil {
			if _, _, again := r.Next(); again == nil || again.Error() != err.Error() {
				t.Fatalf("Next after the error %v: %v", err, again)
			}
			return r, rows, err
		}
		if tb == nil || len(vals) != len(tb.Columns) {
			t.Fatalf("row of %v with %d values", tb, len(vals))
		}
		for i, c := range tb.Columns {
			v := vals[i]
			ok := false
			switch c.Kind {
			case dump.Text, dump.Secret, dump.JSON:
				_, ok = v.(string)
			case dump.Int:
				_, ok = v.(int64)
			case dump.Bool:
				_, ok = v.(bool)
			case dump.Bytes:
				_, ok = v.([]byte)
			}
			if v == nil {
				ok = c.Null
			}
			if !ok {
				t.Fatalf("%s.%s (%v, null %v): read %T %v", tb.Name, c.Name, c.Kind, c.Null, v, v)
			}
		}
		rows = append(rows, fuzzRow{tb.Name, vals})
	}
}

// FuzzReader: the dump reader never panics on any input; it hands out
// values of each column's type only; once it fails it keeps failing; and a
// dump it reads to the end is consistent: the rows it gave, written again,
// read back the same, with the same counts.
func FuzzReader(f *testing.F) {
	good := fuzzValidDump(f)
	f.Add(good)
	lines := bytes.SplitAfter(good, []byte("\n"))
	f.Add(bytes.Join(lines[:len(lines)-2], nil))                                          // no trailer
	f.Add(bytes.Join(append(lines[:3:3], lines[4:]...), nil))                             // a row missing
	f.Add(append(append([]byte{}, good...), lines[1]...))                                 // data after the trailer
	f.Add(bytes.Join(append([][]byte{lines[0], lines[len(lines)-3]}, lines[1:]...), nil)) // out of order
	f.Add(bytes.ReplaceAll(good, []byte("\n"), []byte("\r\n")))
	f.Add(good[:len(good)/2])
	for _, s := range []string{
		"", "\n", "{}", `{"format":"ams-export","version":1}`, `{"format":"ams-export","version":2}`,
		`{"format":"ams-export","version":1}` + "\n" + `{"end":{"rows":0,"counts":{}}}`,
		`{"format":"ams-export","version":1}` + "\n" + `{"end":{"rows":0,"counts":{}},"table":"users"}`,
		`{"format":"ams-export","version":1}` + "\n" + `{"table":"users","row":null}`,
		`{"format":"ams-export","version":1}` + "\n" + `{"end":{"rows":-1,"counts":{"gadgets":1}}}`,
		`{"format":"ams-export","version":1,"format":"x"}` + "\n",
		`{"format":"ams-export","version":1e400}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, rows, err := fuzzReadAll(t, b)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "dump: ") {
				t.Fatalf("an error that does not say where it comes from: %v", err)
			}
			return
		}
		if r.Rows() != int64(len(rows)) {
			t.Fatalf("Rows() %d, read %d", r.Rows(), len(rows))
		}
		var buf bytes.Buffer
		w, err := dump.NewWriter(&buf, r.Header())
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range rows {
			if err := w.Write(dump.Lookup(row.table), row.vals); err != nil {
				t.Fatalf("a row read does not write again: %v", err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		r2, again, err := fuzzReadAll(t, buf.Bytes())
		if err != nil {
			t.Fatalf("written again, the dump does not read: %v\n%s", err, buf.Bytes())
		}
		if !reflect.DeepEqual(rows, again) || !reflect.DeepEqual(r.Counts(), r2.Counts()) {
			t.Fatalf("rows read\n%v\nread again\n%v", rows, again)
		}
		if h1, h2 := r.Header(), r2.Header(); h1.Engine != h2.Engine || h1.SchemaVersion != h2.SchemaVersion || (!h1.CreatedAt.IsZero() && !h1.CreatedAt.Equal(h2.CreatedAt)) {
			t.Fatalf("header %+v became %+v", h1, h2)
		}
	})
}
