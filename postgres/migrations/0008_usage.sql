-- 0008: usage metering. One row per account and clock minute with the
-- number of its /v1 requests the rate limiter counted (allowed) and
-- refused with a 429 (refused). Each process adds its own counts every
-- ten seconds (INSERT … ON CONFLICT DO UPDATE adding to the row), so the
-- rows are the sums over all processes. minute_start is Unix
-- milliseconds, a whole minute. Rows older than 31 days are deleted by
-- Purge; the 30-day chart sums minutes into UTC days when it is read.
-- The updates change no indexed column, so fillfactor lets them be HOT.
CREATE TABLE usage_minutes (
    user_id      TEXT   NOT NULL,
    minute_start BIGINT NOT NULL,
    allowed      BIGINT NOT NULL DEFAULT 0,
    refused      BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (user_id, minute_start)
) WITH (fillfactor = 80);

-- Purge deletes by age across accounts.
CREATE INDEX usage_minutes_minute ON usage_minutes (minute_start);
