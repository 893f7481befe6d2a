package world

import (
	"context"
	"sort"
	"strings"

	"github.com/amsdev/ams"
)

// Integrations: Connect stores a new one after its provider checked the
// connection (nothing is stored if that fails), Disconnect sets one
// disconnected (the record stays, and so do the calendar events it
// brought), CreateCalendarFeed makes the account's calendar feed. Each
// change of status emits its event in the change's transaction:
// integration.connected, integration.disconnected (integration.error comes
// from the sync).

// Integrator connects and syncs the integrations of one provider.
type Integrator interface {
	// Check validates the config and secrets of a new integration and
	// tries the connection once. It returns the config to store (never
	// a secret), or an *ams.Error to answer.
	Check(ctx context.Context, config map[string]any, secrets map[string]string) (map[string]any, error)
	// Connected is told of a new integration (to start its first sync).
	Connected(in *ams.Integration)
	// SyncNow syncs the integration at once and returns it as it is
	// afterwards; the error is the store's, a failed sync is the
	// integration's status.
	SyncNow(ctx context.Context, in *ams.Integration) (*ams.Integration, error)
}

// ConnectInput is what connects an integration (the body of POST
// /v1/integrations).
type ConnectInput struct {
	Provider *string        `json:"provider"`
	Config   map[string]any `json:"config"`
	Secrets  map[string]any `json:"secrets"`

	// The settings of an MCP server (provider "mcp", world/mcp.go).
	Name            *string           `json:"name"`
	URL             *string           `json:"url"`
	Headers         map[string]string `json:"headers"`
	AllowedTools    []string          `json:"allowed_tools"`
	RequireApproval []string          `json:"require_approval"`
}

// Providers lists the providers Connect connects, sorted.
func (s *Service) Providers() []string {
	var out []string
	for p := range s.Integrations {
		out = append(out, p)
	}
	if s.MCP != nil {
		out = append(out, ams.ProviderMCP)
	}
	sort.Strings(out)
	return out
}

// Connect checks in with its provider's Integrator, stores the new
// integration of userID and emits integration.connected in one
// transaction, then tells the Integrator (which starts the first sync).
func (s *Service) Connect(ctx context.Context, userID string, in ConnectInput) (*ams.Integration, error) {
	if in.Provider == nil {
		return nil, ams.ParamError("parameter_missing", "provider", "Missing required parameter 'provider'.")
	}
	if *in.Provider == FeedProvider {
		return nil, ams.ParamError("parameter_invalid", "provider", "A calendar feed is created with POST /v1/calendar/feed.")
	}
	if *in.Provider == ams.ProviderMCP && s.MCP != nil {
		return s.connectMCP(ctx, userID, in)
	}
	integ, ok := s.Integrations[*in.Provider]
	if !ok {
		return nil, ams.ParamError("parameter_invalid", "provider", "Unknown provider '%s'; supported: %s.", clip40(*in.Provider), strings.Join(s.Providers(), ", "))
	}
	for i, set := range []bool{in.Name != nil, in.URL != nil, in.Headers != nil, in.AllowedTools != nil, in.RequireApproval != nil} {
		if param := []string{"name", "url", "headers", "allowed_tools", "require_approval"}[i]; set {
			return nil, ams.ParamError("parameter_invalid", param, "'%s' is a setting of provider mcp; provider '%s' takes config and secrets.", param, clip40(*in.Provider))
		}
	}
	config := in.Config
	if config == nil {
		config = map[string]any{}
	}
	secrets := map[string]string{}
	keys := make([]string, 0, len(in.Secrets))
	for k := range in.Secrets {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, ok := in.Secrets[k].(string)
		if !ok {
			return nil, ams.ParamError("invalid_type", "secrets."+k, "'secrets.%s' must be of type string.", k)
		}
		secrets[k] = v
	}
	config, err := integ.Check(ctx, config, secrets)
	if err != nil {
		return nil, err
	}
	now := s.Clock.Now()
	out := &ams.Integration{ID: ams.NewID(ams.PrefixIntegration), Object: "integration", UserID: userID,
		Provider: *in.Provider, Status: ams.IntegrationConnected, Config: config, ConnectedAt: now, CreatedAt: now, UpdatedAt: now}
	err = s.Store.Update(ctx, func(tx ams.Tx) error {
		if err := tx.CreateIntegration(ctx, out, secrets); err != nil {
			return err
		}
		return tx.Emit(ctx, ams.IntegrationEvent(ams.EventIntegrationConnected, out, now))
	})
	if err != nil {
		return nil, err
	}
	integ.Connected(out)
	return out, nil
}

// Disconnect sets integration id disconnected and emits
// integration.disconnected, once; disconnecting it again changes nothing.
// The record stays, and so do the calendar events it brought: they become
// events of this service only, and a new connection to the same calendar
// takes them over by their UID.
func (s *Service) Disconnect(ctx context.Context, userID, id string) error {
	return s.Store.Update(ctx, func(tx ams.Tx) error {
		in, err := tx.FindIntegration(ctx, userID, id)
		if err != nil {
			return err
		}
		if in.Status == ams.IntegrationDisconnected {
			return nil
		}
		now := s.Clock.Now()
		in.Status, in.LastError, in.UpdatedAt = ams.IntegrationDisconnected, nil, now
		if err := tx.UpdateIntegration(ctx, in); err != nil {
			return err
		}
		return tx.Emit(ctx, ams.IntegrationEvent(ams.EventIntegrationDisconnected, in, now))
	})
}

