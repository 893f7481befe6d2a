-- 0004: the claim reads each webhook's pending jobs in due order through
-- this index (named in the query with INDEXED BY, so the plan does not
-- depend on statistics).
CREATE INDEX webhook_jobs_webhook_due ON webhook_jobs (webhook_id, next_at, seq) WHERE state = 'pending';
