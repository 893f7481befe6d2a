package main

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/seal"
)

// seedPlan is what one seed writes. Rows is the history: events over the
// last 31 days (a day of them past the 30 days' retention, for the purge
// to delete), two a turn. Each seeded account has one assistant and one
// webhook subscribed to message.created, and every history event of it a
// finished job and a successful delivery attempt, as the worker leaves
// them; each turn has its conversation (ten turns each), two messages,
// the turn and its three stream events. One account in a hundred turns
// belongs to the bench account (made by the ams CLI, with a key), so that
// its catch-up and history reads walk a history that grows with the
// store. The dead account's webhook points at a closed port and has Dead
// jobs pending, each for its own event, retried after the run (next_at an
// hour to six hours ahead), each with one failed attempt.
type seedPlan struct {
	Rows, Accounts, Dead int
	Now                  time.Time
	BenchUser, BenchAsst string
}

// accountsFor is the default number of seeded accounts: one per ten
// events, at most 10,000 (so 10,000 active webhooks from 100k rows on).
func accountsFor(rows int) int { return max(1, min(10000, rows/10)) }

// sink writes rows in bulk: SQLite in one transaction through prepared
// multi-row INSERTs, PostgreSQL with COPY.
type sink interface {
	copy(ctx context.Context, table string, cols []string, n int, row func(i int) []any) error
	done(ctx context.Context) error
}

type sqliteSink struct{ tx *sql.Tx }

// sqliteRowsPerInsert bounds the rows of one INSERT: the driver's binding
// cost grows with the square of a statement's parameters.
const sqliteRowsPerInsert = 16

func (s *sqliteSink) copy(ctx context.Context, table string, cols []string, n int, row func(i int) []any) error {
	insert := func(rows int) string {
		one := "(" + strings.TrimSuffix(strings.Repeat("?,", len(cols)), ",") + ")"
		return "INSERT INTO " + table + " (" + strings.Join(cols, ", ") + ") VALUES " + strings.TrimSuffix(strings.Repeat(one+",", rows), ",")
	}
	full, err := s.tx.PrepareContext(ctx, insert(sqliteRowsPerInsert))
	if err != nil {
		return fmt.Errorf("prepare %s: %w", table, err)
	}
	defer full.Close()
	buf := make([]any, 0, sqliteRowsPerInsert*len(cols))
	for i := range n {
		buf = append(buf, row(i)...)
		if len(buf) == cap(buf) {
			if _, err := full.ExecContext(ctx, buf...); err != nil {
				return fmt.Errorf("insert %s: %w", table, err)
			}
			buf = buf[:0]
		}
	}
	if len(buf) > 0 {
		if _, err := s.tx.ExecContext(ctx, insert(len(buf)/len(cols)), buf...); err != nil {
			return fmt.Errorf("insert %s: %w", table, err)
		}
	}
	return nil
}

func (s *sqliteSink) done(context.Context) error { return s.tx.Commit() }

type pgSink struct{ conn *pgx.Conn }

func (s *pgSink) copy(ctx context.Context, table string, cols []string, n int, row func(i int) []any) error {
	i := 0
	_, err := s.conn.CopyFrom(ctx, pgx.Identifier{table}, cols, pgx.CopyFromFunc(func() ([]any, error) {
		if i == n {
			return nil, nil
		}
		i++
		return row(i - 1), nil
	}))
	if err != nil {
		return fmt.Errorf("copy %s: %w", table, err)
	}
	return nil
}

func (s *pgSink) done(context.Context) error { return nil }

// ids makes ids of ams's form (prefix, 8 base62 digits of the Unix
// millisecond, 16 random base62 digits) whose random part is a function
// of a key, so that each table's pass makes the same ids again.
type ids struct{ seed uint64 }

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func (g ids) id(prefix string, ms int64, key uint64) string {
	b := make([]byte, 0, len(prefix)+24)
	b = append(b, prefix...)
	var t [8]byte
	m := uint64(ms)
	for i := 7; i >= 0; i-- {
		t[i] = base62[m%62]
		m /= 62
	}
	b = append(b, t[:]...)
	x := splitmix(g.seed ^ key)
	y := splitmix(x)
	for i := range 16 {
		v := &x
		if i >= 8 {
			v = &y
		}
		b = append(b, base62[*v%62])
		*v /= 62
	}
	return string(b)
}

