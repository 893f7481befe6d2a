package http

import (
	"context"
	"time"

	"github.com/amsdev/ams"
)

// Reader is what the API's handlers read from the store (Server.Store):
// reads only. A handler changes nothing itself: every change is a
// service's (messaging, world, webhook, account, oauth.Clients), which
// writes it with its events in one transaction, so a handler that
// writes to the store does not compile. The store of app.New satisfies it.
type Reader interface {
	FindAssistant(ctx context.Context, userID, id string) (*ams.Assistant, error)
	ListAssistants(ctx context.Context, userID string, p ams.ListParams) (*ams.Page[*ams.Assistant], error)
	FindAction(ctx context.Context, userID, id string) (*ams.Action, error)
	ListActions(ctx context.Context, userID string, f ams.ActionFilter, p ams.ListParams) (*ams.Page[*ams.Action], error)
	FindMessage(ctx context.Context, userID, id string) (*ams.Message, error)
	ListMessages(ctx context.Context, userID, conversationID string, p ams.ListParams) (*ams.Page[*ams.Message], error)
	FindConversation(ctx context.Context, userID, id string) (*ams.Conversation, error)
	ListConversations(ctx context.Context, userID, assistantID string, p ams.ListParams) (*ams.Page[*ams.Conversation], error)
	FindTask(ctx context.Context, userID, id string) (*ams.Task, error)
	ListTasks(ctx context.Context, userID string, f ams.TaskFilter, p ams.ListParams) (*ams.Page[*ams.Task], error)
	FindCalendarEvent(ctx context.Context, userID, id string) (*ams.CalendarEvent, error)
	ListCalendarEvents(ctx context.Context, userID string, f ams.CalendarFilter, p ams.ListParams) (*ams.Page[*ams.CalendarEvent], error)
	FindIntegration(ctx context.Context, userID, id string) (*ams.Integration, error)
	ListIntegrations(ctx context.Context, userID string, p ams.ListParams) (*ams.Page[*ams.Integration], error)
	// IntegrationSecrets reads a calendar feed's token (calendar_feed.go).
	IntegrationSecrets(ctx context.Context, userID, id string) (map[string]string, error)
	FindEvent(ctx context.Context, userID, id string) (*ams.Event, error)
	ListEvents(ctx context.Context, userID string, f ams.EventFilter, p ams.ListParams) (*ams.Page[*ams.Event], error)
	FindWebhook(ctx context.Context, userID, id string) (*ams.Webhook, error)
	ListWebhooks(ctx context.Context, userID string, p ams.ListParams) (*ams.Page[*ams.Webhook], error)
	ListDeliveries(ctx context.Context, userID, webhookID string, f ams.DeliveryFilter, p ams.ListParams) (*ams.Page[*ams.Delivery], error)
	SummarizeWebhook(ctx context.Context, userID, webhookID string, since time.Time) (*ams.WebhookSummary, error)
	FindKey(ctx context.Context, id string) (*ams.APIKey, error)
	ListKeyPage(ctx context.Context, userID string, p ams.ListParams) (*ams.Page[*ams.APIKey], error)
	ListOAuthClientPage(ctx context.Context, userID string, p ams.ListParams) (*ams.Page[*ams.OAuthClient], error)
	FindUser(ctx context.Context, id string) (*ams.User, error)
	// PublicRedirectURIs gives the origins of the public clients' pages
	// (cors.go).
	PublicRedirectURIs(ctx context.Context) (map[string][]string, error)
}

// RecordStore is what the middleware reads and records beside the
// handlers (Server.Records): credentials (authcache.go), the use of API
// keys and the idempotency records (middleware.go). The store of app.New
// satisfies it.
type RecordStore interface {
	AuthenticateKey(ctx context.Context, hash string) (*ams.APIKey, *ams.User, error)
	AuthGeneration(ctx context.Context) (int64, error)
	TouchKey(ctx context.Context, id string, now time.Time) error
	BeginIdempotent(ctx context.Context, rec *ams.IdempotencyRecord) (*ams.IdempotencyRecord, error)
	FinishIdempotent(ctx context.Context, rec *ams.IdempotencyRecord) error
	ReleaseIdempotent(ctx context.Context, userID, key string) error
}
