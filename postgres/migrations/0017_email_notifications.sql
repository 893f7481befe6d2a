-- 0017: the e-mail notification settings of an account (GET and PATCH
-- /v1/account, email_notifications). Each column turns one kind of e-mail
-- off; false (the default): the e-mail is sent.
--   key_reminder_emails_off: an API key expires or turns 90 days old
--   within 14 days (account.KeyReminders; DueKeyReminders skips them).
--   webhook_failing_emails_off: a webhook was marked failing (the
--   delivery worker queues no e-mail; webhook.failing is still emitted).
ALTER TABLE users ADD COLUMN key_reminder_emails_off BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE users ADD COLUMN webhook_failing_emails_off BOOLEAN NOT NULL DEFAULT false;
