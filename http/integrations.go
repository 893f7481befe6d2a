package http

import (
	"context"
	"net/http"
	"sort"
	"strings"

	"github.com/amsdev/ams"
)

// Integrations over HTTP: POST /v1/integrations connects one (its
// provider checks the connection first; nothing is stored if that fails),
// GET reads it, DELETE disconnects it (the record stays, with status
// disconnected, and so do the calendar events it brought), and POST
// /v1/integrations/{id}/sync syncs it now. Each change of status emits
// its event in the change's transaction: integration.connected,
// integration.disconnected (integration.error comes from the sync).

// Integration statuses.
const (
	integrationConnected    = "connected"
	integrationError        = "error"
	integrationDisconnected = "disconnected"
)

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

// createIntegrationRequest is the body of POST /v1/integrations.
type createIntegrationRequest struct {
	Provider *string        `json:"provider"`
	Config   map[string]any `json:"config"`
	Secrets  map[string]any `json:"secrets"`
}

// integrationProviders lists the providers that POST /v1/integrations
// connects.
func (s *Server) integrationProviders() []string {
	var out []string
	for p := range s.Integrations {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

func (s *Server) createIntegration(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r.URL.Query(), false); err != nil {
		return err
	}
	var req createIntegrationRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if req.Provider == nil {
		return ams.ParamError("parameter_missing", "provider", "Missing required parameter 'provider'.")
	}
	if *req.Provider == feedProvider {
		return ams.ParamError("parameter_invalid", "provider", "A calendar feed is created with POST /v1/calendar/feed.")
	}
	integ, ok := s.Integrations[*req.Provider]
	if !ok {
		return ams.ParamError("parameter_invalid", "provider", "Unknown provider '%s'; supported: %s.", clipText(*req.Provider), strings.Join(s.integrationProviders(), ", "))
	}
	if req.Config == nil {
		req.Config = map[string]any{}
	}
	secrets := map[string]string{}
	for _, k := range sortedKeys(req.Secrets) {
		v, ok := req.Secrets[k].(string)
		if !ok {
			return ams.ParamError("invalid_type", "secrets."+k, "'secrets.%s' must be of type string.", k)
		}
		secrets[k] = v
	}
	config, err := integ.Check(r.Context(), req.Config, secrets)
	if err != nil {
		return err
	}
	now := s.now()
	in := &ams.Integration{ID: ams.NewID(ams.PrefixIntegration), Object: "integration", UserID: auth(r).User.ID,
		Provider: *req.Provider, Status: integrationConnected, Config: config, ConnectedAt: now, CreatedAt: now, UpdatedAt: now}
	err = s.Store.Update(r.Context(), func(tx ams.Tx) error {
		if err := tx.CreateIntegration(r.Context(), in, secrets); err != nil {
			return err
		}
		return tx.Emit(r.Context(), ams.IntegrationEvent(ams.EventIntegrationConnected, in, now))
	})
	if err != nil {
		return err
	}
	integ.Connected(in)
	w.Header().Set("Location", "/v1/integrations/"+in.ID)
	return writeJSON(w, http.StatusCreated, in)
}

func (s *Server) getIntegration(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "integration", ams.PrefixIntegration)
	if err != nil {
		return err
	}
	if err := checkQuery(r.URL.Query(), false); err != nil {
		return err
	}
	in, err := s.Store.FindIntegration(r.Context(), auth(r).User.ID, id)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, in)
}

// deleteIntegration disconnects an integration: status disconnected and
// integration.disconnected, once; disconnecting it again changes nothing.
// The record stays (GET and lists show it), and so do the calendar events
// it brought: they become events of this service only, and a new
// connection to the same calendar takes them over by their UID.
func (s *Server) deleteIntegration(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "integration", ams.PrefixIntegration)
	if err != nil {
		return err
	}
	if err := checkQuery(r.URL.Query(), false); err != nil {
		return err
	}
	userID := auth(r).User.ID
	if err := s.disconnect(r.Context(), userID, id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// disconnect sets an integration disconnected and emits
// integration.disconnected, unless it already is.
func (s *Server) disconnect(ctx context.Context, userID, id string) error {
	return s.Store.Update(ctx, func(tx ams.Tx) error {
		in, err := tx.FindIntegration(ctx, userID, id)
		if err != nil {
			return err
		}
		if in.Status == integrationDisconnected {
			return nil
		}
		now := s.now()
		in.Status, in.LastError, in.UpdatedAt = integrationDisconnected, nil, now
		if err := tx.UpdateIntegration(ctx, in); err != nil {
			return err
		}
		return tx.Emit(ctx, ams.IntegrationEvent(ams.EventIntegrationDisconnected, in, now))
	})
}

// syncIntegration syncs an integration now and answers it as it is
// afterwards: a failed sync answers 200 with status error and last_error
// (the sync itself worked as asked).
func (s *Server) syncIntegration(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "integration", ams.PrefixIntegration)
	if err != nil {
		return err
	}
	if err := noBody(r); err != nil {
		return err
	}
	in, err := s.Store.FindIntegration(r.Context(), auth(r).User.ID, id)
	if err != nil {
		return err
	}
	integ, ok := s.Integrations[in.Provider]
	if !ok {
		return ams.Errorf(ams.EINVALID, "integration_not_syncable", "Integration '%s' (provider '%s') has nothing to sync.", in.ID, in.Provider)
	}
	if in.Status == integrationDisconnected {
		return ams.Errorf(ams.ECONFLICT, "integration_disconnected", "Integration '%s' is disconnected; connect it again with POST /v1/integrations.", in.ID)
	}
	out, err := integ.SyncNow(r.Context(), in)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, out)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// clipText shortens user input quoted in an error message.
func clipText(s string) string {
	if len(s) <= 40 {
		return s
	}
	r := []rune(s)
	if len(r) > 40 {
		r = r[:40]
	}
	return string(r) + "…"
}
