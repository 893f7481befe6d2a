-- 0027: history partitioned by time (issue 33). webhook_deliveries (the
-- attempts) and turn_events grow with traffic and are kept for the events'
-- retention (30 days): partitioned by day on created_at (Unix
-- milliseconds), retention drops the partitions wholly past it instead of
-- deleting their rows one by one (postgres.DB.Purge, which also makes the
-- days ahead). A DEFAULT partition takes rows of days that have no
-- partition of their own (a store whose janitor has not run yet, tests
-- with a clock in another year); the purge deletes its old rows in
-- batches like SQLite's.
--
-- events stay one table, purged in batches: the claim and the delivery
-- read an event by id from its job, and a lookup by id without the
-- partition key reads every partition (measured on 34 day partitions: a
-- join of 100 jobs to their events took 188 ms against 8 ms unpartitioned,
-- the planner hashing every partition). Partitioning them needs the
-- event's time carried with its job; see docs/architecture.md.
--
-- A partitioned table's unique keys must hold created_at: deliveries'
-- primary key becomes (seq, created_at) and their ids are unique with
-- their time, (id, created_at) (an id is random, 128 bits: two rows of one
-- id are a write repeated, which this still refuses when it repeats the
-- time too); turn events are unique by (turn_id, seq, created_at) (a
-- stream event is written once, with the time it was made at, also when
-- a flush is retried). PostgreSQL 15 has no identity columns on
-- partitioned tables, so deliveries' seq takes a sequence of its own,
-- continued from the old column's.

-- webhook_deliveries
ALTER TABLE webhook_deliveries RENAME TO webhook_deliveries_old;
ALTER INDEX webhook_deliveries_webhook RENAME TO webhook_deliveries_old_webhook;
ALTER INDEX webhook_deliveries_created RENAME TO webhook_deliveries_old_created;
CREATE SEQUENCE webhook_deliveries_seq;
CREATE TABLE webhook_deliveries (
    seq           BIGINT  NOT NULL DEFAULT nextval('webhook_deliveries_seq'),
    id            TEXT    NOT NULL,
    user_id       TEXT    NOT NULL,
    webhook_id    TEXT    NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event_id      TEXT    NOT NULL,
    event_type    TEXT    NOT NULL,
    attempt       INTEGER NOT NULL,
    url           TEXT    NOT NULL,
    success       BOOLEAN NOT NULL,
    status_code   INTEGER,
    duration_ms   BIGINT  NOT NULL,
    error         TEXT,
    response_body TEXT    NOT NULL DEFAULT '',
    created_at    BIGINT  NOT NULL,
    PRIMARY KEY (seq, created_at)
) PARTITION BY RANGE (created_at);
ALTER SEQUENCE webhook_deliveries_seq OWNED BY webhook_deliveries.seq;
CREATE TABLE webhook_deliveries_default PARTITION OF webhook_deliveries DEFAULT;
INSERT INTO webhook_deliveries SELECT * FROM webhook_deliveries_old;
SELECT setval('webhook_deliveries_seq', coalesce((SELECT max(seq) FROM webhook_deliveries_old), 0) + 1, false);
DROP TABLE webhook_deliveries_old;
CREATE UNIQUE INDEX webhook_deliveries_id ON webhook_deliveries (id, created_at);
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, seq);
CREATE INDEX webhook_deliveries_created ON webhook_deliveries (created_at);

-- turn_events
ALTER TABLE turn_events RENAME TO turn_events_old;
ALTER INDEX turn_events_created RENAME TO turn_events_old_created;
ALTER TABLE turn_events_old RENAME CONSTRAINT turn_events_pkey TO turn_events_old_pkey;
CREATE TABLE turn_events (
    turn_id    TEXT    NOT NULL,
    seq        BIGINT  NOT NULL,
    type       TEXT    NOT NULL,
    data       JSON    NOT NULL,
    created_at BIGINT  NOT NULL,
    PRIMARY KEY (turn_id, seq, created_at)
) PARTITION BY RANGE (created_at);
CREATE TABLE turn_events_default PARTITION OF turn_events DEFAULT;
INSERT INTO turn_events SELECT * FROM turn_events_old;
DROP TABLE turn_events_old;
CREATE INDEX turn_events_created ON turn_events (created_at);
