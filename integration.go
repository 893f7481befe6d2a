package ams

import (
	"context"
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
}
