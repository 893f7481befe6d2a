-- 0018: accounts that run themselves (ams.AccountTokenStore). The links
-- e-mailed to an account's address: password reset (1 h) and e-mail
-- verification (24 h). Only the SHA-256 of a link's secret is stored, and
-- a link is used once: used_at is set by a conditional UPDATE (... WHERE
-- used_at IS NULL AND expires_at > now) in the transaction that acts on it.
-- users.unverified_since is when an account signed up on the sign-up page
-- without a verified address; NULL: verified, or made by an operator (every
-- account made before this migration counts as verified).
ALTER TABLE users ADD COLUMN unverified_since BIGINT;

CREATE TABLE account_tokens (
    hash       TEXT    PRIMARY KEY,
    user_id    TEXT    NOT NULL REFERENCES users (id),
    purpose    TEXT    NOT NULL CHECK (purpose IN ('password_reset', 'email_verification')),
    email      TEXT    NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    used_at    BIGINT
);
CREATE INDEX account_tokens_user ON account_tokens (user_id, purpose, created_at);
