-- 0032 (issue 33, point 1; issue 31, point 1): claims that cost what is
-- due, and ordered webhooks.
--
-- webhook_wakes says which webhooks may have due work, and from when: a
-- row (webhook, at) promises nothing is due for the webhook before the
-- earliest of its rows' at. A claim reads the rows with at <= now
-- (webhook_wakes_at, a range of what is due), looks at those webhooks
-- only, and replaces their rows by one at the webhook's next due time
-- (sqlite/claim.go). The triggers below keep the promise whatever writes
-- a job: a job queued (fan-out, ping, redelivery, recovery) or put back
-- to pending at a new time (a retry) adds a row unless one at or before
-- its due time is there already. A job's due time is the later of
-- next_at and lease_until: a leased job is due again when its lease runs
-- out (its worker died), so a claim leaves a row at the lease's end.
-- Finished jobs are in no index the claim reads.
CREATE TABLE webhook_wakes (
    seq        INTEGER PRIMARY KEY,
    webhook_id TEXT    NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    at         INTEGER NOT NULL
);
CREATE INDEX webhook_wakes_at ON webhook_wakes (at);
CREATE INDEX webhook_wakes_webhook ON webhook_wakes (webhook_id, at);

-- An ordered webhook's head is its first pending job in queue order:
-- the first entry of webhook_jobs_webhook (webhook, state) at (webhook,
-- 'pending'), whose entries end with the rowid, seq. No index is added:
-- every index on pending jobs costs each job a write when it is queued
-- and when it ends. (The claim reads an unordered webhook's due jobs, and
-- its next due time, through webhook_jobs_webhook_due (webhook, next_at,
-- seq), of pending jobs only.)

INSERT INTO webhook_wakes (webhook_id, at)
SELECT webhook_id, min(max(next_at, lease_until)) FROM webhook_jobs WHERE state = 'pending' GROUP BY webhook_id;

CREATE TRIGGER webhook_jobs_wake_insert AFTER INSERT ON webhook_jobs
WHEN NEW.state = 'pending' AND NOT EXISTS (
    SELECT 1 FROM webhook_wakes k WHERE k.webhook_id = NEW.webhook_id AND k.at <= max(NEW.next_at, NEW.lease_until))
BEGIN
    INSERT INTO webhook_wakes (webhook_id, at) VALUES (NEW.webhook_id, max(NEW.next_at, NEW.lease_until));
END;

-- A retry: the job is back to pending, its lease released (a claim only
-- sets leases), at a new time or, retried at once, maybe the same.
CREATE TRIGGER webhook_jobs_wake_retry AFTER UPDATE OF next_at, lease_until ON webhook_jobs
WHEN NEW.state = 'pending' AND (NEW.next_at <> OLD.next_at OR (OLD.lease_until > 0 AND NEW.lease_until = 0)) AND NOT EXISTS (
    SELECT 1 FROM webhook_wakes k WHERE k.webhook_id = NEW.webhook_id AND k.at <= max(NEW.next_at, NEW.lease_until))
BEGIN
    INSERT INTO webhook_wakes (webhook_id, at) VALUES (NEW.webhook_id, max(NEW.next_at, NEW.lease_until));
END;

-- Ordered webhooks (issue 31): one delivery in flight at a time, in the
-- order the jobs were queued (the event log's on SQLite, where commits
-- are in insert order). A disabled ordered webhook keeps its pending
-- jobs (they are not canceled), so that enabling it again goes on in
-- order; enabling any webhook wakes it.
ALTER TABLE webhooks ADD COLUMN ordered INTEGER NOT NULL DEFAULT 0;

-- An ordered webhook's head that leaves the queue (delivered, or
-- failed for good) releases the next: wake the webhook.
CREATE TRIGGER webhook_jobs_wake_ordered AFTER UPDATE OF state ON webhook_jobs
WHEN OLD.state = 'pending' AND NEW.state <> 'pending' AND EXISTS (SELECT 1 FROM webhooks w WHERE w.id = NEW.webhook_id AND w.ordered)
BEGIN
    INSERT INTO webhook_wakes (webhook_id, at) VALUES (NEW.webhook_id, 0);
END;

CREATE TRIGGER webhooks_wake_enabled AFTER UPDATE OF active ON webhooks
WHEN NEW.active AND NOT OLD.active
BEGIN
    INSERT INTO webhook_wakes (webhook_id, at) VALUES (NEW.id, 0);
END;
