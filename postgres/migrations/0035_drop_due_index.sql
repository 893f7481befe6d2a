-- 0035: nothing in PostgreSQL. SQLite's 0035 drops webhook_jobs_due,
-- which PostgreSQL dropped in its 0020. Kept so that both engines number
-- their schema alike.
SELECT 1;
