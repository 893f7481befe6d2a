-- 0013: nothing in SQLite. PostgreSQL's 0013 replaces its shared
-- rate-limit table with sliding windows (rate_windows, rate_take); an
-- SQLite store is served by one process, which counts in memory
-- (ratelimit.Memory). Kept so that both engines number their schema alike.
SELECT 1;
