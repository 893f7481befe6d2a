package http

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/amsdev/ams"
)

// The account's events, live: GET /v1/events/stream answers Server-Sent
// Events, one per event of the account, in the catch-up order of
// GET /v1/events?order=asc&after= (the order that grows only at its end,
// so that a reader never skips an event, even one whose change committed
// late):
//
//	id: evt_…
//	event: task.created
//	data: {"id":"evt_…","object":"event","type":"task.created","created_at":"…","data":{…}}
//
// The id is the event's id: a client that reconnects with it in
// Last-Event-ID (or ?after=) gets the events after it, none skipped, none
// twice. Without either the stream starts after the newest event listed
// now (only new events). ?type= keeps one type. The permission is
// GET /v1/events's (read); management events need admin, as there.
// While nothing is sent a comment line (": keep-alive") goes out every
// 15 s, so that proxies with an idle timeout keep the connection.
//
// The stream reads the store a page (100 events) at a time, so its memory
// is bounded whatever the backlog, and looks for new events every
// StreamPoll (250 ms): the store has no change notification for events
// that every stream could wait on (JobsReady wakes the one delivery worker,
// and only when a webhook subscribes), and events committed by other
// processes on the database must be seen too. A stream holds one of the
// account's turn slots (MaxConcurrentTurns) while it is open, so that an
// account cannot hold connections without bound; it ends when the client
// leaves or the server shuts down (the client resumes elsewhere with
// Last-Event-ID).

// eventStreamPage is how many events a stream reads from the store at once.
const eventStreamPage = 100

// streamEvents answers GET /v1/events/stream.
func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	if err := checkQuery(q, false, "type", "after"); err != nil {
		return err
	}
	f := ams.EventFilter{Type: q.Get("type")}
	if f.Type != "" && !ams.IsEventType(f.Type) && f.Type != ams.EventWebhookPing {
		return ams.ParamError("parameter_invalid", "type", "Unknown event type '%s'.", ams.Clip(f.Type))
	}
	if !auth(r).Permissions.Allows(ams.PermAdmin) {
		if ams.IsManagementEvent(f.Type) {
			return needAdmin(w, ams.ErrManagementEventsNeedAdmin("type", f.Type))
		}
		f.NoManagement = true
	}
	after, param := strings.TrimSpace(r.Header.Get("Last-Event-ID")), "Last-Event-ID"
	if after == "" {
		after, param = q.Get("after"), "after"
	}
	if after != "" && !ams.HasPrefixID(after, ams.PrefixEvent) {
		return ams.ParamError("parameter_invalid", param, "'%s' must be the id of an event of the stream (evt_…).", param)
	}
	userID := auth(r).User.ID
	ctx := r.Context()
	// The first page is read before the stream begins, so that a cursor
	// that is no event of the list is an ordinary 400 answer.
	var page *ams.Page[*ams.Event]
	var err error
	if after == "" {
		// Only new events: start after the newest one listed now.
		newest, err := s.Store.ListEvents(ctx, userID, f, ams.ListParams{Limit: 1, Order: ams.OrderDesc})
		if err != nil {
			return err
		}
		if len(newest.Data) > 0 {
			after = newest.Data[0].ID
		}
	}
	page, err = s.Store.ListEvents(ctx, userID, f, ams.ListParams{Limit: eventStreamPage, Order: ams.OrderAsc, After: after})
	if err != nil {
		if e, ok := err.(*ams.Error); ok && e.Param == "after" && param != "after" {
			e2 := *e
			e2.Param = param
			return &e2
		}
		return err
	}
	sse := newSSEWriter(w)
	// A first comment at once: the headers reach the client now, not
	// with the first event (the compression layer holds them until a
	// body is written), so that it knows the stream is open.
	if sse.start() != nil || sse.keepAlive() != nil {
		return nil
	}
	stop := s.keepAliveEvery(sse)
	defer stop()
	poll := s.StreamPoll
	if poll <= 0 {
		poll = 250 * time.Millisecond
	}
	timer := time.NewTimer(poll)
	defer timer.Stop()
	for {
		for _, e := range page.Data {
			data, err := json.Marshal(e)
			if err != nil {
				s.Logger.Error("event stream: encode event", "request_id", requestID(ctx), "event", e.ID, "err", err)
				return nil
			}
			if sse.sendRaw(e.ID, e.Type, data) != nil {
				return nil // the client left
			}
			after = e.ID
		}
		if !page.HasMore {
			timer.Reset(poll)
			select {
			case <-ctx.Done():
				return nil
			case <-timer.C:
			}
		}
		page, err = s.Store.ListEvents(ctx, userID, f, ams.ListParams{Limit: eventStreamPage, Order: ams.OrderAsc, After: after})
		if err != nil {
			if ctx.Err() == nil {
				s.Logger.Warn("event stream", "request_id", requestID(ctx), "err", err)
			}
			return nil // the client resumes with Last-Event-ID
		}
	}
}

// triggerRequest is the body of POST /v1/events/trigger.
type triggerRequest struct {
	Type *string `json:"type"`
}

// triggerEvent answers POST /v1/events/trigger: a test event of the type
// asked (webhook.Service.Trigger), 201 with the event.
func (s *Server) triggerEvent(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r.URL.Query(), false); err != nil {
		return err
	}
	var req triggerRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	typ := ""
	if req.Type != nil {
		typ = *req.Type
	}
	if ams.IsManagementEvent(typ) && !auth(r).Permissions.Allows(ams.PermAdmin) {
		return needAdmin(w, ams.ErrManagementEventsNeedAdmin("type", typ))
	}
	e, err := s.Webhooks.Trigger(r.Context(), auth(r).User.ID, typ)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/events/"+e.ID)
	return writeJSON(w, http.StatusCreated, e)
}

// EndStreamsOnShutdown returns h with the requests of GET
// /v1/events/stream, which last until the client leaves, ended when
// shutdown is closed, so that a graceful shutdown does not wait for them
// (their clients resume on another process with Last-Event-ID). Other
// requests are left to finish.
func EndStreamsOnShutdown(h http.Handler, shutdown <-chan struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/v1/events/stream" {
			h.ServeHTTP(w, r)
			return
		}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		go func() {
			select {
			case <-shutdown:
				cancel()
			case <-ctx.Done():
			}
		}()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}
