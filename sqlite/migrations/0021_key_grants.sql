-- 0021 (0020 before issue 28): the OAuth grant that made an API key (issue 26, point 6). A key
-- created through POST /v1/keys with an OAuth access token (or with a key
-- so made) records the client and the grant (fosite's request id, shared
-- by every token of one authorization across refreshes); revoking the
-- grant (RFC 7009, refresh-token reuse), the user's revocation of the app
-- and the client's deletion revoke these keys in the same transaction.
-- No foreign key: a revoked key keeps naming the client that made it
-- after the client is gone.
ALTER TABLE api_keys ADD COLUMN oauth_client_id TEXT;
ALTER TABLE api_keys ADD COLUMN oauth_grant_id TEXT;
CREATE INDEX api_keys_oauth_grant ON api_keys (oauth_grant_id) WHERE oauth_grant_id IS NOT NULL;
CREATE INDEX api_keys_oauth_client ON api_keys (oauth_client_id) WHERE oauth_client_id IS NOT NULL;
