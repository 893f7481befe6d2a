package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"sync"
	"time"

	"github.com/amsdev/ams/sqlstore"
)

// rowReader runs the read pool's single-row queries (QueryRow outside a
// transaction: a key's authentication, GET of one record) on read-only
// driver connections of its own, with each connection's statements
// prepared once.
//
// Why not database/sql: for a query that reads one row by its key, the
// pool's statement lookup, its Rows and its Scan cost about a quarter of
// the query (GET /v1/messages/{id}, docs/benchmarks.md, issue 17). Here a
// query takes a connection from the pool (the one given back last, warm
// in the CPU's caches), runs its statement, copies the row's values and
// gives the connection back before the caller scans.
//
// Values are converted as database/sql converts them for the types the
// stores scan into (Row.Scan): strings, integers, floats and booleans
// and kinds of them, []byte, any, time.Time, pointers to any of these for
// NULL, and sql.Scanner. Another destination is an error, which the
// storage suite would show.
type rowReader struct {
	open   func() (driver.Conn, error)
	slots  chan struct{} // a token for each connection in use, n at most
	mu     sync.Mutex
	idle   []*rowConn // last in, first out
	closed bool
}

// rowConn is one connection and its prepared statements.
type rowConn struct {
	dc    driver.Conn
	stmts map[string]driver.Stmt
	args  []driver.NamedValue
}

// maxRowStmts bounds each connection's prepared statements; beyond it a
// statement is prepared for the query and closed after it.
const maxRowStmts = 256

// errClosed is the error of a read after DB.Close.
var errClosed = errors.New("sqlite: database is closed")

func newRowReader(n int, open func() (driver.Conn, error)) *rowReader {
	return &rowReader{open: open, slots: make(chan struct{}, n)}
}

// get takes an idle connection, or a new one (opened by its first query)
// while fewer than n are in use; otherwise it waits for one or for ctx.
func (r *rowReader) get(ctx context.Context) (*rowConn, error) {
	select {
	case r.slots <- struct{}{}:
	default:
		select {
		case r.slots <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		<-r.slots
		return nil, errClosed
	}
	if n := len(r.idle); n > 0 {
		c := r.idle[n-1]
		r.idle = r.idle[:n-1]
		return c, nil
	}
	return &rowConn{}, nil
}

// put gives c back, closing it if the pool has closed.
func (r *rowReader) put(c *rowConn) {
	r.mu.Lock()
	if r.closed {
		c.close()
	} else {
		r.idle = append(r.idle, c)
	}
	r.mu.Unlock()
	<-r.slots
}

// QueryRow runs query with args and returns its first row, or
// sql.ErrNoRows from Scan when it has none.
func (r *rowReader) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Row {
	c, err := r.get(ctx)
	if err != nil {
		return errRow{err}
	}
	vals, err := c.queryRow(ctx, r.open, query, args)
	if errors.Is(err, driver.ErrBadConn) {
		c.close()
	}
	r.put(c)
	return valuesRow{vals, err}
}

// queryRow runs query on c. The context is looked at once, before the
// query, and not handed to the driver, which would start a goroutine per
// query to watch it: that cost about 3% of an authenticated GET
// (docs/benchmarks.md, issue 17). The reads that come here, a record by
// key or a count, run to their end in microseconds to milliseconds.
func (c *rowConn) queryRow(ctx context.Context, open func() (driver.Conn, error), query string, args []any) ([]driver.Value, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ctx = context.Background()
	if c.dc == nil {
		dc, err := open()
		if err != nil {
			return nil, err
		}
		c.dc, c.stmts = dc, map[string]driver.Stmt{}
	}
	st, ok := c.stmts[query]
	if !ok {
		pc, ok := c.dc.(driver.ConnPrepareContext)
		if !ok {
			return nil, fmt.Errorf("driver connection %T cannot prepare with a context", c.dc)
		}
		var err error
		if st, err = pc.PrepareContext(ctx, query); err != nil {
			return nil, err
		}
		if len(c.stmts) < maxRowStmts {
			c.stmts[query] = st
		} else {
			defer st.Close()
		}
	}
	q, ok := st.(driver.StmtQueryContext)
	if !ok {
		return nil, fmt.Errorf("driver statement %T cannot query with a context", st)
	}
	c.args = c.args[:0]
	for i, a := range args {
		v, err := driver.DefaultParameterConverter.ConvertValue(a)
		if err != nil {
			return nil, fmt.Errorf("converting argument $%d type: %w", i+1, err)
		}
		c.args = append(c.args, driver.NamedValue{Ordinal: i + 1, Value: v})
	}
	rows, err := q.QueryContext(ctx, c.args)
	clear(c.args)
	if err != nil {
		return nil, err
	}
	vals := make([]driver.Value, len(rows.Columns()))
	err = rows.Next(vals)
	// Closing the rows ends the read transaction.
	if cerr := rows.Close(); err == nil || err == io.EOF {
		if cerr != nil {
			return nil, cerr
		}
	}
	if err == io.EOF {
		return nil, sql.ErrNoRows
	}
	if err != nil {
		return nil, err
	}
	for i, v := range vals {
		if b, ok := v.([]byte); ok {
			vals[i] = append([]byte(nil), b...) // the driver may reuse its buffer
		}
	}
	return vals, nil
}

func (c *rowConn) close() {
	if c.dc == nil {
		return
	}
	for _, s := range c.stmts {
		s.Close()
	}
	c.dc.Close()
	c.dc, c.stmts = nil, nil
}

// close closes the idle connections, waits for those in use to be given
// back (and closed by put), and returns; later queries fail. Waiting
// matters: DB.Close then gives up the wal-index view, whose file
// descriptor must outlive every connection (walindex_unix.go). Queries
// here run without the caller's context and end in milliseconds.
func (r *rowReader) close() {
	r.mu.Lock()
	r.closed = true
	for _, c := range r.idle {
		c.close()
	}
	r.idle = nil
	r.mu.Unlock()
	// Every slot taken means no connection in use; a get that takes one
	// meanwhile sees closed and gives it back.
	for range cap(r.slots) {
		r.slots <- struct{}{}
	}
	for range cap(r.slots) {
		<-r.slots
	}
}

// valuesRow is a row read by rowReader, or the error of its query.
type valuesRow struct {
	vals []driver.Value
	err  error
}

func (r valuesRow) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	if len(dest) != len(r.vals) {
		return fmt.Errorf("sql: expected %d destination arguments in Scan, not %d", len(r.vals), len(dest))
	}
	for i, d := range dest {
		if err := convertAssign(d, r.vals[i]); err != nil {
			return fmt.Errorf("sql: Scan error on column index %d: %w", i, err)
		}
	}
	return nil
}

