-- 0033: events a receiver can trust (issue 31, points 2 and 6).
--
-- failure_streak  the webhook's failed attempts in a row, in the order
--                 they were recorded: raised by each failed attempt,
--                 reset to 0 by a success only when it is not 0 already,
--                 so that a healthy webhook's row is never rewritten by
--                 its deliveries. At 3 the webhook is degraded
--                 (webhook.degraded); the success that resets a streak of
--                 3 or more emits webhook.recovered.
-- payload         'full' (the record) or 'thin' (its ids only).
-- filter_assistant_id, filter_conversation_id
--                 the event's assistant / conversation must be this one
--                 (NULL: any).
-- filter_metadata JSON object: the event's record metadata must hold
--                 each of these pairs (NULL: any).
ALTER TABLE webhooks ADD COLUMN failure_streak INTEGER NOT NULL DEFAULT 0;
ALTER TABLE webhooks ADD COLUMN payload TEXT NOT NULL DEFAULT 'full' CHECK (payload IN ('full', 'thin'));
ALTER TABLE webhooks ADD COLUMN filter_assistant_id TEXT;
ALTER TABLE webhooks ADD COLUMN filter_conversation_id TEXT;
ALTER TABLE webhooks ADD COLUMN filter_metadata TEXT;
-- The webhook's 24 h summary (attempts, success rate, p95 duration) reads
-- its attempts of the last day.
CREATE INDEX webhook_deliveries_webhook_created ON webhook_deliveries (webhook_id, created_at);
