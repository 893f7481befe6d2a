package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/amsdev/ams"
)

// scanner is the part of a Row or Rows that scan functions use.
type scanner interface{ Scan(dest ...any) error }

// findOne reads one record with scan, mapping no row to ams.NotFound.
func findOne[T any](ctx context.Context, q *Queries, scan func(scanner) (T, error), object, id, query string, args ...any) (T, error) {
	v, err := scan(q.r.QueryRow(ctx, query, args...))
	if errors.Is(err, sql.ErrNoRows) {
		var zero T
		return zero, ams.NotFound(object, id)
	}
	if err != nil {
		var zero T
		return zero, q.fail("find "+object, err)
	}
	return v, nil
}

// collect reads every row of a query with scan.
func collect[T any](ctx context.Context, c Conn, what string, scan func(scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := c.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", what, err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("scan %s: %w", what, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list %s: %w", what, err)
	}
	return out, nil
}

// filter builds a WHERE condition with numbered placeholders.
type filter struct {
	where string
	args  []any
}

// where starts a filter with cond, whose placeholders are $1..$len(args).
func where(cond string, args ...any) *filter {
	return &filter{where: cond, args: append([]any(nil), args...)}
}

// add appends "AND cond", where cond uses "$?" for its one argument.
func (f *filter) add(cond string, arg any) *filter {
	f.args = append(f.args, arg)
	n := "$" + strconv.Itoa(len(f.args))
	out := make([]byte, 0, len(cond)+4)
	for i := 0; i < len(cond); i++ {
		if cond[i] == '$' && i+1 < len(cond) && cond[i+1] == '?' {
			out = append(out, n...)
			i++
			continue
		}
		out = append(out, cond[i])
	}
	f.where += " AND " + string(out)
	return f
}

// next returns the placeholder of the next argument.
func (f *filter) next() string { return "$" + strconv.Itoa(len(f.args)+1) }

// addRow appends "AND (cols) op (args)", a row-value comparison (both
// engines compare row values left to right), or "AND col op arg" for one
// column.
func (f *filter) addRow(cols []string, op string, vals []any) *filter {
	ph := make([]string, len(vals))
	for i, v := range vals {
		f.args = append(f.args, v)
		ph[i] = "$" + strconv.Itoa(len(f.args))
	}
	if len(cols) == 1 {
		f.where += " AND " + cols[0] + " " + op + " " + ph[0]
	} else {
		f.where += " AND (" + strings.Join(cols, ", ") + ") " + op + " (" + strings.Join(ph, ", ") + ")"
	}
	return f
}

// listQuery is what a cursor-paginated list reads.
type listQuery struct {
	cols string  // the selected columns
	from string  // the table
	f    *filter // the rows of the list; a cursor must be one of them
	// key are the integer columns that order the list, oldest first,
	// unique together; nil is seq.
	key []string
	// visible, when set, is a condition on the rows a page shows but not
	// on the cursor: rows of the list that cannot be shown yet (events
	// that a transaction still running could precede) are held back, and
	// a cursor that is one of them still places the page.
	visible string
}

var seqKey = []string{"seq"}

// list runs a cursor-paginated query over table from: the rows matching
// f, in seq order (newest first unless p.Order is asc), one page from
// p.After or p.Before; the cursor must match f too. cols are the selected
// columns, read by scan.
func list[T any](ctx context.Context, q *Queries, cols, from string, f *filter, p ams.ListParams, scan func(scanner) (T, error)) (*ams.Page[T], error) {
	return listOf(ctx, q, listQuery{cols: cols, from: from, f: f}, p, scan)
}

// listOf runs the cursor-paginated query lq: the rows matching lq.f (and
// lq.visible), ordered by lq.key (newest first unless p.Order is asc),
// one page from p.After or p.Before. The cursor's key is read first, and
// the page is the rows whose key compares past it, as a row value.
func listOf[T any](ctx context.Context, q *Queries, lq listQuery, p ams.ListParams, scan func(scanner) (T, error)) (*ams.Page[T], error) {
	key := lq.key
	if key == nil {
		key = seqKey
	}
	f, from := lq.f, lq.from
	limit := p.Limit
	if limit <= 0 {
		limit = 20
	}
	desc := p.Order != ams.OrderAsc
	cursorID, param := p.After, "after"
	if p.Before != "" {
		cursorID, param = p.Before, "before"
	}
	// forward: the page walks in the list's own order from the cursor.
	forward := p.Before == ""
	page := where(f.where, f.args...)
	if lq.visible != "" {
		page.where += " AND (" + lq.visible + ")"
	}
	if cursorID != "" {
		vals := make([]int64, len(key))
		dest := make([]any, len(key))
		args := make([]any, len(key))
		for i := range vals {
			dest[i] = &vals[i]
		}
		err := q.r.QueryRow(ctx, "SELECT "+strings.Join(key, ", ")+" FROM "+from+" WHERE "+f.where+" AND id = "+f.next(), append(f.args[:len(f.args):len(f.args)], cursorID)...).Scan(dest...)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, ams.ParamError("resource_missing", param, "No such object in this list: '%s'", ams.Clip(cursorID))
		} else if err != nil {
			return nil, q.fail("find cursor", err)
		}
		for i, v := range vals {
			args[i] = v
		}
		if desc == forward {
			page.addRow(key, "<", args)
		} else {
			page.addRow(key, ">", args)
		}
	}
	dir := " ASC"
	if desc == forward {
		dir = " DESC"
	}
	order := " ORDER BY " + strings.Join(key, dir+", ") + dir
	rows, err := q.r.Query(ctx, "SELECT "+lq.cols+" FROM "+from+" WHERE "+page.where+order+" LIMIT "+page.next(), append(page.args, limit+1)...)
	if err != nil {
		return nil, q.fail("list "+from, err)
	}
	defer rows.Close()
	out := &ams.Page[T]{Data: make([]T, 0, limit)}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("scan %s: %w", from, err)
		}
		out.Data = append(out.Data, v)
	}
	if err := rows.Err(); err != nil {
		return nil, q.fail("list "+from, err)
	}
	if len(out.Data) > limit {
		out.Data, out.HasMore = out.Data[:limit], true
	}
	if !forward {
		slices.Reverse(out.Data)
	}
	return out, nil
}
