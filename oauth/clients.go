package oauth

import (
	"context"
	"time"

	"github.com/amsdev/ams"
)

// Clients is the service of the OAuth clients' owners over one store:
// CreateClient, FindClient, RotateClientSecret, DeleteClient and
// RevokeGrants, for the callers that hold no writable store of their own
// (the management API and the account pages read a narrow store and
// change clients through this).
type Clients struct {
	Store ClientStore
}

// Create registers a client (CreateClient).
func (c *Clients) Create(ctx context.Context, p ClientParams, now time.Time) (*ams.OAuthClient, string, error) {
	return CreateClient(ctx, c.Store, p, now)
}

// Find returns the user's client id (FindClient).
func (c *Clients) Find(ctx context.Context, userID, id string) (*ams.OAuthClient, error) {
	return FindClient(ctx, c.Store, userID, id)
}

// RotateSecret gives the user's client id a new secret (RotateClientSecret).
func (c *Clients) RotateSecret(ctx context.Context, userID, id string, now time.Time) (*ams.OAuthClient, string, error) {
	return RotateClientSecret(ctx, c.Store, userID, id, now)
}

// Delete deletes the user's client id (DeleteClient).
func (c *Clients) Delete(ctx context.Context, userID, id string, now time.Time) error {
	return DeleteClient(ctx, c.Store, userID, id, now)
}

// RevokeGrants takes back what the user authorized the client clientID
// to do (RevokeGrants).
func (c *Clients) RevokeGrants(ctx context.Context, userID, clientID string, now time.Time) error {
	return RevokeGrants(ctx, c.Store, userID, clientID, now)
}
