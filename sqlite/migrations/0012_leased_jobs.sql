-- 0012: the claim counts the deliveries in flight (leased jobs) of every
-- webhook and account, across all processes, to enforce the per-webhook
-- and per-account caps; this index holds only the jobs leased now or whose
-- lease ran out unclaimed, a few hundred rows however long the queue.
CREATE INDEX webhook_jobs_leased ON webhook_jobs (lease_until, webhook_id, user_id) WHERE state = 'pending' AND lease_until > 0;
