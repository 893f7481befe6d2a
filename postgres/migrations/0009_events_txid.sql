-- 0009: the catch-up order of events. seq is taken at insert, not at
-- commit: a transaction that inserted an event first may commit after one
-- that inserted later, and a reader following GET /v1/events?order=asc
-- &after= past the later one would never see the earlier. So events carry
-- the id of the transaction that inserted them (txid), the list's order is
-- (txid, seq), and a list shows only the events whose txid is below the
-- xmin of its snapshot (sqlstore.Dialect.EventsVisible): every transaction
-- with a smaller id has ended, and any transaction still running or yet to
-- start has a larger one, so nothing can later appear before a cursor.
--
-- Rows written before this migration keep txid 0: they all committed
-- before it, and stay first, in seq order. Adding the column with a
-- constant default rewrites nothing; the default then becomes the
-- inserting transaction's id (xid8, 64 bits with the epoch: it never
-- wraps).
ALTER TABLE events ADD COLUMN txid BIGINT NOT NULL DEFAULT 0;
ALTER TABLE events ALTER COLUMN txid SET DEFAULT pg_current_xact_id()::text::bigint;

DROP INDEX events_user;
DROP INDEX events_user_type;
CREATE INDEX events_user ON events (user_id, txid, seq);
CREATE INDEX events_user_type ON events (user_id, type, txid, seq);
