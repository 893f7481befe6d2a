-- 0034: nothing in SQLite. PostgreSQL's 0034 adds rate_take_n, which
-- counts several requests of one account in one call; an SQLite store is
-- served by one process, which counts in memory (ratelimit.Memory). Kept
-- so that both engines number their schema alike.
SELECT 1;
