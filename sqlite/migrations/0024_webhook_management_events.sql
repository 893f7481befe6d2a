-- Issue 26, L8: a webhook receives the management audit events
-- (api_key.*, oauth_client.*, account.updated) only when the last
-- credential that created or changed it held admin. Webhooks made before
-- this migration do not know theirs: they stop receiving them until an
-- admin credential or the account pages save them again.
ALTER TABLE webhooks ADD COLUMN management_events INTEGER NOT NULL DEFAULT 0;
