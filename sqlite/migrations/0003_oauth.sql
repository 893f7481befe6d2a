-- 0003: OAuth 2.0 clients and token state, and browser login sessions.

CREATE TABLE oauth_clients (
    seq           INTEGER PRIMARY KEY,
    id            TEXT    NOT NULL UNIQUE,
    user_id       TEXT    NOT NULL REFERENCES users (id),
    name          TEXT    NOT NULL,
    redirect_uris TEXT    NOT NULL, -- JSON array
    public        INTEGER NOT NULL,
    secret_hash   TEXT    NOT NULL DEFAULT '',
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL
);
CREATE INDEX oauth_clients_user ON oauth_clients (user_id, seq);

-- Authorization codes, access and refresh tokens and PKCE challenges, by
-- the signature of the token (the token itself is never stored).
CREATE TABLE oauth_tokens (
    kind       TEXT    NOT NULL CHECK (kind IN ('code', 'access', 'refresh', 'pkce')),
    signature  TEXT    NOT NULL,
    request_id TEXT    NOT NULL,
    client_id  TEXT    NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
    user_id    TEXT    NOT NULL,
    scopes     TEXT    NOT NULL,
    active     INTEGER NOT NULL DEFAULT 1,
    data       BLOB    NOT NULL,
    expires_at INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (kind, signature)
);
CREATE INDEX oauth_tokens_request ON oauth_tokens (request_id, kind);
CREATE INDEX oauth_tokens_user ON oauth_tokens (user_id, kind);
CREATE INDEX oauth_tokens_expires ON oauth_tokens (expires_at);

CREATE TABLE login_sessions (
    id_hash    TEXT    PRIMARY KEY,
    user_id    TEXT    NOT NULL REFERENCES users (id),
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);
CREATE INDEX login_sessions_user ON login_sessions (user_id);
