-- 0027: history partitioned by time (issue 33). events, webhook_deliveries
-- (the attempts) and turn_events grow with traffic and are kept for the
-- events' retention (30 days): partitioned by day on created_at (Unix
-- milliseconds), retention drops the partitions wholly past it instead of
-- deleting their rows one by one (postgres.DB.Purge, which also creates
-- the days ahead). A DEFAULT partition takes rows of days that have no
-- partition of their own (a store whose maintenance has not run yet,
-- tests with a clock in another year); the purge deletes its old rows in
-- batches like SQLite's.
--
-- A partitioned table's unique keys must hold created_at: events' and
-- deliveries' primary keys become (seq, created_at), and their ids are
-- unique with their time, (id, created_at) (an id is random, 128 bits:
-- two rows of one id are a write repeated, which this still refuses
-- when it repeats the time too, as a retried write does). The foreign key from webhook_jobs.event_id
-- to events(id) cannot reference a partitioned table's non-unique id and
-- is dropped: jobs are created in the transaction of their event, or by
-- a redelivery/recovery that reads the event first, and the purge deletes
-- an event's jobs with it. PostgreSQL 15 has no identity columns on
-- partitioned tables, so seq takes its value from a sequence of its own,
-- continued from the old column's.

ALTER TABLE webhook_jobs DROP CONSTRAINT IF EXISTS webhook_jobs_event_id_fkey;

-- events
ALTER TABLE events RENAME TO events_old;
ALTER INDEX events_user RENAME TO events_old_user;
ALTER INDEX events_user_type RENAME TO events_old_user_type;
ALTER INDEX events_created RENAME TO events_old_created;
CREATE SEQUENCE events_seq;
CREATE TABLE events (
    seq        BIGINT  NOT NULL DEFAULT nextval('events_seq'),
    id         TEXT    NOT NULL,
    user_id    TEXT    NOT NULL REFERENCES users (id),
    type       TEXT    NOT NULL,
    data       JSON    NOT NULL,
    created_at BIGINT  NOT NULL,
    txid       BIGINT  NOT NULL DEFAULT pg_current_xact_id()::text::bigint,
    PRIMARY KEY (seq, created_at)
) PARTITION BY RANGE (created_at);
ALTER SEQUENCE events_seq OWNED BY events.seq;
CREATE TABLE events_default PARTITION OF events DEFAULT;
INSERT INTO events (seq, id, user_id, type, data, created_at, txid)
    SELECT seq, id, user_id, type, data, created_at, txid FROM events_old;
SELECT setval('events_seq', coalesce((SELECT max(seq) FROM events_old), 0) + 1, false);
DROP TABLE events_old;
CREATE UNIQUE INDEX events_id ON events (id, created_at);
CREATE INDEX events_user ON events (user_id, txid, seq);
CREATE INDEX events_user_type ON events (user_id, type, txid, seq);
CREATE INDEX events_created ON events (created_at);

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
