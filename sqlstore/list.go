package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"

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

// list runs a cursor-paginated query over table from: the rows matching
// f, in seq order (newest first unless p.Order is asc), one page from
// p.After or p.Before; the cursor must match f too. cols are the selected
// columns, read by scan.
func list[T any](ctx context.Context, q *Queries, cols, from string, f *filter, p ams.ListParams, scan func(scanner) (T, error)) (*ams.Page[T], error) {
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
	if cursorID != "" {
		var seq int64
		err := q.r.QueryRow(ctx, "SELECT seq FROM "+from+" WHERE "+f.where+" AND id = "+f.next(), append(f.args[:len(f.args):len(f.args)], cursorID)...).Scan(&seq)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, ams.ParamError("resource_missing", param, "No such object in this list: '%s'", cursorID)
		} else if err != nil {
			return nil, q.fail("find cursor", err)
		}
		if desc == forward {
			page.add("seq < $?", seq)
		} else {
			page.add("seq > $?", seq)
		}
	}
	order := " ORDER BY seq ASC"
	if desc == forward {
		order = " ORDER BY seq DESC"
	}
	rows, err := q.r.Query(ctx, "SELECT "+cols+" FROM "+from+" WHERE "+page.where+order+" LIMIT "+page.next(), append(page.args, limit+1)...)
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
