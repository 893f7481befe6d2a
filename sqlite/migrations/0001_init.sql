-- 0001: accounts, API keys, assistants, conversations, messages,
-- integrations, events (the outbox) and idempotency keys.
-- Every account-owned table has an integer seq: the list order and cursor
-- position; ids are random and carry no order.

CREATE TABLE users (
    seq           INTEGER PRIMARY KEY,
    id            TEXT    NOT NULL UNIQUE,
    email         TEXT    NOT NULL UNIQUE COLLATE NOCASE,
    password_hash TEXT    NOT NULL DEFAULT '',
    plan          TEXT    NOT NULL CHECK (plan IN ('standard', 'professional', 'enterprise')),
    rpm           INTEGER NOT NULL DEFAULT 0,
    rpd           INTEGER NOT NULL DEFAULT 0,
    timezone      TEXT    NOT NULL DEFAULT 'UTC',
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL
);

CREATE TABLE api_keys (
    seq          INTEGER PRIMARY KEY,
    id           TEXT    NOT NULL UNIQUE,
    user_id      TEXT    NOT NULL REFERENCES users (id),
    name         TEXT    NOT NULL,
    hint         TEXT    NOT NULL,
    hash         TEXT    NOT NULL UNIQUE,
    permissions  TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    last_used_at INTEGER,
    expires_at   INTEGER,
    revoked_at   INTEGER
);
CREATE INDEX api_keys_user ON api_keys (user_id, seq);

CREATE TABLE assistants (
    seq          INTEGER PRIMARY KEY,
    id           TEXT    NOT NULL UNIQUE,
    user_id      TEXT    NOT NULL REFERENCES users (id),
    name         TEXT    NOT NULL,
    description  TEXT    NOT NULL DEFAULT '',
    instructions TEXT    NOT NULL DEFAULT '',
    model        TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
);
CREATE INDEX assistants_user ON assistants (user_id, seq);

CREATE TABLE conversations (
    seq             INTEGER PRIMARY KEY,
    id              TEXT    NOT NULL UNIQUE,
    user_id         TEXT    NOT NULL REFERENCES users (id),
    assistant_id    TEXT    NOT NULL REFERENCES assistants (id),
    title           TEXT    NOT NULL,
    message_count   INTEGER NOT NULL DEFAULT 0,
    last_message_at INTEGER NOT NULL,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
);
CREATE INDEX conversations_user ON conversations (user_id, seq);
CREATE INDEX conversations_assistant ON conversations (user_id, assistant_id, seq);

CREATE TABLE messages (
    seq             INTEGER PRIMARY KEY,
    id              TEXT    NOT NULL UNIQUE,
    user_id         TEXT    NOT NULL REFERENCES users (id),
    assistant_id    TEXT    NOT NULL REFERENCES assistants (id),
    conversation_id TEXT    NOT NULL REFERENCES conversations (id),
    direction       TEXT    NOT NULL CHECK (direction IN ('inbound', 'outbound')),
    content         TEXT    NOT NULL,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
);
CREATE INDEX messages_conversation ON messages (conversation_id, seq);

CREATE TABLE integrations (
    seq          INTEGER PRIMARY KEY,
    id           TEXT    NOT NULL UNIQUE,
    user_id      TEXT    NOT NULL REFERENCES users (id),
    provider     TEXT    NOT NULL,
    status       TEXT    NOT NULL CHECK (status IN ('connected', 'error', 'disconnected')),
    config       TEXT    NOT NULL DEFAULT '{}',
    last_error   TEXT,
    connected_at INTEGER NOT NULL,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
);
CREATE INDEX integrations_user ON integrations (user_id, seq);

-- events is the outbox: rows are written in the transaction of the change
-- that causes them, and kept 30 days.
CREATE TABLE events (
    seq        INTEGER PRIMARY KEY,
    id         TEXT    NOT NULL UNIQUE,
    user_id    TEXT    NOT NULL REFERENCES users (id),
    type       TEXT    NOT NULL,
    data       TEXT    NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX events_user ON events (user_id, seq);
CREATE INDEX events_user_type ON events (user_id, type, seq);
CREATE INDEX events_created ON events (created_at);

CREATE TABLE idempotency_keys (
    user_id      TEXT    NOT NULL REFERENCES users (id),
    key          TEXT    NOT NULL,
    request_hash TEXT    NOT NULL,
    done         INTEGER NOT NULL DEFAULT 0,
    status       INTEGER NOT NULL DEFAULT 0,
    header       TEXT    NOT NULL DEFAULT '{}',
    body         BLOB,
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (user_id, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
