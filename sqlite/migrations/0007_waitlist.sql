-- 0007: the early-access waitlist and service administrators.
-- approved_at: when the account was let off the waitlist (Unix ms); NULL:
-- still on it, it may not create API keys. Accounts that existed before
-- the waitlist keep their access: they count as approved when created.
ALTER TABLE users ADD COLUMN approved_at INTEGER;
ALTER TABLE users ADD COLUMN admin INTEGER NOT NULL DEFAULT 0 CHECK (admin IN (0, 1));
UPDATE users SET approved_at = created_at;
-- The admin page lists the accounts waiting, oldest first.
CREATE INDEX users_waitlist ON users (seq) WHERE approved_at IS NULL;
