-- 0022 (0021 before issue 28): calendar events deleted are kept, restorable, for the events'
-- retention (issue 26, L9), and a failing calendar sync backs off across
-- restarts (issue 26, point 3).
--
-- deleted_at (NULL for a live event) and deleted_by ('api' or 'sync')
-- mark a deleted event: every read but the list of deleted events
-- leaves it out, POST /v1/calendar/events/{id}/restore brings it back,
-- and Purge deletes it 30 days after deleted_at. The external UID is
-- unique among live events only, so that a deleted event's object can
-- come back from the server as a new event.
ALTER TABLE calendar_events ADD COLUMN deleted_at INTEGER;
ALTER TABLE calendar_events ADD COLUMN deleted_by TEXT NOT NULL DEFAULT '';
DROP INDEX calendar_events_external;
CREATE UNIQUE INDEX calendar_events_external ON calendar_events (user_id, integration_id, external_uid)
    WHERE external_uid != '' AND deleted_at IS NULL;
DROP INDEX calendar_events_remind;
CREATE INDEX calendar_events_remind ON calendar_events (remind_at)
    WHERE remind_at IS NOT NULL AND reminded_at IS NULL AND deleted_at IS NULL;
CREATE INDEX calendar_events_deleted ON calendar_events (deleted_at) WHERE deleted_at IS NOT NULL;

-- The sync state of an integration (not shown by the API): the runs in a
-- row that did not succeed (a run counts itself failed when it starts, so
-- a process that dies during it leaves the count), the earliest time of
-- the next background run (the back-off; NULL: none), and a mass deletion
-- seen once and waiting for a later listing to confirm it ('' for none).
ALTER TABLE integrations ADD COLUMN sync_failures INTEGER NOT NULL DEFAULT 0;
ALTER TABLE integrations ADD COLUMN next_sync_at INTEGER;
ALTER TABLE integrations ADD COLUMN pending_deletion TEXT NOT NULL DEFAULT '';
