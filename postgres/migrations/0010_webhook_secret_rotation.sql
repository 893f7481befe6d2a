-- 0010: webhook secret rotation. When a webhook's secret is replaced, the
-- one it replaced keeps signing webhook-signature beside it until
-- previous_secret_expires_at (Unix milliseconds): sealed like
-- secret_sealed (with the webhook id as additional data). Both NULL when
-- there is none; Purge clears them once expired. Adding nullable columns
-- without a default rewrites nothing.
ALTER TABLE webhooks ADD COLUMN previous_secret_sealed TEXT;
ALTER TABLE webhooks ADD COLUMN previous_secret_expires_at BIGINT;
