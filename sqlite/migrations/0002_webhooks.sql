-- 0002: webhooks, their subscriptions, the delivery queue, delivery
-- attempts, and queued e-mails.

CREATE TABLE webhooks (
    seq           INTEGER PRIMARY KEY,
    id            TEXT    NOT NULL UNIQUE,
    user_id       TEXT    NOT NULL REFERENCES users (id),
    url           TEXT    NOT NULL,
    secret_sealed TEXT    NOT NULL,
    active        INTEGER NOT NULL DEFAULT 1,
    status        TEXT    NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'failing')),
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL
);
CREATE INDEX webhooks_user ON webhooks (user_id, seq);

-- One row per (webhook, event type): the fan-out of an event is one
-- indexed INSERT ... SELECT in the event's transaction.
CREATE TABLE webhook_subscriptions (
    webhook_id TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    user_id    TEXT NOT NULL,
    event_type TEXT NOT NULL,
    PRIMARY KEY (webhook_id, event_type)
);
CREATE INDEX webhook_subscriptions_user_type ON webhook_subscriptions (user_id, event_type);

-- The delivery queue: one job per (event, webhook). A worker leases due
-- jobs (lease_until); a job whose worker died is due again when its lease
-- runs out.
CREATE TABLE webhook_jobs (
    seq         INTEGER PRIMARY KEY,
    user_id     TEXT    NOT NULL,
    webhook_id  TEXT    NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event_id    TEXT    NOT NULL REFERENCES events (id),
    attempts    INTEGER NOT NULL DEFAULT 0,
    state       TEXT    NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'succeeded', 'failed', 'canceled')),
    next_at     INTEGER NOT NULL,
    lease_until INTEGER NOT NULL DEFAULT 0,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);
CREATE INDEX webhook_jobs_due ON webhook_jobs (next_at, seq) WHERE state = 'pending';
CREATE INDEX webhook_jobs_webhook ON webhook_jobs (webhook_id, state);
CREATE INDEX webhook_jobs_event ON webhook_jobs (event_id);

CREATE TABLE webhook_deliveries (
    seq           INTEGER PRIMARY KEY,
    id            TEXT    NOT NULL UNIQUE,
    user_id       TEXT    NOT NULL,
    webhook_id    TEXT    NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event_id      TEXT    NOT NULL,
    event_type    TEXT    NOT NULL,
    attempt       INTEGER NOT NULL,
    url           TEXT    NOT NULL,
    success       INTEGER NOT NULL,
    status_code   INTEGER,
    duration_ms   INTEGER NOT NULL,
    error         TEXT,
    response_body TEXT    NOT NULL DEFAULT '',
    created_at    INTEGER NOT NULL
);
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, seq);
CREATE INDEX webhook_deliveries_created ON webhook_deliveries (created_at);

-- E-mails are queued in the transaction that causes them and sent by the
-- mailer, so a crash between the two loses none.
CREATE TABLE emails (
    seq         INTEGER PRIMARY KEY,
    id          TEXT    NOT NULL UNIQUE,
    to_addr     TEXT    NOT NULL,
    subject     TEXT    NOT NULL,
    body        TEXT    NOT NULL,
    state       TEXT    NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'sent', 'failed')),
    attempts    INTEGER NOT NULL DEFAULT 0,
    last_error  TEXT,
    next_at     INTEGER NOT NULL,
    lease_until INTEGER NOT NULL DEFAULT 0,
    created_at  INTEGER NOT NULL,
    sent_at     INTEGER
);
CREATE INDEX emails_due ON emails (next_at) WHERE state = 'pending';
