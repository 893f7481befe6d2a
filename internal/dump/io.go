package dump

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/amsdev/ams/internal/seal"
)

// Format is the name in every dump's header.
const Format = "ams-export"

// Version is the version of the format this package writes, and the
// newest it reads.
const Version = 1

// MaxLine is the longest line the reader accepts (a row with a message of
// the largest size, escaped, fits many times over).
const MaxLine = 64 << 20

// Header is the first line of a dump.
type Header struct {
	Format        string    `json:"format"`         // always Format
	Version       int       `json:"version"`        // of the format
	Engine        string    `json:"engine"`         // the source: "sqlite" or "postgres"
	SchemaVersion int       `json:"schema_version"` // the source's migration number (one numbering for both engines since issue 28)
	CreatedAt     time.Time `json:"created_at"`
}

// Trailer is the last line of a dump: the rows written, in all and per
// table.
type Trailer struct {
	Rows   int64            `json:"rows"`
	Counts map[string]int64 `json:"counts"`
}

// RowFunc receives one row of table t: its values in the order of
// t.Columns, of the Go types of their kinds (nil for NULL), Secret columns
// in plaintext.
type RowFunc func(t *Table, vals []any) error

// Exporter is a store that can write every row of its tables, in the order
// of Tables, from one consistent snapshot.
type Exporter interface {
	Export(ctx context.Context, fn RowFunc) error
}

// Importer is a store that can load a dump: into a freshly migrated, empty
// store, all of it or (on any error) nothing.
type Importer interface {
	Import(ctx context.Context, r *Reader) error
}

// ErrNotEmpty is the error (wrapped) of an import into a store that
// already has rows.
var ErrNotEmpty = errors.New("the store is not empty")

// Writer writes a dump.
type Writer struct {
	w      *bufio.Writer
	buf    bytes.Buffer
	enc    *json.Encoder // encodes strings into buf, without HTML escaping
	last   int           // index in Tables of the last table written
	counts map[string]int64
	rows   int64
	closed bool
}

// NewWriter writes the header h to w (Format, Version and, when zero,
// CreatedAt filled in) and returns a Writer for the rows. Close writes the
// trailer.
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	h.Format, h.Version = Format, Version
	if h.CreatedAt.IsZero() {
		h.CreatedAt = time.Now().UTC().Truncate(time.Millisecond)
	}
	dw := &Writer{w: bufio.NewWriterSize(w, 256<<10), counts: map[string]int64{}}
	dw.enc = json.NewEncoder(&dw.buf)
	dw.enc.SetEscapeHTML(false)
	b, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	if _, err := dw.w.Write(append(b, '\n')); err != nil {
		return nil, fmt.Errorf("dump: write header: %w", err)
	}
	return dw, nil
}

// Write writes one row of t (values as RowFunc receives them). Tables must
// come in the order of Tables.
func (w *Writer) Write(t *Table, vals []any) error {
	if w.closed {
		return errors.New("dump: write after Close")
	}
	i := tableIndex(t.Name)
	if i < 0 {
		return fmt.Errorf("dump: unknown table %s", t.Name)
	}
	if i < w.last {
		return fmt.Errorf("dump: table %s written after %s: tables must come in dependency order", t.Name, Tables[w.last].Name)
	}
	t = Tables[i]
	if len(vals) != len(t.Columns) {
		return fmt.Errorf("dump: %s: %d values for %d columns", t.Name, len(vals), len(t.Columns))
	}
	w.last = i
	b := &w.buf
	b.Reset()
	b.WriteString(`{"table":`)
	w.str(t.Name)
	b.WriteString(`,"row":{`)
	for j, c := range t.Columns {
		if j > 0 {
			b.WriteByte(',')
		}
		w.str(c.Name)
		b.WriteByte(':')
		if err := w.value(c, vals[j]); err != nil {
			return fmt.Errorf("dump: %s.%s: %w", t.Name, c.Name, err)
		}
	}
	b.WriteString("}}\n")
	if _, err := w.w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("dump: write: %w", err)
	}
	w.counts[t.Name]++
	w.rows++
	return nil
}

