// Package dump is the portable export format of an ams store, shared by
// both storage engines (packages sqlite and postgres) and the `ams export`
// and `ams import` commands: the list of tables in dependency order with
// their columns, the writer and the reader.
//
// A dump is JSON Lines. The first line is the header,
//
//	{"format":"ams-export","version":1,"engine":"sqlite","schema_version":5,"created_at":"2026-11-21T10:00:00Z"}
//
// then one line per row, tables in the order of Tables (parents before
// children), each table's rows in its stable order (seq, or the primary
// key),
//
//	{"table":"users","row":{"seq":1,"id":"usr_…","email":"ann@example.com",…}}
//
// and last a trailer with the number of rows of every table, so that a
// truncated dump is refused on import:
//
//	{"end":{"rows":42,"counts":{"users":1,"api_keys":2,…}}}
//
// Values are JSON strings, integers (counts, seq values, and every time: Unix
// milliseconds, as both engines store them), booleans and null. JSON
// columns (event data, integration config, …) are strings holding the JSON
// text exactly as stored; binary columns are base64 strings. Webhook
// signing secrets and integration secrets, sealed at rest with the store's
// key, are written in plaintext so that the target store can seal them with
// its own key: a dump is as secret as the database and its key together.
//
// The format has a version. The reader refuses a dump of a newer version
// than its own, and a dump naming a table or column it does not know (made
// by a newer ams). It reads a dump made before a table or a nullable column
// was added (the table has no rows, the column is NULL), so adding those
// keeps the version; any other change to the tables or columns raises it.
package dump

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Kind is the type of a column's values in a dump, and the Go type of the
// values the engines read and write.
type Kind int

// Column kinds.
const (
	// Text is a string (Go string).
	Text Kind = iota
	// Int is a 64-bit integer (Go int64): counts, seq values, and times
	// as Unix milliseconds.
	Int
	// Bool is a boolean (Go bool); SQLite stores 0 or 1.
	Bool
	// JSON is JSON text (Go string), kept exactly as stored.
	JSON
	// Bytes is binary data (Go []byte), base64 in the dump.
	Bytes
	// Secret is a string sealed at rest with the store's key (internal/seal),
	// bound to the value of the column named by Column.AAD. The engines
	// open it on export and seal it on import; in the dump and in the
	// values passed to Writer.Write and returned by Reader.Next it is the
	// plaintext.
	Secret
)

