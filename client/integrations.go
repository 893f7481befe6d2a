package client

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// Integration providers (Integration.Provider).
const (
	// ProviderCalDAV is a calendar collection on a CalDAV server, synced
	// both ways; connect it with CreateIntegration.
	ProviderCalDAV = "caldav"
	// ProviderICalFeed is the account's calendar feed, created with
	// CreateCalendarFeed.
	ProviderICalFeed = "ical_feed"
	// ProviderMCP is an MCP server (Streamable HTTP) whose tools become
	// the assistants' tools, named "<name>__<tool>"; connect it with
	// CreateIntegration (Name, URL, Headers, ...) and run a tool with
	// RunAction.
	ProviderMCP = "mcp"
)

// CreateIntegrationParams is an integration to connect.
type CreateIntegrationParams struct {
	// Provider is the outside service (required): ProviderCalDAV.
	Provider string
	// Config is the provider's settings, returned as the integration's
	// Config (required). For ProviderCalDAV: "url" (required, the
	// calendar collection's https URL) and "username".
	Config map[string]any
	// Secrets are stored sealed and never returned. For ProviderCalDAV:
	// "password".
	Secrets map[string]string

	// The settings of ProviderMCP (Config and Secrets are not sent).
	// Name (required) is ^[a-z0-9_-]{1,32}$, unique in the account: the
	// prefix of the tools' names. URL (required) is the server's
	// Streamable HTTP endpoint. Headers (an Authorization) are sent with
	// every request to it, stored sealed and never returned.
	// AllowedTools narrows the server's tools (nil: all);
	// RequireApproval names the tools whose calls in a turn wait for
	// approval ("*": all).
	Name            string
	URL             string
	Headers         map[string]string
	AllowedTools    []string
	RequireApproval []string
	// IdempotencyKey is sent as the Idempotency-Key header; empty lets the
	// client generate one.
	IdempotencyKey string
}

// CalendarFeed is the account's calendar feed as created: a secret URL
// any calendar app can subscribe to. The URL is shown this once.
type CalendarFeed struct {
	ID        string    `json:"id"`     // "int_...": the feed's integration (provider ProviderICalFeed)
	Object    string    `json:"object"` // "calendar_feed"
	URL       string    `json:"url"`    // anyone with it can read the calendar: keep it secret
	CreatedAt time.Time `json:"created_at"`
}

// CreateIntegration connects the account to an outside service
// (createIntegration, POST /v1/integrations; permission integrations).
// The provider checks the connection first; if that fails nothing is
// stored (400 integration_unauthorized or integration_not_calendar, 502
// integration_unreachable; for ProviderMCP, 400 url_unreachable: ams
// connects to the server and lists its tools before answering).
func (c *Client) CreateIntegration(ctx context.Context, p CreateIntegrationParams) (*Integration, error) {
	if p.Provider == ProviderMCP {
		body := map[string]any{"provider": p.Provider, "name": p.Name, "url": p.URL}
		if len(p.Headers) > 0 {
			body["headers"] = p.Headers
		}
		if p.AllowedTools != nil {
			body["allowed_tools"] = p.AllowedTools
		}
		if p.RequireApproval != nil {
			body["require_approval"] = p.RequireApproval
		}
		return post[Integration](ctx, c, "/integrations", body, p.IdempotencyKey)
	}
	body := map[string]any{"provider": p.Provider, "config": p.Config}
	if p.Config == nil {
		body["config"] = map[string]any{}
	}
	if len(p.Secrets) > 0 {
		body["secrets"] = p.Secrets
	}
	return post[Integration](ctx, c, "/integrations", body, p.IdempotencyKey)
}

// GetIntegration returns the integration with id, without its secrets
// (getIntegration, GET /v1/integrations/{id}; permission read or
// integrations).
func (c *Client) GetIntegration(ctx context.Context, id string) (*Integration, error) {
	return getByID[Integration](ctx, c, "/integrations", id)
}

// DeleteIntegration disconnects the integration with id
// (deleteIntegration, DELETE /v1/integrations/{id}; permission
// integrations): its status becomes IntegrationDisconnected and the
// record stays. Disconnecting a calendar feed revokes its URL.
func (c *Client) DeleteIntegration(ctx context.Context, id string) error {
	return del(ctx, c, "/integrations", id)
}

// SyncIntegration syncs the integration with id now and returns it as it
// is afterwards (syncIntegration, POST /v1/integrations/{id}/sync;
// permission integrations). A failed sync is no error: the integration
// has status IntegrationError and LastError. A disconnected integration
// is 409 integration_disconnected, a calendar feed 400
// integration_not_syncable.
func (c *Client) SyncIntegration(ctx context.Context, id string) (*Integration, error) {
	return postAction[Integration](ctx, c, "/integrations", id, "/sync", nil, "")
}

// CreateCalendarFeed creates the account's calendar feed and returns its
// URL, shown this once (createCalendarFeed, POST /v1/calendar/feed;
// permission integrations). Creating a feed again replaces it: the old
// URL stops working. DeleteIntegration with the feed's ID revokes it.
func (c *Client) CreateCalendarFeed(ctx context.Context) (*CalendarFeed, error) {
	return post[CalendarFeed](ctx, c, "/calendar/feed", nil, "")
}

// GetOpenAPIDocument returns the server's OpenAPI 3.1 document as JSON
// (getOpenAPIDocument, GET /v1/openapi.json; no permission needed).
func (c *Client) GetOpenAPIDocument(ctx context.Context) (json.RawMessage, error) {
	var doc json.RawMessage
	if err := c.Request(ctx, http.MethodGet, "/openapi.json", nil, &doc); err != nil {
		return nil, err
	}
	return doc, nil
}
