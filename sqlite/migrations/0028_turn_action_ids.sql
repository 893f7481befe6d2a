-- 0028: the ids of the actions a turn's tool calls recorded, in order
-- (a JSON array; NULL for none), written when the turn stops or ends, so
-- that a turn record's action_ids is read with it.
ALTER TABLE turns ADD COLUMN action_ids TEXT;
