-- 0025: turns an integrator builds on (see the SQLite migration of this
-- number for what each column holds). Turns gain the statuses queued and
-- requires_action, and actions the status rejected.
ALTER TABLE turns DROP CONSTRAINT turns_status_check;
ALTER TABLE turns ADD CONSTRAINT turns_status_check
    CHECK (status IN ('queued', 'running', 'requires_action', 'completed', 'failed', 'cancelled'));
ALTER TABLE turns
    ADD COLUMN background         BOOLEAN NOT NULL DEFAULT FALSE,
    ADD COLUMN multitask_strategy TEXT    NOT NULL DEFAULT 'enqueue',
    ADD COLUMN options            JSON,
    ADD COLUMN required_action    JSON,
    ADD COLUMN calls              JSON,
    ADD COLUMN input_tokens       BIGINT  NOT NULL DEFAULT 0,
    ADD COLUMN output_tokens      BIGINT  NOT NULL DEFAULT 0,
    ADD COLUMN stop_reason        TEXT    NOT NULL DEFAULT '',
    ADD COLUMN action_expires_at  BIGINT,
    ADD COLUMN deadline           BIGINT;
CREATE INDEX turns_conversation_open ON turns (conversation_id, seq) WHERE status IN ('queued', 'running', 'requires_action');
CREATE INDEX turns_running_lease ON turns (lease_until) WHERE status = 'running';
CREATE INDEX turns_action_expiry ON turns (action_expires_at) WHERE status = 'requires_action';

ALTER TABLE actions DROP CONSTRAINT actions_status_check;
ALTER TABLE actions ADD CONSTRAINT actions_status_check CHECK (status IN ('succeeded', 'failed', 'rejected'));
