-- 0028: OAuth clients that registered themselves (RFC 7591 dynamic client
-- registration, POST /oauth/register) belong to no account: user_id
-- becomes nullable (the twin of sqlite/migrations/0028).
ALTER TABLE oauth_clients ALTER COLUMN user_id DROP NOT NULL;
-- Registered clients never authorized are purged by their age.
CREATE INDEX oauth_clients_registered ON oauth_clients (created_at) WHERE user_id IS NULL;
