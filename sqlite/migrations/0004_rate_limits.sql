-- 0004: nothing in SQLite. PostgreSQL's 0004 keeps rate-limit counters and
-- failed logins shared by every process serving the database; an SQLite
-- store is served by one process, which counts in memory. Kept so that
-- both engines number their schema alike (a store migrated before issue
-- 28 gets it as its newest migration; see sqlstore.Migrate).
SELECT 1;
