-- 0023 (0022 before issue 28): per-recipient caps on e-mails (ams.EmailCaps, issue 26). Each
-- e-mail records its kind (email_verification, password_reset,
-- signup_taken, key_reminder, webhook_failing); the store counts a
-- recipient's e-mails of a kind within the cap's window, on the index
-- below, before queueing another. E-mails queued before this migration
-- have the kind '' and count towards no cap.
ALTER TABLE emails ADD COLUMN kind TEXT NOT NULL DEFAULT '';
CREATE INDEX emails_recipient ON emails (to_addr, kind, created_at);
