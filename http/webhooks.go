package http

import (
	"net/http"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/webhook"
)

// Webhooks and their deliveries over HTTP (/v1/webhooks). The webhooks'
// lifecycle and field rules are package webhook's Service, shared with
// the account pages.

// webhookRequest is the body of POST and PATCH /v1/webhooks.
type webhookRequest struct {
	URL    *string   `json:"url"`
	Events *[]string `json:"events"`
	Secret *string   `json:"secret"`
	Active *bool     `json:"active"`
	// PreviousSecretExpiresIn (PATCH): seconds the replaced secret keeps
	// signing beside the new one (0 to 7 days; absent: 24 h).
	PreviousSecretExpiresIn *int64 `json:"previous_secret_expires_in"`
	// Metadata is merged into the webhook's (ams.MetadataPatch).
	Metadata ams.MetadataPatch `json:"metadata"`
	// Ordered: one delivery in flight at a time, in queue order
	// (ams.Webhook.Ordered).
	Ordered *bool `json:"ordered"`
	// Filter replaces the webhook's filter (ams.ParseWebhookFilter).
	Filter  webhook.RawField `json:"filter"`
	Payload *string          `json:"payload"`
}

// input returns the request as the service's input.
func (req *webhookRequest) input(r *http.Request) webhook.Input {
	return webhook.Input{URL: req.URL, Events: req.Events, Secret: req.Secret, Active: req.Active,
		PreviousSecretExpiresIn: req.PreviousSecretExpiresIn, Metadata: req.Metadata, Ordered: req.Ordered, Filter: req.Filter, Payload: req.Payload,
		Admin: auth(r).Permissions.Allows(ams.PermAdmin)}
}

func (s *Server) createWebhook(w http.ResponseWriter, r *http.Request) error {
	var req webhookRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	wh, err := s.Webhooks.Create(r.Context(), auth(r).User.ID, req.input(r))
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/webhooks/"+wh.ID)
	return writeJSON(w, http.StatusCreated, wh)
}

func (s *Server) listWebhooks(w http.ResponseWriter, r *http.Request) error {
	page, err := s.Store.ListWebhooks(r.Context(), auth(r).User.ID, listOf(r))
	if err != nil {
		return err
	}
	for _, h := range page.Data {
		h.ExpirePrevious(s.now())
	}
	return writeList(w, page, func(h *ams.Webhook) string { return h.ID })
}

func (s *Server) getWebhook(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	wh, err := s.Store.FindWebhook(r.Context(), auth(r).User.ID, id)
	if err != nil {
		return err
	}
	wh.ExpirePrevious(s.now()) // shown only while it still signs
	if wh.Summary, err = s.Store.SummarizeWebhook(r.Context(), auth(r).User.ID, id, s.now().Add(-ams.SummaryWindow)); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, wh)
}

func (s *Server) updateWebhook(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	var req webhookRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	wh, err := s.Webhooks.Update(r.Context(), auth(r).User.ID, id, req.input(r))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, wh)
}

func (s *Server) deleteWebhook(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := s.Webhooks.Delete(r.Context(), auth(r).User.ID, id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) pingWebhook(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := noBody(r); err != nil {
		return err
	}
	e, err := s.Webhooks.Ping(r.Context(), auth(r).User.ID, id)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusAccepted, e)
}

// recoverRequest is the body of POST /v1/webhooks/{id}/recover.
type recoverRequest struct {
	Since          *string `json:"since"`
	Until          *string `json:"until"`
	IncludeEarlier *bool   `json:"include_earlier"`
}

// recoverWebhook queues the webhook's missed events again (webhook.Service
// Recover) and answers how many.
func (s *Server) recoverWebhook(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	var req recoverRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	since, err := bodyTime(req.Since, "since")
	if err != nil {
		return err
	}
	until, err := bodyTime(req.Until, "until")
	if err != nil {
		return err
	}
	rec, err := s.Webhooks.Recover(r.Context(), auth(r).User.ID, id, since, until, req.IncludeEarlier != nil && *req.IncludeEarlier)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, rec)
}

func (s *Server) listDeliveries(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	userID := auth(r).User.ID
	if _, err := s.Store.FindWebhook(r.Context(), userID, id); err != nil {
		return err
	}
	eventID := r.URL.Query().Get("event_id")
	if eventID != "" && !ams.HasPrefixID(eventID, ams.PrefixEvent) {
		return ams.ParamError("parameter_invalid", "event_id", "'event_id' must be an event id (evt_...).")
	}
	f := ams.DeliveryFilter{EventID: eventID}
	if q := r.URL.Query(); q.Has("success") {
		v := q.Get("success")
		if v != "true" && v != "false" {
			return ams.ParamError("parameter_invalid", "success", "'success' must be true or false.")
		}
		ok := v == "true"
		f.Success = &ok
	}
	page, err := s.Store.ListDeliveries(r.Context(), userID, id, f, listOf(r))
	if err != nil {
		return err
	}
	return writeList(w, page, func(d *ams.Delivery) string { return d.ID })
}

// redelivery is the answer of POST .../deliveries/{id}/redeliver.
type redelivery struct {
	Object     string `json:"object"` // "webhook_redelivery"
	WebhookID  string `json:"webhook_id"`
	EventID    string `json:"event_id"`
	DeliveryID string `json:"delivery_id"`
	Status     string `json:"status"` // "queued"
}

// redeliveryOf answers the redelivery of d (its webhook's, found by
// FindDelivery).
func redeliveryOf(d *ams.Delivery) redelivery {
	return redelivery{Object: "webhook_redelivery", WebhookID: d.WebhookID, EventID: d.EventID, DeliveryID: d.ID, Status: "queued"}
}

func (s *Server) redeliver(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	dlv := r.PathValue("delivery_id")
	if err := noBody(r); err != nil {
		return err
	}
	d, err := s.Webhooks.Redeliver(r.Context(), auth(r).User.ID, id, dlv)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusAccepted, redeliveryOf(d))
}
