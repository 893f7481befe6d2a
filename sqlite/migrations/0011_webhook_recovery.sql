-- 0011: webhook recovery and the per-account webhook cap.
-- max_webhooks: an enterprise account's own cap on its webhooks (NULL: the
-- server's --max-webhooks-per-account). Set with `ams users update
-- --max-webhooks N`; it applies to enterprise accounts only.
ALTER TABLE users ADD COLUMN max_webhooks INTEGER;
