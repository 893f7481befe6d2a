-- 0006: the assistant's world: tasks, calendar events and actions (tool
-- runs); soft deletion of assistants; sealed secrets of integrations.
-- Times are Unix milliseconds. JSON columns are TEXT holding the JSON
-- exactly as written.

-- A deleted assistant is gone from lookups and lists; its conversations,
-- messages, tasks, events and actions stay, so the row stays too.
ALTER TABLE assistants ADD COLUMN deleted_at INTEGER;

-- The integration's secrets (a password, a token): the JSON object of the
-- secrets map sealed with the store's key (internal/seal), with the
-- integration id as additional data. NULL: none.
ALTER TABLE integrations ADD COLUMN secrets TEXT;

CREATE TABLE tasks (
    seq          INTEGER PRIMARY KEY,
    id           TEXT    NOT NULL UNIQUE,
    user_id      TEXT    NOT NULL REFERENCES users (id),
    assistant_id TEXT    NOT NULL REFERENCES assistants (id),
    title        TEXT    NOT NULL,
    notes        TEXT    NOT NULL DEFAULT '',
    status       TEXT    NOT NULL CHECK (status IN ('open', 'completed')),
    due_at       INTEGER,
    remind_at    INTEGER,
    -- when the reminder of remind_at fired; NULL: not yet. Setting another
    -- remind_at clears it.
    reminded_at  INTEGER,
    completed_at INTEGER,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
);
CREATE INDEX tasks_user ON tasks (user_id, seq);
CREATE INDEX tasks_user_assistant ON tasks (user_id, assistant_id, seq);
CREATE INDEX tasks_user_status ON tasks (user_id, status, seq);
CREATE INDEX tasks_user_due ON tasks (user_id, due_at) WHERE due_at IS NOT NULL;
-- The reminder scan: only reminders still to fire are in it.
CREATE INDEX tasks_remind ON tasks (remind_at)
    WHERE remind_at IS NOT NULL AND reminded_at IS NULL AND status = 'open';

-- assistant_id is NULL for an event that came from an integration.
-- integration_id, external_uid, external_path and external_etag are the
-- sync state of a calendar integration (CalDAV): '' (NULL for the id) for
-- events that live only here.
CREATE TABLE calendar_events (
    seq            INTEGER PRIMARY KEY,
    id             TEXT    NOT NULL UNIQUE,
    user_id        TEXT    NOT NULL REFERENCES users (id),
    assistant_id   TEXT    REFERENCES assistants (id),
    title          TEXT    NOT NULL,
    description    TEXT    NOT NULL DEFAULT '',
    location       TEXT    NOT NULL DEFAULT '',
    starts_at      INTEGER NOT NULL,
    ends_at        INTEGER NOT NULL,
    remind_at      INTEGER,
    reminded_at    INTEGER,
    integration_id TEXT    REFERENCES integrations (id),
    external_uid   TEXT    NOT NULL DEFAULT '',
    external_path  TEXT    NOT NULL DEFAULT '',
    external_etag  TEXT    NOT NULL DEFAULT '',
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL
);
CREATE INDEX calendar_events_user ON calendar_events (user_id, seq);
CREATE INDEX calendar_events_user_assistant ON calendar_events (user_id, assistant_id, seq);
CREATE INDEX calendar_events_user_starts ON calendar_events (user_id, starts_at);
CREATE INDEX calendar_events_user_ends ON calendar_events (user_id, ends_at);
CREATE UNIQUE INDEX calendar_events_external ON calendar_events (user_id, integration_id, external_uid)
    WHERE external_uid != '';
CREATE INDEX calendar_events_remind ON calendar_events (remind_at)
    WHERE remind_at IS NOT NULL AND reminded_at IS NULL;

-- One row per run of a tool. conversation_id ('' when run directly) has no
-- foreign key: an engine runs tools while answering, before the turn (and
-- a new conversation) is written. input, result and error are JSON; result
-- is NULL unless the action succeeded, error NULL unless it failed.
CREATE TABLE actions (
    seq             INTEGER PRIMARY KEY,
    id              TEXT    NOT NULL UNIQUE,
    user_id         TEXT    NOT NULL REFERENCES users (id),
    assistant_id    TEXT    NOT NULL REFERENCES assistants (id),
    conversation_id TEXT    NOT NULL DEFAULT '',
    type            TEXT    NOT NULL,
    input           TEXT    NOT NULL,
    status          TEXT    NOT NULL CHECK (status IN ('succeeded', 'failed')),
    result          TEXT,
    error           TEXT,
    created_at      INTEGER NOT NULL
);
CREATE INDEX actions_user ON actions (user_id, seq);
CREATE INDEX actions_user_assistant ON actions (user_id, assistant_id, seq);
