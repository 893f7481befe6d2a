-- 0031: MCP servers as integrations (issue 30). An integration may have a
-- name (the MCP provider's: the prefix of its tools' names), unique in the
-- account among the integrations not disconnected; mcp holds the MCP
-- provider's settings and the server's tool list as JSON (url,
-- allowed_tools, require_approval, tools), the headers staying sealed in
-- secrets. Actions gain duration_ms: how long the tool ran (for an MCP
-- tool, the call to its server).
ALTER TABLE integrations ADD COLUMN name TEXT;
ALTER TABLE integrations ADD COLUMN mcp TEXT;
CREATE UNIQUE INDEX integrations_user_name ON integrations (user_id, name) WHERE name IS NOT NULL AND status <> 'disconnected';
ALTER TABLE actions ADD COLUMN duration_ms INTEGER NOT NULL DEFAULT 0;
