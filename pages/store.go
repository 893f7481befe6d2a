package pages

import (
	"context"
	"time"

	"github.com/amsdev/ams"
)

// Reader is what the pages read from the store (Server.Store): reads
// only. A page changes nothing itself: every change is a service's
// (Accounts, Webhooks, Messages, OAuthClients), which writes it with its
// events in one transaction, so a handler that writes to the store does
// not compile. The store of app.New satisfies it.
type Reader interface {
	FindAssistant(ctx context.Context, userID, id string) (*ams.Assistant, error)
	ListAssistants(ctx context.Context, userID string, p ams.ListParams) (*ams.Page[*ams.Assistant], error)
	FindConversation(ctx context.Context, userID, id string) (*ams.Conversation, error)
	ListConversations(ctx context.Context, userID, assistantID string, p ams.ListParams) (*ams.Page[*ams.Conversation], error)
	ListMessages(ctx context.Context, userID, conversationID string, p ams.ListParams) (*ams.Page[*ams.Message], error)
	FindWebhook(ctx context.Context, userID, id string) (*ams.Webhook, error)
	ListWebhooks(ctx context.Context, userID string, p ams.ListParams) (*ams.Page[*ams.Webhook], error)
	ListDeliveries(ctx context.Context, userID, webhookID string, f ams.DeliveryFilter, p ams.ListParams) (*ams.Page[*ams.Delivery], error)
	SummarizeWebhook(ctx context.Context, userID, webhookID string, since time.Time) (*ams.WebhookSummary, error)
	FindKey(ctx context.Context, id string) (*ams.APIKey, error)
	ListKeys(ctx context.Context, userID string) ([]*ams.APIKey, error)
	FindOAuthClient(ctx context.Context, id string) (*ams.OAuthClient, error)
	ListOAuthClients(ctx context.Context, userID string) ([]*ams.OAuthClient, error)
	ListGrants(ctx context.Context, userID string, now time.Time) ([]*ams.OAuthGrant, error)
	ListWaitlist(ctx context.Context, limit int) ([]*ams.User, bool, error)
	FindIntegration(ctx context.Context, userID, id string) (*ams.Integration, error)
	ListIntegrations(ctx context.Context, userID string, p ams.ListParams) (*ams.Page[*ams.Integration], error)
	// UsageSeries reads the usage page's counts (usage.Load).
	UsageSeries(ctx context.Context, userID string, from, to time.Time, step time.Duration) ([]ams.UsagePoint, error)
	// TokenTotals sums the tokens of the account's turns (the usage
	// page's model tokens).
	TokenTotals(ctx context.Context, userID string, since time.Time) (ams.Usage, error)
}
