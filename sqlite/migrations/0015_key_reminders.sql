-- 0015: the rotation reminders of API keys (ams.KeyReminderStore). When the
-- owner was e-mailed that the key expires within 14 days, and that it turns
-- 90 days old within 14 days; NULL: not yet. Each is set by a conditional
-- UPDATE (... WHERE <column> IS NULL) in the transaction that queues the
-- e-mail, so a key gets each reminder once, however many processes look.
ALTER TABLE api_keys ADD COLUMN expiry_reminded_at INTEGER;
ALTER TABLE api_keys ADD COLUMN age_reminded_at INTEGER;
