-- 0004: rate-limit counters and failed logins shared by every process
-- serving the database (postgres.RateLimiter, postgres.Throttle). There is
-- no SQLite twin: one process serves an SQLite store and counts in memory.

-- One row per account: the start (Unix seconds) and count of its current
-- minute and UTC-day windows. Every allowed request updates its row in
-- place; fillfactor leaves room on the page so that the updates are HOT
-- (no index covers a column they change). Rows whose day has passed are
-- deleted by Purge.
CREATE TABLE rate_limits (
    account      TEXT   NOT NULL PRIMARY KEY,
    minute_start BIGINT NOT NULL,
    minute_count BIGINT NOT NULL,
    day_start    BIGINT NOT NULL,
    day_count    BIGINT NOT NULL
) WITH (fillfactor = 70);

-- One row per failed login of a key ("email:<address>", "ip:<address>").
-- at is in Unix nanoseconds (not milliseconds as elsewhere), so that the
-- window is compared exactly as oauth.MemoryThrottle compares it.
CREATE TABLE login_failures (
    key TEXT   NOT NULL,
    at  BIGINT NOT NULL
);
CREATE INDEX login_failures_key_at ON login_failures (key, at);
CREATE INDEX login_failures_at ON login_failures (at);