// str appends s as a JSON string.
func (w *Writer) str(s string) {
	w.enc.Encode(s) // cannot fail for a string
	w.buf.Truncate(w.buf.Len() - 1)
}

func (w *Writer) value(c Column, v any) error {
	b := &w.buf
	if v == nil {
		if !c.Null {
			return errors.New("NULL in a NOT NULL column")
		}
		b.WriteString("null")
		return nil
	}
	switch c.Kind {
	case Text, Secret, JSON:
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("%T for a %s column", v, c.Kind)
		}
		w.str(s)
	case Int:
		var n int64
		switch x := v.(type) {
		case int64:
			n = x
		case int:
			n = int64(x)
		case int32:
			n = int64(x)
		default:
			return fmt.Errorf("%T for an integer column", v)
		}
		b.WriteString(strconv.FormatInt(n, 10))
	case Bool:
		x, ok := v.(bool)
		if !ok {
			return fmt.Errorf("%T for a boolean column", v)
		}
		b.WriteString(strconv.FormatBool(x))
	case Bytes:
		x, ok := v.([]byte)
		if !ok {
			return fmt.Errorf("%T for a bytes column", v)
		}
		b.WriteByte('"')
		enc := base64.NewEncoder(base64.StdEncoding, b)
		enc.Write(x)
		enc.Close()
		b.WriteByte('"')
	default:
		return fmt.Errorf("unknown kind %v", c.Kind)
	}
	return nil
}

// Counts returns the rows written per table.
func (w *Writer) Counts() map[string]int64 { return w.counts }

// Rows returns the number of rows written.
func (w *Writer) Rows() int64 { return w.rows }

// Close writes the trailer and flushes. It does not close the underlying
// writer.
func (w *Writer) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	tr := Trailer{Rows: w.rows, Counts: map[string]int64{}}
	for _, t := range Tables {
		tr.Counts[t.Name] = w.counts[t.Name]
	}
	b, err := json.Marshal(struct {
		End Trailer `json:"end"`
	}{tr})
	if err != nil {
		return err
	}
	if _, err := w.w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("dump: write trailer: %w", err)
	}
	if err := w.w.Flush(); err != nil {
		return fmt.Errorf("dump: write: %w", err)
	}
	return nil
}

// Reader reads a dump, checking it as it goes: the header's format and
// version, each row's table, order, columns and value types, and at the
// end the trailer's counts against the rows read. Only when Next has
// returned io.EOF has the whole dump been read and verified.
type Reader struct {
	r      *bufio.Reader
	line   int
	header Header
	last   int
	counts map[string]int64
	rows   int64
	done   bool
	err    error
}

// NewReader reads and checks the header of the dump in r.
func NewReader(r io.Reader) (*Reader, error) {
	dr := &Reader{r: bufio.NewReaderSize(r, 256<<10), counts: map[string]int64{}}
	line, err := dr.readLine()
	if err == io.EOF {
		return nil, errors.New("dump: the input is empty, not an ams export")
	}
	if err != nil {
		return nil, err
	}
	// Read the format and version leniently first, so that a newer dump
	// is refused as newer rather than as malformed.
	var probe struct {
		Format  string `json:"format"`
		Version int    `json:"version"`
	}
	if err := json.Unmarshal(line, &probe); err != nil || probe.Format != Format {
		return nil, errors.New("dump: line 1 is not an ams-export header: the input is not an ams export")
	}
	if probe.Version > Version {
		return nil, fmt.Errorf("dump: format version %d is newer than this ams reads (%d): import it with the ams version that made it, or a newer one", probe.Version, Version)
	}
	if probe.Version < 1 {
		return nil, fmt.Errorf("dump: line 1: bad format version %d", probe.Version)
	}
	if err := strict(line, &dr.header); err != nil {
		return nil, fmt.Errorf("dump: line 1: malformed header: %w", err)
	}
	return dr, nil
}

// Header returns the dump's header.
func (r *Reader) Header() Header { return r.header }

// Counts returns the rows read so far per table.
func (r *Reader) Counts() map[string]int64 { return r.counts }

// Rows returns the number of rows read so far.
func (r *Reader) Rows() int64 { return r.rows }

