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
-- The bump also notifies the channel 'ams_auth.<schema>' (cut to 63
-- bytes) with the new value; PostgreSQL delivers it at commit to every
-- process listening (package postgres), which then drops what it cached
-- before. The table is the truth: a process whose listening connection
-- is down reads the row on every request until it listens again.
CREATE TABLE auth_state (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    generation BIGINT  NOT NULL
);
INSERT INTO auth_state (id, generation) VALUES (1, 0);

CREATE FUNCTION auth_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    g BIGINT;
BEGIN
    EXECUTE format('UPDATE %I.auth_state SET generation = generation + 1 WHERE id = 1 RETURNING generation', TG_TABLE_SCHEMA) INTO g;
    PERFORM pg_notify(left('ams_auth.' || TG_TABLE_SCHEMA, 63), g::text);
    RETURN NULL;
END
$$;

CREATE TRIGGER api_keys_auth_update AFTER UPDATE ON api_keys FOR EACH ROW
WHEN (OLD.revoked_at IS DISTINCT FROM NEW.revoked_at OR OLD.expires_at IS DISTINCT FROM NEW.expires_at
    OR OLD.permissions IS DISTINCT FROM NEW.permissions OR OLD.hash IS DISTINCT FROM NEW.hash
    OR OLD.user_id IS DISTINCT FROM NEW.user_id)
EXECUTE FUNCTION auth_changed();

CREATE TRIGGER api_keys_auth_delete AFTER DELETE ON api_keys FOR EACH ROW EXECUTE FUNCTION auth_changed();

CREATE TRIGGER users_auth_update AFTER UPDATE ON users FOR EACH ROW EXECUTE FUNCTION auth_changed();

CREATE TRIGGER users_auth_delete AFTER DELETE ON users FOR EACH ROW EXECUTE FUNCTION auth_changed();

CREATE TRIGGER oauth_tokens_auth_update AFTER UPDATE ON oauth_tokens FOR EACH ROW
WHEN (OLD.kind = 'access') EXECUTE FUNCTION auth_changed();

CREATE TRIGGER oauth_tokens_auth_delete AFTER DELETE ON oauth_tokens FOR EACH ROW
WHEN (OLD.kind = 'access') EXECUTE FUNCTION auth_changed();

CREATE TRIGGER oauth_clients_auth_delete AFTER DELETE ON oauth_clients FOR EACH ROW EXECUTE FUNCTION auth_changed();

-- The processes that listen, and the generation each has heard of. A
-- process that changes authentication waits, after its commit and before
-- it answers, until every listener seen alive (seen_at, renewed every 10
-- s) has heard of the new generation: so the change is in force in every
-- process by the time anyone can send the next request (package postgres,
-- authwatch.go). seen_at is the database's clock, in Unix milliseconds.
CREATE TABLE auth_listeners (
    process TEXT   PRIMARY KEY,
    heard   BIGINT NOT NULL,
    seen_at BIGINT NOT NULL
);