// String names the kind, as the schema check's messages do.
func (k Kind) String() string {
	switch k {
	case Text:
		return "text"
	case Int:
		return "integer"
	case Bool:
		return "boolean"
	case JSON:
		return "json"
	case Bytes:
		return "bytes"
	case Secret:
		return "secret"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Column is one column of a table.
type Column struct {
	Name string // key in the dump
	SQL  string // column name in both databases
	Kind Kind
	Null bool // may be NULL
	// AAD names (by Name) the column whose value a Secret column is
	// sealed with as additional data.
	AAD string
	// Default is the value of a NOT NULL column added since a dump was
	// made, for rows of a dump that lack it (nil: the row is refused).
	Default any
}

// Table is one persistent table of the store.
type Table struct {
	Name    string
	Columns []Column
	// Seq is true when the table has an integer seq column that orders
	// its lists (an identity column in PostgreSQL, the rowid in SQLite):
	// the import keeps its values and moves the counter past them.
	Seq bool
	// OrderBy are the SQL columns, all text or integer, that give the
	// table's rows a stable order: seq, or the primary key.
	OrderBy []string
	// Local are columns whose values mean something only in the database
	// that wrote them (events.txid, a PostgreSQL transaction id): they
	// are not in the dump, and an import leaves them at the target's
	// default (on PostgreSQL the importing transaction's id, so imported
	// events come before any written later; 0 on SQLite).
	Local []string
}

// SQLColumns returns the SQL names of t's columns, in order.
func (t *Table) SQLColumns() []string {
	out := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		out[i] = c.SQL
	}
	return out
}

// Index returns the position of the column with the dump name, or -1.
func (t *Table) Index(name string) int {
	for i, c := range t.Columns {
		if c.Name == name {
			return i
		}
	}
	return -1
}

func col(name string, k Kind) Column        { return Column{Name: name, SQL: name, Kind: k} }
func nullCol(name string, k Kind) Column    { return Column{Name: name, SQL: name, Kind: k, Null: true} }
func seqCol() Column                        { return col("seq", Int) }
func cols(k Kind, names ...string) []Column { return colsOf(col, k, names) }
func colsOf(f func(string, Kind) Column, k Kind, names []string) []Column {
	out := make([]Column, len(names))
	for i, n := range names {
		out[i] = f(n, k)
	}
	return out
}

func join(parts ...[]Column) []Column { return slices.Concat(parts...) }

// metadataCol is the metadata column (migration 0014): a JSON object as
// text, "{}" in rows of dumps made before it.
func metadataCol() []Column {
	return []Column{{Name: "metadata", SQL: "metadata", Kind: Text, Default: "{}"}}
}

// Tables are the persistent tables of both engines' schemas, parents
// before children (the order of a dump and of an import). Times are Int
// (Unix milliseconds) in both engines.
var Tables = []*Table{
	{Name: "users", Seq: true, OrderBy: []string{"seq"}, Columns: join(
		[]Column{seqCol()},
		cols(Text, "id", "email", "password_hash", "plan"),
		cols(Int, "rpm", "rpd"),
		cols(Text, "timezone"),
		cols(Int, "created_at", "updated_at"),
		[]Column{nullCol("approved_at", Int), col("admin", Bool), nullCol("max_webhooks", Int)},
		// Signed up without a verified address yet (migration 0018; NULL,
		// verified, in older dumps).
		[]Column{nullCol("unverified_since", Int)},
		// The e-mail notification settings (migration 0017; on, that is
		// false, in older dumps).
		[]Column{{Name: "key_reminder_emails_off", SQL: "key_reminder_emails_off", Kind: Bool, Default: false},
			{Name: "webhook_failing_emails_off", SQL: "webhook_failing_emails_off", Kind: Bool, Default: false}},
	)},
	{Name: "api_keys", Seq: true, OrderBy: []string{"seq"}, Columns: join(
		[]Column{seqCol()},
		cols(Text, "id", "user_id", "name", "hint", "hash", "permissions"),
		cols(Int, "created_at"),
		colsOf(nullCol, Int, []string{"last_used_at", "expires_at", "revoked_at"}),
		// The rotation reminders sent (migration 0015; NULL in older dumps).
		colsOf(nullCol, Int, []string{"expiry_reminded_at", "age_reminded_at"}),
		// The OAuth grant that made the key (migration 0020 on SQLite,
		// 0021 on PostgreSQL; NULL in older dumps and for other keys).
		colsOf(nullCol, Text, []string{"oauth_client_id", "oauth_grant_id"}),
	)},
	{Name: "assistants", Seq: true, OrderBy: []string{"seq"}, Columns: join(
		[]Column{seqCol()},
		cols(Text, "id", "user_id", "name", "description", "instructions", "model"),
		cols(Int, "created_at", "updated_at"),
		[]Column{nullCol("deleted_at", Int)},
		metadataCol(),
		[]Column{{Name: "tools", SQL: "tools", Kind: Text, Default: "[]"}, {Name: "require_approval", SQL: "require_approval", Kind: Text, Default: "[]"},
			{Name: "multitask_strategy", SQL: "multitask_strategy", Kind: Text, Default: "enqueue"}},
	)},
	{Name: "conversations", Seq: true, OrderBy: []string{"seq"}, Columns: join(
		[]Column{seqCol()},
		cols(Text, "id", "user_id", "assistant_id", "title"),
		cols(Int, "message_count", "last_message_at", "created_at", "updated_at"),
		metadataCol(),
	)},
	{Name: "messages", Seq: true, OrderBy: []string{"seq"}, Columns: join(
		[]Column{seqCol()},
		cols(Text, "id", "user_id", "assistant_id", "conversation_id", "direction", "content"),
		cols(Int, "created_at", "updated_at"),
		metadataCol(),
	)},
	{Name: "integrations", Seq: true, OrderBy: []string{"seq"}, Columns: join(
		[]Column{seqCol()},
		cols(Text, "id", "user_id", "provider", "status"),
		[]Column{col("config", JSON), nullCol("last_error", Text)},
		cols(Int, "connected_at", "created_at", "updated_at"),
		[]Column{{Name: "secrets", SQL: "secrets", Kind: Secret, Null: true, AAD: "id"}},
		// The sync state (migration 0021/0022; absent from older dumps).
		[]Column{{Name: "sync_failures", SQL: "sync_failures", Kind: Int, Default: int64(0)}, nullCol("next_sync_at", Int),
			{Name: "pending_deletion", SQL: "pending_deletion", Kind: Text, Default: ""}},
		// An MCP integration's name and settings (migration 0031; NULL in
		// older dumps and for the other providers).
		[]Column{nullCol("name", Text), nullCol("mcp", JSON)},
	)},
	{Name: "tasks", Seq: true, OrderBy: []string{"seq"}, Columns: join(
		[]Column{seqCol()},
		cols(Text, "id", "user_id", "assistant_id", "title", "notes", "status"),
		colsOf(nullCol, Int, []string{"due_at", "remind_at", "reminded_at", "completed_at"}),
		cols(Int, "created_at", "updated_at"),
		metadataCol(),
	)},
	{Name: "calendar_events", Seq: true, OrderBy: []string{"seq"}, Columns: join(
		[]Column{seqCol()},
		cols(Text, "id", "user_id"),
		[]Column{nullCol("assistant_id", Text)},
		cols(Text, "title", "description", "location"),
		cols(Int, "starts_at", "ends_at"),
		colsOf(nullCol, Int, []string{"remind_at", "reminded_at"}),
		[]Column{nullCol("integration_id", Text)},
		cols(Text, "external_uid", "external_path", "external_etag"),
		cols(Int, "created_at", "updated_at"),
		metadataCol(),
		// Deleted events kept for restoring (migration 0021/0022; absent
		// from older dumps).
		[]Column{nullCol("deleted_at", Int), {Name: "deleted_by", SQL: "deleted_by", Kind: Text, Default: ""}},
	)},
	{Name: "actions", Seq: true, OrderBy: []string{"seq"}, Columns: join(
		[]Column{seqCol()},
		cols(Text, "id", "user_id", "assistant_id", "conversation_id", "type"),
		[]Column{col("input", JSON), col("status", Text), nullCol("result", JSON), nullCol("error", JSON), col("created_at", Int)},
		// The turn and call number of a tool run by an engine (migration
		// 0016; NULL in older dumps and for direct runs).
		[]Column{nullCol("turn_id", Text), nullCol("call_seq", Int)},
		// How long the tool ran (migration 0031; absent from older dumps).
		[]Column{{Name: "duration_ms", SQL: "duration_ms", Kind: Int, Default: int64(0)}},
	)},
	{Name: "turns", Seq: true, OrderBy: []string{"seq"}, Columns: join(
		[]Column{seqCol()},
		cols(Text, "id", "user_id", "assistant_id", "conversation_id", "inbound_message_id", "reply_message_id", "status"),
		[]Column{nullCol("error", JSON), col("cancel_requested", Bool), nullCol("idempotency_key", Text), col("request_hash", Text)},
		cols(Int, "lease_until", "created_at", "updated_at", "attempt"),
		[]Column{nullCol("completed_at", Int)},
		// The turn lifecycle (migrations 0025 and 0029; their defaults in
		// older dumps).
		[]Column{{Name: "background", SQL: "background", Kind: Bool, Default: false},
			{Name: "multitask_strategy", SQL: "multitask_strategy", Kind: Text, Default: "enqueue"},
			nullCol("options", JSON), nullCol("required_action", JSON), nullCol("calls", JSON),
			{Name: "input_tokens", SQL: "input_tokens", Kind: Int, Default: int64(0)},
			{Name: "output_tokens", SQL: "output_tokens", Kind: Int, Default: int64(0)},
			{Name: "stop_reason", SQL: "stop_reason", Kind: Text, Default: ""},
			nullCol("action_expires_at", Int), nullCol("deadline", Int), nullCol("action_ids", JSON)},
	)},
	{Name: "turn_events", OrderBy: []string{"turn_id", "seq"}, Columns: join(
		cols(Text, "turn_id"),
		[]Column{col("seq", Int), col("type", Text), col("data", JSON), col("created_at", Int)},
	)},
	{Name: "events", Seq: true, OrderBy: []string{"seq"}, Local: []string{"txid"}, Columns: join(
		[]Column{seqCol()},
		cols(Text, "id", "user_id", "type"),
		[]Column{col("data", JSON), col("created_at", Int)},
	)},
	{Name: "idempotency_keys", OrderBy: []string{"user_id", "key"}, Columns: join(
		cols(Text, "user_id", "key", "request_hash"),
		[]Column{col("done", Bool), col("status", Int), col("header", JSON), nullCol("body", Bytes), col("created_at", Int)},
	)},
	{Name: "webhooks", Seq: true, OrderBy: []string{"seq"}, Columns: join(
		[]Column{seqCol()},
		cols(Text, "id", "user_id", "url"),
		[]Column{{Name: "secret", SQL: "secret_sealed", Kind: Secret, AAD: "id"}},
		[]Column{col("active", Bool), col("status", Text)},
		cols(Int, "created_at", "updated_at"),
		[]Column{{Name: "previous_secret", SQL: "previous_secret_sealed", Kind: Secret, Null: true, AAD: "id"},
			nullCol("previous_secret_expires_at", Int)},
		metadataCol(),
		// Receives the management audit events (SQLite migration 0024,
		// PostgreSQL 0025; false in older dumps).
		[]Column{col("management_events", Bool)},
		// Ordered (migration 0032; false in older dumps).
		[]Column{col("ordered", Bool)},
		// The failure streak, payload and filter (migration 0033; 0,
		// 'full' and NULL in older dumps).
		[]Column{{Name: "failure_streak", SQL: "failure_streak", Kind: Int, Default: int64(0)},
			{Name: "payload", SQL: "payload", Kind: Text, Default: "full"},
			nullCol("filter_assistant_id", Text), nullCol("filter_conversation_id", Text), nullCol("filter_metadata", Text)},
	)},
	{Name: "webhook_subscriptions", OrderBy: []string{"webhook_id", "event_type"}, Columns: cols(Text, "webhook_id", "user_id", "event_type")},
	{Name: "webhook_jobs", Seq: true, OrderBy: []string{"seq"}, Columns: join(
		[]Column{seqCol()},
		cols(Text, "user_id", "webhook_id", "event_id"),
		[]Column{col("attempts", Int), col("state", Text)},
		cols(Int, "next_at", "lease_until", "created_at", "updated_at"),
	)},
	{Name: "webhook_deliveries", Seq: true, OrderBy: []string{"seq"}, Columns: join(
		[]Column{seqCol()},
		cols(Text, "id", "user_id", "webhook_id", "event_id", "event_type"),
		[]Column{col("attempt", Int), col("url", Text), col("success", Bool), nullCol("status_code", Int), col("duration_ms", Int),
			nullCol("error", Text), col("response_body", Text), col("created_at", Int)},
	)},
	{Name: "emails", Seq: true, OrderBy: []string{"seq"}, Columns: join(
		[]Column{seqCol()},
		cols(Text, "id", "to_addr", "subject", "body", "state"),
		[]Column{col("attempts", Int), nullCol("last_error", Text)},
		cols(Int, "next_at", "lease_until", "created_at"),
		[]Column{nullCol("sent_at", Int)},
		// What it is for, counted by the per-recipient caps (migration
		// postgres 0023, sqlite 0022; '' in older dumps).
		[]Column{{Name: "kind", SQL: "kind", Kind: Text, Default: ""}},
	)},
	{Name: "oauth_clients", Seq: true, OrderBy: []string{"seq"}, Columns: join(
		[]Column{seqCol()},
		// user_id is NULL for a client registered by RFC 7591 (0028).
		cols(Text, "id"), []Column{nullCol("user_id", Text)}, cols(Text, "name"),
		[]Column{col("redirect_uris", JSON), col("public", Bool), col("secret_hash", Text)},
		cols(Int, "created_at", "updated_at"),
	)},
	{Name: "oauth_tokens", OrderBy: []string{"kind", "signature"}, Columns: join(
		cols(Text, "kind", "signature", "request_id", "client_id", "user_id", "scopes"),
		[]Column{col("active", Bool), col("data", Bytes)},
		cols(Int, "expires_at", "created_at"),
	)},
	{Name: "login_sessions", OrderBy: []string{"id_hash"}, Columns: join(
		cols(Text, "id_hash", "user_id"),
		cols(Int, "created_at", "expires_at"),
	)},
	// The links e-mailed to accounts, by their hash (migration 0018).
	{Name: "account_tokens", OrderBy: []string{"hash"}, Columns: join(
		cols(Text, "hash", "user_id", "purpose", "email"),
		cols(Int, "created_at", "expires_at"),
		[]Column{nullCol("used_at", Int)},
	)},
	{Name: "usage_minutes", OrderBy: []string{"user_id", "minute_start"}, Columns: join(
		cols(Text, "user_id"),
		cols(Int, "minute_start", "allowed", "refused"),
	)},
}

// Bookkeeping is the table of applied migrations: it is not moved; the
// target has its own from `ams migrate` (both engines number alike since
// issue 28, but each records what it applied itself).
const Bookkeeping = "schema_migrations"

// Ephemeral are tables whose rows only coordinate processes for a few
// seconds or minutes (rate-limit windows, login throttling, credential
// locks), or count changes for the processes' caches (the authentication
// generation), or are derived from others and rebuilt as those are
// imported (webhook_wakes, by the triggers on webhook_jobs): they are not
// exported. Every other table of a store must be in
// Tables, or export and import fail, so that a table added later is never
// left behind silently.
var Ephemeral = []string{"rate_windows", "login_failures", "oauth_locks", "auth_state", "auth_listeners", "webhook_wakes"}

// Lookup returns the table with the name, or nil.
func Lookup(name string) *Table {
	for _, t := range Tables {
		if t.Name == name {
			return t
		}
	}
	return nil
}

func tableIndex(name string) int {
	for i, t := range Tables {
		if t.Name == name {
			return i
		}
	}
	return -1
}

// LiveColumn is a column as a database reports it.
type LiveColumn struct {
	Name    string
	Type    string // the engine's declared type, e.g. "INTEGER", "bigint"
	NotNull bool
}

// CheckSchema compares a store's live schema (table name to columns) with
// Tables. Every live table must be in Tables, in Ephemeral, or be
// Bookkeeping; every table of Tables must exist with exactly its columns
// (besides its Local ones),
// each of a type that typeOK accepts for its Kind and as nullable as it
// says. The error lists every difference.
func CheckSchema(live map[string][]LiveColumn, typeOK func(k Kind, liveType string) bool) error {
	var errs []string
	names := make([]string, 0, len(live))
	for n := range live {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if Lookup(n) == nil && n != Bookkeeping && !slices.Contains(Ephemeral, n) {
			errs = append(errs, fmt.Sprintf("table %s is unknown to the export (add it to dump.Tables, or to dump.Ephemeral if its rows need not move)", n))
		}
	}
	for _, t := range Tables {
		lc, ok := live[t.Name]
		if !ok {
			errs = append(errs, fmt.Sprintf("table %s is missing from the database", t.Name))
			continue
		}
		byName := map[string]LiveColumn{}
		for _, c := range lc {
			byName[c.Name] = c
		}
		for _, c := range t.Columns {
			l, ok := byName[c.SQL]
			if !ok {
				errs = append(errs, fmt.Sprintf("column %s.%s is missing from the database", t.Name, c.SQL))
				continue
			}
			delete(byName, c.SQL)
			if !typeOK(c.Kind, l.Type) {
				errs = append(errs, fmt.Sprintf("column %s.%s has type %s, which the export does not read as %s", t.Name, c.SQL, l.Type, c.Kind))
			}
			if l.NotNull == c.Null {
				want := "NOT NULL"
				if c.Null {
					want = "nullable"
				}
				errs = append(errs, fmt.Sprintf("column %s.%s should be %s", t.Name, c.SQL, want))
			}
		}
		for _, l := range lc {
			if _, extra := byName[l.Name]; extra && !slices.Contains(t.Local, l.Name) {
				errs = append(errs, fmt.Sprintf("column %s.%s is unknown to the export (add it to dump.Tables)", t.Name, l.Name))
			}
		}
	}
	if len(errs) > 0 {
		return errors.New("dump: the database schema and the export format differ:\n  " + strings.Join(errs, "\n  "))
	}
	return nil
}