// SyncNow syncs integration id at once with its provider and returns it as
// it is afterwards (a failed sync is its status error, not an error).
func (s *Service) SyncNow(ctx context.Context, userID, id string) (*ams.Integration, error) {
	in, err := s.Store.FindIntegration(ctx, userID, id)
	if err != nil {
		return nil, err
	}
	integ, ok := s.Integrations[in.Provider]
	mcpSync := in.Provider == ams.ProviderMCP && s.MCP != nil && in.MCPSettings != nil
	if !ok && !mcpSync {
		return nil, ams.Errorf(ams.EINVALID, "integration_not_syncable", "Integration '%s' (provider '%s') has nothing to sync.", in.ID, in.Provider)
	}
	if in.Status == ams.IntegrationDisconnected {
		return nil, ams.Errorf(ams.ECONFLICT, "integration_disconnected", "Integration '%s' is disconnected; connect it again with POST /v1/integrations.", in.ID)
	}
	if mcpSync {
		return s.syncMCP(ctx, in)
	}
	return integ.SyncNow(ctx, in)
}

// clip40 shortens user input quoted in an error message.
func clip40(s string) string {
	if len(s) <= 40 {
		return s
	}
	r := []rune(s)
	if len(r) > 40 {
		r = r[:40]
	}
	return string(r) + "…"
}

// The calendar feed: the account's calendar events as one iCalendar file
// at a secret URL, for calendar apps to subscribe to (they cannot send an
// Authorization header, so the URL is the credential). The feed is an
// integration of provider FeedProvider; its token is
//
//	ams_cf_<account id>_<integration id>_<40 random characters>
//
// (the ids without their prefixes), so the feed's URL finds the
// integration without a scan; only the SHA-256 hash of the whole token is
// kept, among the integration's sealed secrets, as API keys keep theirs.

// FeedProvider is the provider of calendar feeds.
const FeedProvider = "ical_feed"

// FeedTokenPrefix starts every feed token, for leak scanners.
const FeedTokenPrefix = "ams_cf_"

// FeedSecret is the name of the token's hash among the feed's secrets.
const FeedSecret = "token_sha256"

// CreateCalendarFeed makes a new calendar feed of userID and disconnects
// the account's other feeds, in one transaction with their events. It
// returns the feed and its token, which is not kept.
func (s *Service) CreateCalendarFeed(ctx context.Context, userID string) (*ams.Integration, string, error) {
	old, err := s.activeFeeds(ctx, userID)
	if err != nil {
		return nil, "", err
	}
	now := s.Clock.Now()
	in := &ams.Integration{ID: ams.NewID(ams.PrefixIntegration), Object: "integration", UserID: userID, Provider: FeedProvider,
		Status: ams.IntegrationConnected, Config: map[string]any{"format": "icalendar"}, ConnectedAt: now, CreatedAt: now, UpdatedAt: now}
	token := FeedTokenPrefix + strings.TrimPrefix(userID, ams.PrefixUser) + "_" + strings.TrimPrefix(in.ID, ams.PrefixIntegration) + "_" + ams.NewSecret("")
	err = s.Store.Update(ctx, func(tx ams.Tx) error {
		for _, id := range old {
			o, err := tx.FindIntegration(ctx, userID, id)
			if err != nil {
				return err
			}
			if o.Status == ams.IntegrationDisconnected {
				continue
			}
			o.Status, o.UpdatedAt = ams.IntegrationDisconnected, now
			if err := tx.UpdateIntegration(ctx, o); err != nil {
				return err
			}
			if err := tx.Emit(ctx, ams.IntegrationEvent(ams.EventIntegrationDisconnected, o, now)); err != nil {
				return err
			}
		}
		if err := tx.CreateIntegration(ctx, in, map[string]string{FeedSecret: ams.HashSecret(token)}); err != nil {
			return err
		}
		ams.KeepAnswer(ctx, &ams.SecretAnswer{Record: in, Secret: token})
		return tx.Emit(ctx, ams.IntegrationEvent(ams.EventIntegrationConnected, in, now))
	})
	if err != nil {
		return nil, "", err
	}
	return in, token, nil
}

// activeFeeds returns the ids of the account's feeds not disconnected.
func (s *Service) activeFeeds(ctx context.Context, userID string) ([]string, error) {
	var out []string
	p := ams.ListParams{Limit: 100, Order: ams.OrderAsc}
	for {
		page, err := s.Store.ListIntegrations(ctx, userID, p)
		if err != nil {
			return nil, err
		}
		for _, in := range page.Data {
			if in.Provider == FeedProvider && in.Status != ams.IntegrationDisconnected {
				out = append(out, in.ID)
			}
		}
		if !page.HasMore || len(page.Data) == 0 {
			return out, nil
		}
		p.After = page.Data[len(page.Data)-1].ID
	}
}
