-- 0026: the purge deletes old rows in small batches, oldest first
-- (sqlstore.PurgeBatch): each table it batches needs an index on the
-- column it orders by. turn_events had none, so every purge scanned it.
CREATE INDEX turn_events_created ON turn_events (created_at);
