package sqlite

import (
	"context"
	"testing"
)

// TestPositional: a statement whose parameters are $1 … $n in order,
// once each, is prepared with plain ? (bound by position, at once);
// any other stays as written. A literal or a quoted name holding a $
// is not a parameter.
func TestPositional(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`INSERT INTO t (a, b) VALUES ($1, $2), ($3, $4)`, `INSERT INTO t (a, b) VALUES (?, ?), (?, ?)`},
		{`SELECT json_extract(d, '$.a'), "$x" FROM t WHERE a = $1 AND b = 'it''s $2'`, `SELECT json_extract(d, '$.a'), "$x" FROM t WHERE a = ? AND b = 'it''s $2'`},
		{`SELECT 1`, `SELECT 1`},
		{`UPDATE t SET a = $1 WHERE b > $1`, `UPDATE t SET a = $1 WHERE b > $1`},                          // used twice
		{`SELECT $2, $1`, `SELECT $2, $1`},                                                                // out of order
		{`SELECT $1, $3`, `SELECT $1, $3`},                                                                // a gap
		{`SELECT ?1, $2`, `SELECT ?1, $2`},                                                                // other forms
		{`SELECT $1 -- $2`, `SELECT $1 -- $2`},                                                            // a comment
		{`SELECT 'unterminated $1`, `SELECT 'unterminated $1`},                                            // not SQL
		{`SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11`, `SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?`}, // two digits
	} {
		if got := positional(c.in); got != c.want {
			t.Errorf("positional(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestPositionalBindsInOrder: a multi-row INSERT run through the write
// connection's statement cache (prepared with plain ?) stores each value
// in its own column and row.
func TestPositionalBindsInOrder(t *testing.T) {
	ctx := context.Background()
	db := tempDB(t)
	if _, err := db.write.ExecContext(ctx, `CREATE TABLE pos (a TEXT, b INTEGER, c TEXT)`); err != nil {
		t.Fatal(err)
	}
	ins := `INSERT INTO pos (a, b, c) VALUES ($1, $2, $3), ($4, $5, $6)`
	c := conn{db: db.write, stmts: db.ws}
	for range 2 { // prepared the first time, run prepared the second
		if _, err := c.Exec(ctx, ins, "x", 1, "$.y", "z", 2, "w"); err != nil {
			t.Fatal(err)
		}
	}
	if db.ws.get(ctx, ins, false) == nil {
		t.Fatal("the INSERT is not in the statement cache")
	}
	rows, err := db.write.QueryContext(ctx, `SELECT a || '/' || b || '/' || c FROM pos ORDER BY rowid`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var s string
		rows.Scan(&s)
		got = append(got, s)
	}
	if want := []string{"x/1/$.y", "z/2/w", "x/1/$.y", "z/2/w"}; len(got) != 4 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] || got[3] != want[3] {
		t.Fatalf("rows %q, want %q", got, want)
	}
}
