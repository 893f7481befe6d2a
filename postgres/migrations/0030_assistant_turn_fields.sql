-- 0030: an assistant's turn defaults (DESIGN.md, "Turns an integrator
-- builds on"): tools (JSON array of client function tools every turn
-- has), require_approval (JSON array of tool names whose calls wait for
-- approval, ["*"] for all) and multitask_strategy (what a send to a busy
-- conversation does by default).
ALTER TABLE assistants ADD COLUMN tools TEXT NOT NULL DEFAULT '[]';
ALTER TABLE assistants ADD COLUMN require_approval TEXT NOT NULL DEFAULT '[]';
ALTER TABLE assistants ADD COLUMN multitask_strategy TEXT NOT NULL DEFAULT 'enqueue';
