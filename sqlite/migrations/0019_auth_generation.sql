-- 0019: the authentication generation (issue 17, point 4). Each process
-- caches the credentials it has authenticated (API keys, access tokens)
-- and uses a cached one only while this counter has not moved since it
-- was read. Every change that can alter what a credential authenticates
-- as bumps it, in the transaction of the change, through the triggers
-- below, whichever code path (API, pages, CLI, another process) writes:
-- a key revoked, re-permissioned, expiring differently or deleted; any
-- change or deletion of an account (plan and limits ride in the cached
-- caller); an access token deactivated or deleted (revocation, refresh,
-- a grant or client removed: the client's tokens go by cascade). New
-- keys and tokens need no bump: nothing unknown is cached. Touching
-- last_used_at and marking reminders change no bumped column.
--
-- A process sees the counter move cheaply: PRAGMA data_version on one
-- connection of its own tells whether anyone has committed since it last
-- looked, and only then does it read the row (package sqlite).
CREATE TABLE auth_state (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    generation INTEGER NOT NULL
);
INSERT INTO auth_state (id, generation) VALUES (1, 0);

CREATE TRIGGER api_keys_auth_update AFTER UPDATE ON api_keys
WHEN OLD.revoked_at IS NOT NEW.revoked_at OR OLD.expires_at IS NOT NEW.expires_at
    OR OLD.permissions IS NOT NEW.permissions OR OLD.hash IS NOT NEW.hash OR OLD.user_id IS NOT NEW.user_id
BEGIN
    UPDATE auth_state SET generation = generation + 1 WHERE id = 1;
END;

CREATE TRIGGER api_keys_auth_delete AFTER DELETE ON api_keys
BEGIN
    UPDATE auth_state SET generation = generation + 1 WHERE id = 1;
END;

CREATE TRIGGER users_auth_update AFTER UPDATE ON users
BEGIN
    UPDATE auth_state SET generation = generation + 1 WHERE id = 1;
END;

CREATE TRIGGER users_auth_delete AFTER DELETE ON users
BEGIN
    UPDATE auth_state SET generation = generation + 1 WHERE id = 1;
END;

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

CREATE TRIGGER oauth_clients_auth_delete AFTER DELETE ON oauth_clients
BEGIN
    UPDATE auth_state SET generation = generation + 1 WHERE id = 1;
END;
