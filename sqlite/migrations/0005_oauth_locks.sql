-- 0005: leases that serialize the token requests presenting one
-- authorization code or refresh token (ams.OAuthStore.AcquireOAuthLock).
-- A row lives only while a request holds it; an expired one is taken over.
CREATE TABLE oauth_locks (
    name       TEXT    NOT NULL PRIMARY KEY,
    owner      TEXT    NOT NULL,
    expires_at INTEGER NOT NULL
);
