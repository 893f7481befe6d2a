-- 0014: metadata, the client's own key-value pairs (ams.Metadata: at most
-- 50 keys of up to 40 characters, string values up to 500), on
-- assistants, conversations, messages, tasks, calendar events and
-- webhooks. Kept as the JSON text of an object, '{}' when empty; the
-- service checks the limits before writing.
ALTER TABLE assistants ADD COLUMN metadata TEXT NOT NULL DEFAULT '{}';
ALTER TABLE conversations ADD COLUMN metadata TEXT NOT NULL DEFAULT '{}';
ALTER TABLE messages ADD COLUMN metadata TEXT NOT NULL DEFAULT '{}';
ALTER TABLE tasks ADD COLUMN metadata TEXT NOT NULL DEFAULT '{}';
ALTER TABLE calendar_events ADD COLUMN metadata TEXT NOT NULL DEFAULT '{}';
ALTER TABLE webhooks ADD COLUMN metadata TEXT NOT NULL DEFAULT '{}';

-- The conversation_id filter of the actions list.
CREATE INDEX actions_user_conversation ON actions (user_id, conversation_id, seq);
