-- 0009: the catch-up order of events is (txid, seq). On PostgreSQL txid
-- is the id of the inserting transaction, so that a list can hold back
-- the events of transactions still running (see postgres migration 0009).
-- SQLite has one writer: its commits come in seq order already, and txid
-- is always 0, so the same queries and indexes serve both engines.
ALTER TABLE events ADD COLUMN txid INTEGER NOT NULL DEFAULT 0;

DROP INDEX events_user;
DROP INDEX events_user_type;
CREATE INDEX events_user ON events (user_id, txid, seq);
CREATE INDEX events_user_type ON events (user_id, type, txid, seq);
