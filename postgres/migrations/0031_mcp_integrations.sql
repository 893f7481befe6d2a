-- 0031: MCP servers as integrations (see the SQLite migration of this
-- number for what each column holds).
ALTER TABLE integrations ADD COLUMN name TEXT, ADD COLUMN mcp JSON;
CREATE UNIQUE INDEX integrations_user_name ON integrations (user_id, name) WHERE name IS NOT NULL AND status <> 'disconnected';
ALTER TABLE actions ADD COLUMN duration_ms BIGINT NOT NULL DEFAULT 0;
