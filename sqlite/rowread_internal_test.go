package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestRowReaderScans: the row reader gives the values database/sql's Scan
// would for the destinations the stores use: named kinds of string and
// integer, NULL into a pointer and into sql.Null*, a blob copied out of
// the driver's buffer, booleans stored as integers; an integer that
// overflows its destination, NULL into a string, or a count of
// destinations that differs from the columns' is an error, and no row is
// sql.ErrNoRows.
func TestRowReaderScans(t *testing.T) {
	ctx := context.Background()
	db := tempDB(t)
	r := db.rq.rows

	type plan string
	type small int8
	var (
		s    plan
		n    small
		b    bool
		blob []byte
		ptr  *string
		ns   sql.NullString
		ni   sql.NullInt64
		f    float64
		anyv any
	)
	err := r.QueryRow(ctx, `SELECT 'pro', 7, 1, x'00ff', NULL, NULL, 42, 2.5, 'x'`).
		Scan(&s, &n, &b, &blob, &ptr, &ns, &ni, &f, &anyv)
	if err != nil {
		t.Fatal(err)
	}
	if s != "pro" || n != 7 || !b || string(blob) != "\x00\xff" || ptr != nil || ns.Valid || !ni.Valid || ni.Int64 != 42 || f != 2.5 || anyv != "x" {
		t.Errorf("scanned %q %d %v %x %v %+v %+v %v %v", s, n, b, blob, ptr, ns, ni, f, anyv)
	}
	if err := r.QueryRow(ctx, `SELECT 'set'`).Scan(&ptr); err != nil || ptr == nil || *ptr != "set" {
		t.Errorf("a value into a pointer: %v %v", ptr, err)
	}

	if err := r.QueryRow(ctx, `SELECT 300`).Scan(&n); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("300 into an int8: %v, want out of range", err)
	}
	ended, cancel := context.WithCancel(ctx)
	cancel()
	if err := r.QueryRow(ended, `SELECT 1`).Scan(&n); !errors.Is(err, context.Canceled) {
		t.Errorf("a read with an ended context: %v, want context.Canceled", err)
	}
	var str string
	if err := r.QueryRow(ctx, `SELECT NULL`).Scan(&str); err == nil {
		t.Error("NULL into a string succeeded")
	}
	if err := r.QueryRow(ctx, `SELECT 1, 2`).Scan(&n); err == nil {
		t.Error("two columns into one destination succeeded")
	}
	var ch chan int
	if err := r.QueryRow(ctx, `SELECT 1`).Scan(&ch); err == nil || !strings.Contains(err.Error(), "unsupported Scan") {
		t.Errorf("an integer into a channel: %v, want unsupported Scan", err)
	}
	if err := r.QueryRow(ctx, `SELECT 1 WHERE 0`).Scan(&n); !errors.Is(err, sql.ErrNoRows) {
		t.Errorf("no row: %v, want sql.ErrNoRows", err)
	}
	if err := r.QueryRow(ctx, `SELECT nope FROM nowhere`).Scan(&n); err == nil {
		t.Error("a query of a missing table succeeded")
	}
	// The connection survives a failed query.
	if err := r.QueryRow(ctx, `SELECT 5`).Scan(&n); err != nil || n != 5 {
		t.Errorf("after the errors: %d %v", n, err)
	}
}

// TestRowReaderPool: at most n queries run at once; a caller that finds
// every connection in use waits, and gives up when its context ends. The
// connection given back last is taken first. After close, queries fail.
func TestRowReaderPool(t *testing.T) {
	ctx := context.Background()
	db := tempDB(t)
	r := newRowReader(2, db.rq.rows.open)
	a, err := r.get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := r.get(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a third connection of two: %v, want the context's deadline", err)
	}
	got := make(chan *rowConn)
	go func() {
		c, err := r.get(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- c
	}()
	r.put(a)
	if c := <-got; c != a {
		t.Error("the waiting caller did not get the connection given back")
	}
	r.put(a)
	r.put(b)
	if c, _ := r.get(ctx); c != b {
		t.Error("the connection given back last was not taken first")
	} else {
		r.put(c)
	}
	var n int
	if err := r.QueryRow(ctx, `SELECT 1`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	r.close()
	if err := r.QueryRow(ctx, `SELECT 1`).Scan(&n); err == nil {
		t.Error("a query after close succeeded")
	}
	r.close() // twice is harmless
}

// TestRowReaderCloseWaitsForConnectionsInUse: close returns only after the
// connection in use is given back, and closes it then, so that DB.Close
// gives up the wal-index view after every connection (walindex_unix.go).
func TestRowReaderCloseWaitsForConnectionsInUse(t *testing.T) {
	ctx := context.Background()
	db := tempDB(t)
	r := newRowReader(2, db.rq.rows.open)
	c, err := r.get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.queryRow(ctx, r.open, `SELECT 1`, nil); err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	go func() {
		r.close()
		close(closed)
	}()
	select {
	case <-closed:
		t.Fatal("close returned while a connection was in use")
	case <-time.After(100 * time.Millisecond):
	}
	r.put(c)
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("close did not return after the connection was given back")
	}
	if c.dc != nil {
		t.Error("the connection given back after close is still open")
	}
	var n int
	if err := r.QueryRow(ctx, `SELECT 1`).Scan(&n); !errors.Is(err, errClosed) {
		t.Errorf("a query after close: %v, want %v", err, errClosed)
	}
}
