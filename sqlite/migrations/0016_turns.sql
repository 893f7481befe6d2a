-- 0016: turns (ams.Turn): one row per POST /v1/messages, stored running
-- with the inbound message, ended (completed, failed, cancelled) with the
-- reply. lease_until is renewed by the process running the turn, so that
-- another can tell an abandoned one; cancel_requested asks it to stop.
-- idempotency_key is the request's Idempotency-Key (NULL without one): a
-- retry with it finds the turn. attempt counts its runs (a resume adds one):
-- renewing and finishing are conditioned on it, so a process that lost its
-- lease cannot overwrite the attempt that took over. Times are Unix
-- milliseconds.
CREATE TABLE turns (
    seq                INTEGER PRIMARY KEY,
    id                 TEXT    NOT NULL UNIQUE,
    user_id            TEXT    NOT NULL REFERENCES users (id),
    assistant_id       TEXT    NOT NULL REFERENCES assistants (id),
    conversation_id    TEXT    NOT NULL,
    inbound_message_id TEXT    NOT NULL,
    reply_message_id   TEXT    NOT NULL DEFAULT '',
    status             TEXT    NOT NULL CHECK (status IN ('running', 'completed', 'failed', 'cancelled')),
    error              TEXT,
    cancel_requested   INTEGER NOT NULL DEFAULT 0,
    idempotency_key    TEXT,
    request_hash       TEXT    NOT NULL DEFAULT '',
    lease_until        INTEGER NOT NULL DEFAULT 0,
    created_at         INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL,
    attempt            INTEGER NOT NULL DEFAULT 1,
    completed_at       INTEGER
);
CREATE INDEX turns_user ON turns (user_id, seq);
CREATE INDEX turns_conversation ON turns (user_id, conversation_id, seq);
CREATE UNIQUE INDEX turns_inbound ON turns (inbound_message_id);
CREATE UNIQUE INDEX turns_key ON turns (user_id, idempotency_key) WHERE idempotency_key IS NOT NULL;

-- The events of a turn's stream, numbered per turn, so that a client can
-- resume a stream from its Last-Event-ID (deltas coalesced before they are
-- written). data is the event's JSON.
CREATE TABLE turn_events (
    turn_id    TEXT    NOT NULL,
    seq        INTEGER NOT NULL,
    type       TEXT    NOT NULL,
    data       TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (turn_id, seq)
);

-- The turn whose engine ran an action, and its number among the turn's
-- tool calls: a resumed turn finds its committed calls by them, and the
-- unique index keeps one action per call.
ALTER TABLE actions ADD COLUMN turn_id TEXT;
ALTER TABLE actions ADD COLUMN call_seq INTEGER;
CREATE UNIQUE INDEX actions_turn_call ON actions (turn_id, call_seq) WHERE turn_id IS NOT NULL;
