// Package sqlite is the embedded storage engine of ams: a SQLite database
// file under the data directory, opened with the pure-Go modernc.org/sqlite
// driver. It implements ams.Store.
//
// The store's statements and rules are package sqlstore's, shared with
// package postgres and held to one behaviour by the storage suite
// (package storetest). This package is, first, how SQLite differs; then a
// layer that makes it fast, which changes no answer.
//
// # The dialect: what differs from PostgreSQL
//
// Read these first, in this order:
//
//   - db.go: opening. Writes go through one connection (SQLite allows one
//     writer at a time; queueing them in the pool avoids SQLITE_BUSY
//     churn), reads through a pool of read-only connections that WAL mode
//     lets run beside the writer. Other processes (the CLI while a server
//     runs) share the file safely: every connection waits on the busy
//     timeout instead of failing. The pragmas, and the migrations
//     (migrations/, applied by sqlstore.Migrate, numbered as PostgreSQL's).
//   - conn.go: the Dialect (no row locks: writers are serialized; the
//     result codes of a unique violation, a full disk, a busy file) and
//     database/sql adapted to sqlstore.Conn, the write connection's
//     statements prepared once.
//   - claim.go: the delivery and e-mail queue claims of a single writer: a
//     claim in a write transaction sees every other claim committed, so it
//     needs no SKIP LOCKED (PostgreSQL's claim).
//   - export.go: the tables described from pragma_table_info for the dump,
//     import by INSERT (PostgreSQL: COPY).
//   - perm.go: the database files readable by ams's user only.
//   - fault.go: a full disk, for tests.
//
// # The speed layer
//
// Five pieces (about 980 lines) that the benchmarks of docs/benchmarks.md
// justify; each is the store's plumbing, not its rules, and the storage
// suite runs through all of them:
//
//   - group.go: group commit. Write transactions that arrive while one
//     commits run together, each in a SAVEPOINT, under one COMMIT
//     (committer; the engine's InTx).
//   - rowread.go: single-row reads (a key's authentication, GET of one
//     record) on driver connections of their own, without database/sql's
//     per-query costs (rowReader).
//   - authgen.go: the authentication generation (ams.AuthWatch) answered
//     without a query while nothing was committed: it watches the
//     wal-index header (walindex_unix.go, SQLite's shared memory, mapped
//     read-only; walindex_other.go where it cannot be), else PRAGMA
//     data_version.
//   - checkpoint.go: WAL checkpoints on a connection of their own, off the
//     writer's path.
package sqlite
