package ams

import (
	"context"
	"encoding/json"
	"time"
)

// Integration statuses.
const (
	IntegrationConnected    = "connected"
	IntegrationError        = "error" // the last sync failed; it is retried
	IntegrationDisconnected = "disconnected"
)

// Integration is a connection of an account to an outside service.
type Integration struct {
	ID          string         `json:"id"`
	Object      string         `json:"object"` // "integration"
	UserID      string         `json:"-"`
	Provider    string         `json:"provider"`
	Status      string         `json:"status"` // IntegrationConnected, IntegrationError or IntegrationDisconnected
	Config      map[string]any `json:"config"`
	LastError   *string        `json:"last_error"`
	ConnectedAt time.Time      `json:"connected_at"`
	CreatedAt   time.Time      `json:"created_at"`
	UpdatedAt   time.Time      `json:"updated_at"`
	// MCPSettings are an MCP integration's (provider ProviderMCP) name,
	// URL, tool filters and tools, shown at the record's top level (null
	// for the other providers); nil for the other providers.
	*MCPSettings `json:"-"`

	// Sync state, kept by the sync worker and not shown by the API.
	//
	// SyncFailures counts the runs in a row that did not succeed. A run
	// counts itself as failed when it starts (in its claim), and a
	// success resets it, so that a run the process never finished (a
	// crash, an OOM kill) counts too.
	SyncFailures int `json:"-"`
	// NextSyncAt is the earliest time of the next background run (the
	// back-off after failures); nil: no back-off.
	NextSyncAt *time.Time `json:"-"`
	// PendingDeletion describes a mass deletion a run saw but did not
	// carry out, waiting for a later listing to confirm it; "" for none.
	// Its form is the sync's (package caldav).
	PendingDeletion string `json:"-"`
}

// IntegrationStore keeps integrations. The secrets (a password, a token)
// are sealed at rest and never appear in Integration.Config.
type IntegrationStore interface {
	// FindIntegration returns ENOTFOUND if the user has no such integration.
	FindIntegration(ctx context.Context, userID, id string) (*Integration, error)
	ListIntegrations(ctx context.Context, userID string, p ListParams) (*Page[*Integration], error)
	CreateIntegration(ctx context.Context, in *Integration, secrets map[string]string) error
	// UpdateIntegration writes the status, config, last error, times and
	// sync state; the secrets stay.
	UpdateIntegration(ctx context.Context, in *Integration) error
	// IntegrationSecrets returns the unsealed secrets of an integration.
	IntegrationSecrets(ctx context.Context, userID, id string) (map[string]string, error)
	// ActiveIntegrations returns every integration of the provider, of all
	// accounts, whose status is connected or error (for the sync worker).
	ActiveIntegrations(ctx context.Context, provider string) ([]*Integration, error)
	// FindIntegrationByName returns the user's integration of that name
	// that is not disconnected (locked in a transaction); ENOTFOUND
	// otherwise.
	FindIntegrationByName(ctx context.Context, userID, name string) (*Integration, error)
	// AccountIntegrations returns the user's integrations of the provider
	// whose status is connected or error, oldest first.
	AccountIntegrations(ctx context.Context, userID, provider string) ([]*Integration, error)
}

// ProviderMCP is the provider of integrations that are MCP servers: their
// tools are the assistants' tools.
const ProviderMCP = "mcp"

// MCPToolSeparator joins an MCP integration's name and a tool's name into
// the name the assistant knows the tool by: everything__get-sum.
const MCPToolSeparator = "__"

// MCPSettings are the settings of an MCP integration and the tools its
// server listed at the last connect or sync. The headers sent to the
// server are secrets: sealed at rest, never here.
type MCPSettings struct {
	// Name is unique among the account's integrations not disconnected,
	// ^[a-z0-9_-]{1,32}$ without "__"; it prefixes the tools' names.
	Name string `json:"name"`
	URL  string `json:"url"`
	// AllowedTools narrows the server's tools to these names (nil: all).
	AllowedTools []string `json:"allowed_tools"`
	// RequireApproval names the tools (the server's names) whose calls by
	// an engine wait for approval; ["*"] for all.
	RequireApproval []string `json:"require_approval"`
	// Tools are the server's tools the assistant gets, as listed.
	Tools []IntegrationTool `json:"tools"`
}

// IntegrationTool is a tool of an MCP server.
type IntegrationTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// Tool returns the tool of that name (the server's name), or nil.
func (m *MCPSettings) Tool(name string) *IntegrationTool {
	for i := range m.Tools {
		if m.Tools[i].Name == name {
			return &m.Tools[i]
		}
	}
	return nil
}

// NeedsApproval reports whether require_approval covers tool name (the
// server's name, or the assistant's <name>__<tool>).
func (m *MCPSettings) NeedsApproval(name string) bool {
	for _, r := range m.RequireApproval {
		if r == "*" || r == name || m.Name+MCPToolSeparator+r == name {
			return true
		}
	}
	return false
}

// MCPResult is the result of an MCP tools/call: an action's result.
type MCPResult struct {
	Content           json.RawMessage `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError"`
	// Truncated is set when ams kept only the beginning of a result
	// larger than its cap.
	Truncated bool `json:"truncated,omitempty"`
}
