-- 0011: webhook recovery and the per-account webhook cap.
-- max_webhooks: an enterprise account's own cap on its webhooks (NULL: the
-- server's --max-webhooks-per-account). Set with `ams users update
-- --max-webhooks N`; it applies to enterprise accounts only.
ALTER TABLE users ADD COLUMN max_webhooks INTEGER;
-- POST /v1/webhooks/{id}/recover skips the events a webhook has received:
-- it looks up each event's successful attempt to that webhook here.
CREATE INDEX webhook_deliveries_succeeded ON webhook_deliveries (webhook_id, event_id) WHERE success;