// convertAssign stores src, a value of the driver, in dest, as
// database/sql's Rows.Scan would for the destinations rowReader supports.
func convertAssign(dest, src any) error {
	switch d := dest.(type) {
	case sql.Scanner:
		return d.Scan(src)
	case *string:
		switch s := src.(type) {
		case string:
			*d = s
			return nil
		case []byte:
			*d = string(s)
			return nil
		}
	case *int64:
		if s, ok := src.(int64); ok {
			*d = s
			return nil
		}
	case *int:
		if s, ok := src.(int64); ok && int64(int(s)) == s {
			*d = int(s)
			return nil
		}
	case *bool:
		switch s := src.(type) {
		case bool:
			*d = s
			return nil
		case int64:
			if s == 0 || s == 1 {
				*d = s == 1
				return nil
			}
		}
	case *[]byte:
		switch s := src.(type) {
		case []byte:
			*d = s
			return nil
		case string:
			*d = []byte(s)
			return nil
		case nil:
			*d = nil
			return nil
		}
	case *any:
		*d = src
		return nil
	}
	return convertReflect(dest, src)
}

// convertReflect handles the destinations of a named type (a kind of
// string or integer) and pointers for NULL.
func convertReflect(dest, src any) error {
	dv := reflect.ValueOf(dest)
	if dv.Kind() != reflect.Pointer || dv.IsNil() {
		return fmt.Errorf("destination not a pointer")
	}
	ev := dv.Elem()
	if ev.Kind() == reflect.Pointer {
		if src == nil {
			ev.SetZero()
			return nil
		}
		nv := reflect.New(ev.Type().Elem())
		if err := convertAssign(nv.Interface(), src); err != nil {
			return err
		}
		ev.Set(nv)
		return nil
	}
	if src == nil {
		return fmt.Errorf("converting NULL to %s is unsupported", ev.Kind())
	}
	if t, ok := src.(time.Time); ok && ev.Type() == reflect.TypeOf(t) {
		ev.Set(reflect.ValueOf(t))
		return nil
	}
	switch ev.Kind() {
	case reflect.String:
		switch s := src.(type) {
		case string:
			ev.SetString(s)
			return nil
		case []byte:
			ev.SetString(string(s))
			return nil
		case int64:
			ev.SetString(strconv.FormatInt(s, 10))
			return nil
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if s, ok := src.(int64); ok {
			if ev.OverflowInt(s) {
				return fmt.Errorf("converting driver.Value type int64 (%d) to a %s: value out of range", s, ev.Kind())
			}
			ev.SetInt(s)
			return nil
		}
	case reflect.Float32, reflect.Float64:
		switch s := src.(type) {
		case float64:
			ev.SetFloat(s)
			return nil
		case int64:
			ev.SetFloat(float64(s))
			return nil
		}
	case reflect.Bool:
		switch s := src.(type) {
		case bool:
			ev.SetBool(s)
			return nil
		case int64:
			if s == 0 || s == 1 {
				ev.SetBool(s == 1)
				return nil
			}
		}
	}
	return fmt.Errorf("unsupported Scan, storing driver.Value type %T into type %T", src, dest)
}