// Keys of the ids: a kind in the low 4 bits, the row's number above.
const (
	kUser = iota
	kAsst
	kHook
	kConv
	kIn
	kOut
	kEvIn
	kEvOut
	kTurn
	kDlvIn
	kDlvOut
	kHash
	kDeadEv
	kDeadDlv
)

func key(kind int, n int) uint64 { return uint64(n)<<4 | uint64(kind) }

const (
	inboundText = "Remember that the meeting with the suppliers moved to 3pm on Thursday, and add a task to send them the revised figures."
	replyText   = "Noted: the meeting with the suppliers is now at 3pm on Thursday. I added the task \"Send the suppliers the revised figures\", due Thursday before the meeting. Anything else?"
)

// seed writes p into the store behind s; sealer seals the webhooks'
// secrets as the store would. It returns the rows written.
func seed(ctx context.Context, s sink, sealer *seal.Sealer, p seedPlan) (int, error) {
	g := ids{seed: uint64(time.Now().UnixNano())}
	day := 24 * time.Hour
	start := p.Now.Add(-31 * day)
	startMS := start.UnixMilli()
	spanMS := int64(31*day/time.Millisecond) - 60_000 // the newest a minute before now
	A := p.Accounts
	turns := p.Rows / 2
	total := 0
	acctMS := start.Add(-day).UnixMilli()

	// Accounts: user, assistant, webhook and its subscription.
	user := func(a int) string { return g.id(ams.PrefixUser, acctMS, key(kUser, a)) }
	asst := func(a int) string { return g.id(ams.PrefixAssistant, acctMS, key(kAsst, a)) }
	hook := func(a int) string { return g.id(ams.PrefixWebhook, acctMS, key(kHook, a)) }
	hookURL := func(a int) string { return fmt.Sprintf("https://hooks.example.com/ams/%d", a) }
	// Account A is the dead receiver's.
	if err := s.copy(ctx, "users", []string{"id", "email", "plan", "timezone", "created_at", "updated_at", "approved_at"}, A+1, func(a int) []any {
		return []any{user(a), fmt.Sprintf("user%d@example.com", a), ams.PlanStandard, "UTC", acctMS, acctMS, acctMS}
	}); err != nil {
		return total, err
	}
	if err := s.copy(ctx, "assistants", []string{"id", "user_id", "name", "model", "created_at", "updated_at"}, A+1, func(a int) []any {
		return []any{asst(a), user(a), "Assistant", ams.ModelBuiltin, acctMS, acctMS}
	}); err != nil {
		return total, err
	}
	secret := strings.Repeat("s", 32)
	if err := s.copy(ctx, "webhooks", []string{"id", "user_id", "url", "secret_sealed", "active", "status", "created_at", "updated_at"}, A+1, func(a int) []any {
		url := hookURL(a)
		if a == A {
			url = "http://127.0.0.1:9/dead" // active: no delivery of it has failed five times yet
		}
		return []any{hook(a), user(a), url, sealer.Seal(secret, hook(a)), true, ams.WebhookActive, acctMS, acctMS}
	}); err != nil {
		return total, err
	}
	if err := s.copy(ctx, "webhook_subscriptions", []string{"webhook_id", "user_id", "event_type"}, A+1, func(a int) []any {
		return []any{hook(a), user(a), ams.EventMessageCreated}
	}); err != nil {
		return total, err
	}
	total += 4 * (A + 1)

	// The turns: turn t belongs to account t%A, or to the bench account
	// (-1) one time in a hundred; conversations of ten turns.
	type conv struct {
		acct       int
		first, end int64
		n          int
	}
	var convs []conv
	turnConv := make([]int32, turns)
	cur := make(map[int]int, A+1)
	count := make(map[int]int, A+1)
	acctOf := func(t int) int {
		if t%100 == 0 {
			return -1
		}
		return t % A
	}
	ms := func(t int) int64 { return startMS + int64(t)*spanMS/int64(max(turns, 1)) }
	for t := range turns {
		a := acctOf(t)
		if count[a]%10 == 0 {
			convs = append(convs, conv{acct: a, first: ms(t)})
			cur[a] = len(convs) - 1
		}
		count[a]++
		c := cur[a]
		turnConv[t] = int32(c)
		convs[c].end, convs[c].n = ms(t), convs[c].n+2
	}
	userOf := func(a int) string {
		if a < 0 {
			return p.BenchUser
		}
		return user(a)
	}
	asstOf := func(a int) string {
		if a < 0 {
			return p.BenchAsst
		}
		return asst(a)
	}
	convID := func(c int) string { return g.id(ams.PrefixConversation, convs[c].first, key(kConv, c)) }
	if err := s.copy(ctx, "conversations", []string{"id", "user_id", "assistant_id", "title", "message_count", "last_message_at", "created_at", "updated_at"},
		len(convs), func(c int) []any {
			v := convs[c]
			return []any{convID(c), userOf(v.acct), asstOf(v.acct), inboundText[:40], v.n, v.end, v.first, v.end}
		}); err != nil {
		return total, err
	}
	total += len(convs)

	type turnRow struct {
		user, asst, conv, in, out, evIn, evOut, turn string
		ms                                           int64
		acct                                         int
	}
	turnOf := func(t int) turnRow {
		m := ms(t)
		a := acctOf(t)
		return turnRow{user: userOf(a), asst: asstOf(a), conv: convID(int(turnConv[t])),
			in: g.id(ams.PrefixMessage, m, key(kIn, t)), out: g.id(ams.PrefixMessage, m, key(kOut, t)),
			evIn: g.id(ams.PrefixEvent, m, key(kEvIn, t)), evOut: g.id(ams.PrefixEvent, m, key(kEvOut, t)),
			turn: g.id(ams.PrefixTurn, m, key(kTurn, t)), ms: m, acct: a}
	}
	if err := s.copy(ctx, "messages", []string{"id", "user_id", "assistant_id", "conversation_id", "direction", "content", "created_at", "updated_at"},
		2*turns, func(i int) []any {
			r := turnOf(i / 2)
			if i%2 == 0 {
				return []any{r.in, r.user, r.asst, r.conv, ams.DirectionInbound, inboundText, r.ms, r.ms}
			}
			return []any{r.out, r.user, r.asst, r.conv, ams.DirectionOutbound, replyText, r.ms, r.ms}
		}); err != nil {
		return total, err
	}
	total += 2 * turns

	msgData := func(r turnRow, out bool) string {
		id, dir, text := r.in, ams.DirectionInbound, inboundText
		if out {
			id, dir, text = r.out, ams.DirectionOutbound, replyText
		}
		b, _ := json.Marshal(map[string]any{"assistant_id": r.asst, "content": text, "conversation_id": r.conv, "direction": dir,
			"message_id": id, "metadata": map[string]any{}})
		return string(b)
	}
	if err := s.copy(ctx, "events", []string{"id", "user_id", "type", "data", "created_at"}, 2*turns, func(i int) []any {
		r := turnOf(i / 2)
		id := r.evIn
		if i%2 == 1 {
			id = r.evOut
		}
		return []any{id, r.user, ams.EventMessageCreated, msgData(r, i%2 == 1), r.ms}
	}); err != nil {
		return total, err
	}
	total += 2 * turns

	// Jobs and attempts: the seeded accounts' events only (the bench
	// account has no webhook in its history).
	var hooked []int
	for t := range turns {
		if acctOf(t) >= 0 {
			hooked = append(hooked, t)
		}
	}
	if err := s.copy(ctx, "webhook_jobs", []string{"user_id", "webhook_id", "event_id", "attempts", "state", "next_at", "lease_until", "created_at", "updated_at"},
		2*len(hooked), func(i int) []any {
			r := turnOf(hooked[i/2])
			ev := r.evIn
			if i%2 == 1 {
				ev = r.evOut
			}
			return []any{r.user, hook(r.acct), ev, 1, "succeeded", r.ms, 0, r.ms, r.ms + 40}
		}); err != nil {
		return total, err
	}
	total += 2 * len(hooked)
	status := 200
	if err := s.copy(ctx, "webhook_deliveries", []string{"id", "user_id", "webhook_id", "event_id", "event_type", "attempt", "url", "success",
		"status_code", "duration_ms", "response_body", "created_at"}, 2*len(hooked), func(i int) []any {
		t := hooked[i/2]
		r := turnOf(t)
		ev, k := r.evIn, key(kDlvIn, t)
		if i%2 == 1 {
			ev, k = r.evOut, key(kDlvOut, t)
		}
		return []any{g.id(ams.PrefixDelivery, r.ms+40, k), r.user, hook(r.acct), ev, ams.EventMessageCreated, 1, hookURL(r.acct), true,
			status, 35, "ok", r.ms + 40}
	}); err != nil {
		return total, err
	}
	total += 2 * len(hooked)

	hashOf := func(t int) string {
		var b [32]byte
		for i := range 4 {
			v := splitmix(g.seed ^ key(kHash, t) ^ uint64(i)<<60)
			for j := range 8 {
				b[8*i+j] = byte(v >> (8 * j))
			}
		}
		return hex.EncodeToString(b[:])
	}
	if err := s.copy(ctx, "turns", []string{"id", "user_id", "assistant_id", "conversation_id", "inbound_message_id", "reply_message_id", "status",
		"cancel_requested", "request_hash", "lease_until", "created_at", "updated_at", "attempt", "completed_at"}, turns, func(t int) []any {
		r := turnOf(t)
		return []any{r.turn, r.user, r.asst, r.conv, r.in, r.out, "completed", false, hashOf(t), 0, r.ms, r.ms, 1, r.ms}
	}); err != nil {
		return total, err
	}
	total += turns
	if err := s.copy(ctx, "turn_events", []string{"turn_id", "seq", "type", "data", "created_at"}, 3*turns, func(i int) []any {
		r := turnOf(i / 3)
		var typ string
		var data any
		switch i % 3 {
		case 0:
			typ, data = "turn.started", map[string]any{"turn_id": r.turn, "inbound_message_id": r.in, "conversation_id": r.conv, "assistant_id": r.asst, "resumed": false}
		case 1:
			typ, data = "message.delta", map[string]any{"delta": replyText}
		default:
			typ, data = "message.completed", map[string]any{"id": r.out, "object": "message", "assistant_id": r.asst, "conversation_id": r.conv,
				"direction": ams.DirectionOutbound, "content": replyText, "metadata": map[string]any{},
				"created_at": time.UnixMilli(r.ms).UTC().Format(time.RFC3339Nano)}
		}
		b, _ := json.Marshal(data)
		return []any{r.turn, i%3 + 1, typ, string(b), r.ms}
	}); err != nil {
		return total, err
	}
	total += 3 * turns

	// The dead receiver: its events over the last hour, one failed
	// attempt each, and their jobs pending for a retry later.
	deadMS := func(i int) int64 { return p.Now.Add(-time.Hour).UnixMilli() + int64(i)*3_600_000/int64(max(p.Dead, 1)) }
	deadEv := func(i int) string { return g.id(ams.PrefixEvent, deadMS(i), key(kDeadEv, i)) }
	if err := s.copy(ctx, "events", []string{"id", "user_id", "type", "data", "created_at"}, p.Dead, func(i int) []any {
		b, _ := json.Marshal(map[string]any{"assistant_id": asst(A), "content": inboundText, "conversation_id": "conv_dead", "direction": "inbound",
			"message_id": fmt.Sprintf("msg_dead%d", i), "metadata": map[string]any{}})
		return []any{deadEv(i), user(A), ams.EventMessageCreated, string(b), deadMS(i)}
	}); err != nil {
		return total, err
	}
	retry := p.Now.Add(time.Hour).UnixMilli()
	if err := s.copy(ctx, "webhook_jobs", []string{"user_id", "webhook_id", "event_id", "attempts", "state", "next_at", "lease_until", "created_at", "updated_at"},
		p.Dead, func(i int) []any {
			return []any{user(A), hook(A), deadEv(i), 1, "pending", retry + int64(i)*5*3_600_000/int64(max(p.Dead, 1)), 0, deadMS(i), deadMS(i) + 10}
		}); err != nil {
		return total, err
	}
	if err := s.copy(ctx, "webhook_deliveries", []string{"id", "user_id", "webhook_id", "event_id", "event_type", "attempt", "url", "success",
		"duration_ms", "error", "response_body", "created_at"}, p.Dead, func(i int) []any {
		return []any{g.id(ams.PrefixDelivery, deadMS(i)+10, key(kDeadDlv, i)), user(A), hook(A), deadEv(i), ams.EventMessageCreated, 1,
			"http://127.0.0.1:9/dead", false, 1, "connection refused", "", deadMS(i) + 10}
	}); err != nil {
		return total, err
	}
	total += 3 * p.Dead
	return total, s.done(ctx)
}
