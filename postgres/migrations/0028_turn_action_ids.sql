-- 0028: the ids of the actions a turn's tool calls recorded (see the
-- SQLite migration of this number).
ALTER TABLE turns ADD COLUMN action_ids JSON;
