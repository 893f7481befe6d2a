-- 0035: webhook_jobs_due (every webhook's pending jobs in due order) has
-- had no reader since claims find due work through webhook_wakes and
-- each webhook's webhook_jobs_webhook_due (0020, 0032); PostgreSQL
-- dropped its twin in its 0020. The count and age of the queue
-- (QueueStats) read webhook_jobs_webhook_due, of the same rows. Each job
-- queued, and each delivered or failed for good, kept it up to date on
-- SQLite's one writer (docs/benchmarks.md, issue 33).
DROP INDEX webhook_jobs_due;
