-- 0025: turns an integrator builds on (DESIGN.md, "Turns an integrator
-- builds on"). Turns gain the statuses queued and requires_action, and
-- actions the status rejected (a call the user did not approve); SQLite
-- cannot alter a CHECK, so both tables are rebuilt with their indexes.
--
-- New turn columns:
--   background          1 for a turn started with background: true;
--   multitask_strategy  enqueue | reject | interrupt, as the send asked;
--   options             JSON of what the turn needs to start and run later:
--                       the queued inbound message (content, metadata) and
--                       the per-request options (instructions, tools,
--                       tool_choice, max_output_tokens, response_format);
--   required_action     JSON of the turn's required_action while it waits;
--   calls               JSON array of the turn's tool calls so far with
--                       their outputs (what a resumed engine is given);
--   input_tokens, output_tokens  the turn's usage, summed over attempts;
--   stop_reason         '' until the turn ends;
--   action_expires_at   when a required action expires (NULL otherwise);
--   deadline            when a background turn must have ended (NULL for
--                       a foreground turn).
CREATE TABLE turns_new (
    seq                INTEGER PRIMARY KEY,
    id                 TEXT    NOT NULL UNIQUE,
    user_id            TEXT    NOT NULL REFERENCES users (id),
    assistant_id       TEXT    NOT NULL REFERENCES assistants (id),
    conversation_id    TEXT    NOT NULL,
    inbound_message_id TEXT    NOT NULL,
    reply_message_id   TEXT    NOT NULL DEFAULT '',
    status             TEXT    NOT NULL CHECK (status IN ('queued', 'running', 'requires_action', 'completed', 'failed', 'cancelled')),
    error              TEXT,
    cancel_requested   INTEGER NOT NULL DEFAULT 0,
    idempotency_key    TEXT,
    request_hash       TEXT    NOT NULL DEFAULT '',
    lease_until        INTEGER NOT NULL DEFAULT 0,
    created_at         INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL,
    attempt            INTEGER NOT NULL DEFAULT 1,
    completed_at       INTEGER,
    background         INTEGER NOT NULL DEFAULT 0,
    multitask_strategy TEXT    NOT NULL DEFAULT 'enqueue',
    options            TEXT,
    required_action    TEXT,
    calls              TEXT,
    input_tokens       INTEGER NOT NULL DEFAULT 0,
    output_tokens      INTEGER NOT NULL DEFAULT 0,
    stop_reason        TEXT    NOT NULL DEFAULT '',
    action_expires_at  INTEGER,
    deadline           INTEGER
);
INSERT INTO turns_new (seq, id, user_id, assistant_id, conversation_id, inbound_message_id, reply_message_id,
    status, error, cancel_requested, idempotency_key, request_hash, lease_until, created_at, updated_at, attempt, completed_at)
SELECT seq, id, user_id, assistant_id, conversation_id, inbound_message_id, reply_message_id,
    status, error, cancel_requested, idempotency_key, request_hash, lease_until, created_at, updated_at, attempt, completed_at
FROM turns;
DROP TABLE turns;
ALTER TABLE turns_new RENAME TO turns;
CREATE INDEX turns_user ON turns (user_id, seq);
CREATE INDEX turns_conversation ON turns (user_id, conversation_id, seq);
CREATE UNIQUE INDEX turns_inbound ON turns (inbound_message_id);
CREATE UNIQUE INDEX turns_key ON turns (user_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
-- The unfinished turns of a conversation in order: the queue that double
-- texting reads and starts from.
CREATE INDEX turns_conversation_open ON turns (conversation_id, seq) WHERE status IN ('queued', 'running', 'requires_action');
-- Running turns by lease: abandoned ones (background or not) are found
-- by a range scan.
CREATE INDEX turns_running_lease ON turns (lease_until) WHERE status = 'running';
-- Waiting turns by expiry.
CREATE INDEX turns_action_expiry ON turns (action_expires_at) WHERE status = 'requires_action';

CREATE TABLE actions_new (
    seq             INTEGER PRIMARY KEY,
    id              TEXT    NOT NULL UNIQUE,
    user_id         TEXT    NOT NULL REFERENCES users (id),
    assistant_id    TEXT    NOT NULL REFERENCES assistants (id),
    conversation_id TEXT    NOT NULL DEFAULT '',
    type            TEXT    NOT NULL,
    input           TEXT    NOT NULL,
    status          TEXT    NOT NULL CHECK (status IN ('succeeded', 'failed', 'rejected')),
    result          TEXT,
    error           TEXT,
    created_at      INTEGER NOT NULL,
    turn_id         TEXT,
    call_seq        INTEGER
);
INSERT INTO actions_new (seq, id, user_id, assistant_id, conversation_id, type, input, status, result, error, created_at, turn_id, call_seq)
SELECT seq, id, user_id, assistant_id, conversation_id, type, input, status, result, error, created_at, turn_id, call_seq
FROM actions;
DROP TABLE actions;
ALTER TABLE actions_new RENAME TO actions;
CREATE INDEX actions_user ON actions (user_id, seq);
CREATE INDEX actions_user_assistant ON actions (user_id, assistant_id, seq);
CREATE INDEX actions_user_conversation ON actions (user_id, conversation_id, seq);
CREATE UNIQUE INDEX actions_turn_call ON actions (turn_id, call_seq) WHERE turn_id IS NOT NULL;
