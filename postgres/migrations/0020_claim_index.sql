-- 0020: the claim query's scan of each webhook's due jobs has one index
-- to take, webhook_jobs_webhook_due (webhook, due order, pending only).
-- Beside it, webhook_jobs_due (every webhook's pending jobs in due order)
-- and webhook_jobs_webhook (webhook, state) let PostgreSQL's planner pick
-- a plan that walks every webhook's backlog filtering for one webhook, or
-- reads one webhook's whole backlog and sorts it: with the statistics a
-- queue table has while a backlog builds up (analyzed when it was empty),
-- it often did, and a claim cost tens of milliseconds, growing with the
-- backlog (27-36 ms measured during a drain of 18,000 deliveries, against
-- about 1 ms). webhook_jobs_webhook served the ON DELETE CASCADE from
-- webhooks; (webhook_id, seq) serves it now and is of no use to the claim
-- (it is neither partial nor in due order). What read pending jobs
-- through the dropped indexes (the queue's statistics, the cancel of a
-- webhook's jobs) reads them through webhook_jobs_webhook_due.
-- postgres/claimplan_internal_test.go checks the claim's plan.
DROP INDEX webhook_jobs_due;
DROP INDEX webhook_jobs_webhook;
CREATE INDEX webhook_jobs_webhook_seq ON webhook_jobs (webhook_id, seq);