func strict(line []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(line))
	d.DisallowUnknownFields()
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("data after the JSON object")
	}
	return nil
}

// readLine returns the next line without its newline; io.EOF at the end.
func (r *Reader) readLine() ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > MaxLine {
			return nil, fmt.Errorf("dump: line %d is longer than %d bytes", r.line+1, MaxLine)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF {
			if len(line) == 0 {
				return nil, io.EOF
			}
			break // a last line without a newline
		}
		if err != nil {
			return nil, fmt.Errorf("dump: read: %w", err)
		}
		break
	}
	r.line++
	return bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r")), nil
}

// Next returns the next row: its table and its values in the order of the
// table's columns, of the Go types of their kinds (nil for NULL), Secret
// columns in plaintext. After the last row it reads the trailer and checks
// it: io.EOF means the dump was complete and consistent. Any other error
// is final.
func (r *Reader) Next() (*Table, []any, error) {
	if r.err != nil {
		return nil, nil, r.err
	}
	t, vals, err := r.next()
	if err != nil {
		r.err = err
	}
	return t, vals, err
}

func (r *Reader) next() (*Table, []any, error) {
	if r.done {
		return nil, nil, io.EOF
	}
	line, err := r.readLine()
	if err == io.EOF {
		return nil, nil, fmt.Errorf("dump: the dump ends after line %d without its trailer: it is truncated", r.line)
	}
	if err != nil {
		return nil, nil, err
	}
	var l struct {
		Table string         `json:"table"`
		Row   map[string]any `json:"row"`
		End   *Trailer       `json:"end"`
	}
	if err := strict(line, &l); err != nil {
		return nil, nil, fmt.Errorf("dump: line %d: malformed: %w", r.line, err)
	}
	if l.End != nil {
		if l.Table != "" || l.Row != nil {
			return nil, nil, fmt.Errorf("dump: line %d: malformed: a trailer with a row", r.line)
		}
		if err := r.finish(l.End); err != nil {
			return nil, nil, err
		}
		r.done = true
		return nil, nil, io.EOF
	}
	i := tableIndex(l.Table)
	if i < 0 {
		if l.Table == "" {
			return nil, nil, fmt.Errorf("dump: line %d: malformed: neither a row nor the trailer", r.line)
		}
		return nil, nil, fmt.Errorf("dump: line %d: unknown table %q (was the dump made by a newer ams?)", r.line, l.Table)
	}
	if i < r.last {
		return nil, nil, fmt.Errorf("dump: line %d: a row of %s after rows of %s: tables must come in dependency order", r.line, l.Table, Tables[r.last].Name)
	}
	r.last = i
	t := Tables[i]
	if l.Row == nil {
		return nil, nil, fmt.Errorf("dump: line %d: malformed: a row of %s without values", r.line, t.Name)
	}
	vals := make([]any, len(t.Columns))
	for j, c := range t.Columns {
		raw, ok := l.Row[c.Name]
		if !ok {
			if c.Null {
				continue // a column added since the dump was made: NULL
			}
			if c.Default != nil {
				vals[j] = c.Default // likewise, NOT NULL with a default
				continue
			}
			return nil, nil, fmt.Errorf("dump: line %d: %s row without column %s", r.line, t.Name, c.Name)
		}
		v, err := convert(c, raw)
		if err != nil {
			return nil, nil, fmt.Errorf("dump: line %d: %s.%s: %w", r.line, t.Name, c.Name, err)
		}
		vals[j] = v
	}
	if len(l.Row) != len(t.Columns) { // columns missing or unknown
		for k := range l.Row {
			if t.Index(k) < 0 {
				return nil, nil, fmt.Errorf("dump: line %d: %s row with unknown column %q (was the dump made by a newer ams?)", r.line, t.Name, k)
			}
		}
	}
	r.counts[t.Name]++
	r.rows++
	return t, vals, nil
}

