-- 0028: OAuth clients that registered themselves (RFC 7591 dynamic client
-- registration, POST /oauth/register) belong to no account: user_id
-- becomes nullable. SQLite cannot drop a NOT NULL, so oauth_clients is
-- rebuilt; oauth_tokens, which references it ON DELETE CASCADE, is moved
-- aside first (dropping the old clients table would otherwise delete
-- every token) and rebuilt after, with its indexes and triggers.
CREATE TABLE oauth_tokens_keep AS SELECT * FROM oauth_tokens;
DROP TABLE oauth_tokens;

CREATE TABLE oauth_clients_new (
    seq           INTEGER PRIMARY KEY,
    id            TEXT    NOT NULL UNIQUE,
    user_id       TEXT    REFERENCES users (id), -- NULL: registered by RFC 7591
    name          TEXT    NOT NULL,
    redirect_uris TEXT    NOT NULL, -- JSON array
    public        INTEGER NOT NULL,
    secret_hash   TEXT    NOT NULL DEFAULT '',
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL
);
INSERT INTO oauth_clients_new (seq, id, user_id, name, redirect_uris, public, secret_hash, created_at, updated_at)
SELECT seq, id, user_id, name, redirect_uris, public, secret_hash, created_at, updated_at FROM oauth_clients;
DROP TABLE oauth_clients;
ALTER TABLE oauth_clients_new RENAME TO oauth_clients;
CREATE INDEX oauth_clients_user ON oauth_clients (user_id, seq);
-- Registered clients never authorized are purged by their age.
CREATE INDEX oauth_clients_registered ON oauth_clients (created_at) WHERE user_id IS NULL;
CREATE TRIGGER oauth_clients_auth_delete AFTER DELETE ON oauth_clients
BEGIN
    UPDATE auth_state SET generation = generation + 1 WHERE id = 1;
END;

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
INSERT INTO oauth_tokens SELECT * FROM oauth_tokens_keep;
DROP TABLE oauth_tokens_keep;
CREATE INDEX oauth_tokens_request ON oauth_tokens (request_id, kind);
CREATE INDEX oauth_tokens_user ON oauth_tokens (user_id, kind);
CREATE INDEX oauth_tokens_expires ON oauth_tokens (expires_at);
CREATE TRIGGER oauth_tokens_auth_update AFTER UPDATE ON oauth_tokens
WHEN OLD.kind = 'access'
BEGIN
    UPDATE auth_state SET generation = generation + 1 WHERE id = 1;
END;
CREATE TRIGGER oauth_tokens_auth_delete AFTER DELETE ON oauth_tokens
WHEN OLD.kind = 'access'
BEGIN
    UPDATE auth_state SET generation = generation + 1 WHERE id = 1;
END;
