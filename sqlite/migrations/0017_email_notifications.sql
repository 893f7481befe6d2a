-- 0017: the e-mail notification settings of an account (GET and PATCH
-- /v1/account, email_notifications). Each column turns one kind of e-mail
-- off; 0 (the default): the e-mail is sent.
--   key_reminder_emails_off: an API key expires or turns 90 days old
--   within 14 days (account.KeyReminders; DueKeyReminders skips them).
--   webhook_failing_emails_off: a webhook was marked failing (the
--   delivery worker queues no e-mail; webhook.failing is still emitted).
ALTER TABLE users ADD COLUMN key_reminder_emails_off INTEGER NOT NULL DEFAULT 0 CHECK (key_reminder_emails_off IN (0, 1));
ALTER TABLE users ADD COLUMN webhook_failing_emails_off INTEGER NOT NULL DEFAULT 0 CHECK (webhook_failing_emails_off IN (0, 1));