// finish checks the trailer against what was read, and that nothing
// follows it.
func (r *Reader) finish(tr *Trailer) error {
	for name := range tr.Counts {
		if Lookup(name) == nil {
			return fmt.Errorf("dump: line %d: the trailer counts an unknown table %q", r.line, name)
		}
	}
	var bad []string
	for _, t := range Tables {
		if want, got := tr.Counts[t.Name], r.counts[t.Name]; want != got {
			bad = append(bad, fmt.Sprintf("%s: %d rows, the trailer says %d", t.Name, got, want))
		}
	}
	if tr.Rows != r.rows {
		bad = append(bad, fmt.Sprintf("%d rows in all, the trailer says %d", r.rows, tr.Rows))
	}
	if len(bad) > 0 {
		return fmt.Errorf("dump: the rows do not match the trailer (the dump is damaged or incomplete): %s", strings.Join(bad, "; "))
	}
	for {
		line, err := r.readLine()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if len(bytes.TrimSpace(line)) > 0 {
			return fmt.Errorf("dump: line %d: data after the trailer", r.line)
		}
	}
}

// convert checks a value decoded from JSON (with UseNumber) against the
// column and returns it as the Go type of the column's kind.
func convert(c Column, v any) (any, error) {
	if v == nil {
		if !c.Null {
			return nil, errors.New("null in a NOT NULL column")
		}
		return nil, nil
	}
	switch c.Kind {
	case Text, Secret, JSON:
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("want a string, got %s", describe(v))
		}
		if c.Kind == JSON && !json.Valid([]byte(s)) {
			return nil, fmt.Errorf("not valid JSON text: %s", clip([]byte(s)))
		}
		return s, nil
	case Int:
		n, ok := v.(json.Number)
		if !ok {
			return nil, fmt.Errorf("want an integer, got %s", describe(v))
		}
		i, err := strconv.ParseInt(string(n), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("want an integer, got %s", n)
		}
		return i, nil
	case Bool:
		b, ok := v.(bool)
		if !ok {
			return nil, fmt.Errorf("want true or false, got %s", describe(v))
		}
		return b, nil
	case Bytes:
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("want a base64 string, got %s", describe(v))
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("bad base64: %w", err)
		}
		return b, nil
	}
	return nil, fmt.Errorf("unknown kind %v", c.Kind)
}

// describe names a decoded JSON value for an error message.
func describe(v any) string {
	switch x := v.(type) {
	case string:
		return "the string " + clip([]byte(strconv.Quote(x)))
	case json.Number:
		return "the number " + string(x)
	case bool:
		return strconv.FormatBool(x)
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	return fmt.Sprintf("%T", v)
}

func clip(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}

// OpenSecrets replaces the sealed value of each Secret column of a row
// read from a store with its plaintext, opened with s.
func OpenSecrets(t *Table, vals []any, s *seal.Sealer) error {
	return eachSecret(t, vals, func(v, aad string) (string, error) { return s.Open(v, aad) })
}

// SealSecrets replaces the plaintext of each Secret column of a row read
// from a dump with its value sealed by s, for the store.
func SealSecrets(t *Table, vals []any, s *seal.Sealer) error {
	return eachSecret(t, vals, func(v, aad string) (string, error) { return s.Seal(v, aad), nil })
}

func eachSecret(t *Table, vals []any, f func(v, aad string) (string, error)) error {
	for i, c := range t.Columns {
		if c.Kind != Secret || vals[i] == nil {
			continue
		}
		v, ok := vals[i].(string)
		a := t.Index(c.AAD)
		if !ok || a < 0 {
			return fmt.Errorf("dump: %s.%s: bad secret column", t.Name, c.Name)
		}
		aad, _ := vals[a].(string)
		out, err := f(v, aad)
		if err != nil {
			return fmt.Errorf("%s %s: %s: %w", t.Name, aad, c.Name, err)
		}
		vals[i] = out
	}
	return nil
}

// TableNames returns the names of Tables, in order.
func TableNames() []string {
	out := make([]string, len(Tables))
	for i, t := range Tables {
		out[i] = t.Name
	}
	return out
}

// Summary formats per-table counts in the order of Tables, skipping empty
// tables: "users 2, messages 10".
func Summary(counts map[string]int64) string {
	var parts []string
	for _, t := range Tables {
		if n := counts[t.Name]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", t.Name, n))
		}
	}
	if len(parts) == 0 {
		return "no rows"
	}
	return strings.Join(parts, ", ")
}
