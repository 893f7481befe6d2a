-- 0020 (0004 before issue 28, when SQLite numbered its migrations apart
-- from PostgreSQL): the claim reads each webhook's pending jobs in due
-- order through this index (named in the query with INDEXED BY, so the
-- plan does not depend on statistics). PostgreSQL's 0020 makes the same
-- index the one its claim can take.
CREATE INDEX webhook_jobs_webhook_due ON webhook_jobs (webhook_id, next_at, seq) WHERE state = 'pending';
