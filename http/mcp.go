package http

// ams as an MCP server (DESIGN.md, "MCP"): POST /mcp speaks the Model
// Context Protocol over Streamable HTTP through the official Go SDK
// (github.com/modelcontextprotocol/go-sdk), in its stateless mode: each
// HTTP request stands alone, so any process of a scaled-out ams answers
// any request and nothing is kept between them.
//
// The endpoint sits behind the API's own chain: the request id and the
// request log (withRequestID), authentication by API key or OAuth access
// token, the account's rate limits and usage metering (rateLimit), one
// count per HTTP request, as for /v1. A tool is a REST operation under
// another name: its call runs the route's own prelude and handler (the
// same checks, the same service, the same JSON) on an in-memory answer,
// after the permission check of the route; the answer's JSON is the
// result's structuredContent. A rule therefore lives in one place, the
// REST handler and the service behind it.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/oauth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCPPath is where the MCP endpoint is served, at the server's root.
const MCPPath = "/mcp"

// protectedResourcePath is the RFC 9728 metadata of the server's
// protected resources; the MCP endpoint's own is this path followed by
// MCPPath.
const protectedResourcePath = "/.well-known/oauth-protected-resource"

// mcpTool is one tool of the MCP server: the REST operation it runs.
type mcpTool struct {
	route Route // the REST twin: permissions, prelude and handler
	// readOnly tools change nothing (annotations.readOnlyHint).
	readOnly bool
}

// mcpCall is the REST request a tool call becomes: the path's values,
// the query and the JSON body (nil: none).
type mcpCall struct {
	path  map[string]string
	query url.Values
	body  any
}

// Inputs of the tools. Their JSON Schemas are inferred by the SDK from
// these types (the jsonschema tags are the descriptions); a field without
// omitempty is required.
type (
	mcpPage struct {
		Limit *int   `json:"limit,omitempty" jsonschema:"How many records to return, 1 to 100 (default 20)."`
		After string `json:"after,omitempty" jsonschema:"A record id: return the records after it (the last_id of the previous page)."`
	}
	mcpListAssistants struct {
		mcpPage
	}
	mcpSendMessage struct {
		AssistantID    string `json:"assistant_id" jsonschema:"The assistant to talk to (ast_...)."`
		Message        string `json:"message" jsonschema:"The text to send."`
		ConversationID string `json:"conversation_id,omitempty" jsonschema:"The conversation to continue (conv_...); without it a new conversation starts."`
	}
	mcpListConversations struct {
		mcpPage
		AssistantID string `json:"assistant_id,omitempty" jsonschema:"Only this assistant's conversations (ast_...)."`
	}
	mcpListMessages struct {
		mcpPage
		ConversationID string `json:"conversation_id" jsonschema:"The conversation whose messages to list (conv_...)."`
	}
	mcpListTasks struct {
		mcpPage
		AssistantID string `json:"assistant_id,omitempty" jsonschema:"Only this assistant's tasks (ast_...)."`
		Status      string `json:"status,omitempty" jsonschema:"open or completed."`
		DueAfter    string `json:"due_after,omitempty" jsonschema:"Only tasks due after this time (RFC 3339)."`
		DueBefore   string `json:"due_before,omitempty" jsonschema:"Only tasks due before this time (RFC 3339)."`
	}
	mcpCreateTask struct {
		Title       string `json:"title" jsonschema:"The task's title."`
		Notes       string `json:"notes,omitempty" jsonschema:"Notes."`
		DueAt       string `json:"due_at,omitempty" jsonschema:"When the task is due (RFC 3339)."`
		RemindAt    string `json:"remind_at,omitempty" jsonschema:"When to remind (RFC 3339): task.reminder is emitted then."`
		AssistantID string `json:"assistant_id" jsonschema:"The assistant the task belongs to (ast_...)."`
	}
	mcpCompleteTask struct {
		TaskID string `json:"task_id" jsonschema:"The task to mark completed (task_...)."`
	}
	mcpListCalendarEvents struct {
		mcpPage
		AssistantID  string `json:"assistant_id,omitempty" jsonschema:"Only this assistant's events (ast_...)."`
		StartsAfter  string `json:"starts_after,omitempty" jsonschema:"Only events starting after this time (RFC 3339)."`
		StartsBefore string `json:"starts_before,omitempty" jsonschema:"Only events starting before this time (RFC 3339)."`
	}
	mcpCreateCalendarEvent struct {
		Title       string `json:"title" jsonschema:"The event's title."`
		StartsAt    string `json:"starts_at" jsonschema:"When it starts (RFC 3339)."`
		EndsAt      string `json:"ends_at,omitempty" jsonschema:"When it ends (RFC 3339)."`
		Description string `json:"description,omitempty" jsonschema:"A description."`
		Location    string `json:"location,omitempty" jsonschema:"Where it takes place."`
		RemindAt    string `json:"remind_at,omitempty" jsonschema:"When to remind (RFC 3339): event.reminder is emitted then."`
		AssistantID string `json:"assistant_id" jsonschema:"The assistant the event belongs to (ast_...)."`
	}
)

// query returns the page's query parameters with the filters given
// (name, value pairs; empty values left out).
func (p mcpPage) query(filters ...string) url.Values {
	q := url.Values{}
	if p.Limit != nil {
		q.Set("limit", strconv.Itoa(*p.Limit))
	}
	if p.After != "" {
		q.Set("after", p.After)
	}
	for i := 0; i+1 < len(filters); i += 2 {
		if filters[i+1] != "" {
			q.Set(filters[i], filters[i+1])
		}
	}
	return q
}

// newMCPServer returns the MCP server of s's tools. It is built once and
// serves every request (the SDK allows one server for many sessions).
func (s *Server) newMCPServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "ams", Title: "ams: your AI assistants", Version: ams.Version}, &mcp.ServerOptions{
		Instructions: "Tools of ams, the assistant messaging service: talk to the account's assistants, read their conversations, and manage their tasks and calendar. Each tool needs the permission of its REST twin in the API.",
		Logger:       s.Logger,
	})
	addMCPTool(s, srv, "list_assistants", "List the account's assistants, newest first.", "GET /v1/assistants", true,
		func(in mcpListAssistants) mcpCall { return mcpCall{query: in.query()} })
	addMCPTool(s, srv, "send_message", "Send a message to an assistant and get its reply (a Message record). Without conversation_id a new conversation starts.", "POST /v1/messages", false,
		func(in mcpSendMessage) mcpCall {
			body := map[string]string{"assistant_id": in.AssistantID, "message": in.Message}
			if in.ConversationID != "" {
				body["conversation_id"] = in.ConversationID
			}
			return mcpCall{body: body}
		})
	addMCPTool(s, srv, "list_conversations", "List the account's conversations, newest first.", "GET /v1/conversations", true,
		func(in mcpListConversations) mcpCall { return mcpCall{query: in.query("assistant_id", in.AssistantID)} })
	addMCPTool(s, srv, "list_messages", "List the messages of a conversation, newest first.", "GET /v1/conversations/{id}/messages", true,
		func(in mcpListMessages) mcpCall {
			return mcpCall{path: map[string]string{"id": in.ConversationID}, query: in.query()}
		})
	addMCPTool(s, srv, "list_tasks", "List the account's tasks, newest first.", "GET /v1/tasks", true,
		func(in mcpListTasks) mcpCall {
			return mcpCall{query: in.query("assistant_id", in.AssistantID, "status", in.Status, "due_after", in.DueAfter, "due_before", in.DueBefore)}
		})
	addMCPTool(s, srv, "create_task", "Create a task.", "POST /v1/tasks", false,
		func(in mcpCreateTask) mcpCall { return mcpCall{body: in} })
	addMCPTool(s, srv, "complete_task", "Mark a task completed.", "POST /v1/tasks/{id}/complete", false,
		func(in mcpCompleteTask) mcpCall { return mcpCall{path: map[string]string{"id": in.TaskID}} })
	addMCPTool(s, srv, "list_calendar_events", "List the account's calendar events, newest first.", "GET /v1/calendar/events", true,
		func(in mcpListCalendarEvents) mcpCall {
			return mcpCall{query: in.query("assistant_id", in.AssistantID, "starts_after", in.StartsAfter, "starts_before", in.StartsBefore)}
		})
	addMCPTool(s, srv, "create_calendar_event", "Create a calendar event.", "POST /v1/calendar/events", false,
		func(in mcpCreateCalendarEvent) mcpCall { return mcpCall{body: in} })
	return srv
}

// addMCPTool adds the tool name to srv: its input In, and the REST route
// ("METHOD pattern") it runs, with the request build makes of the input.
func addMCPTool[In any](s *Server, srv *mcp.Server, name, description, route string, readOnly bool, build func(In) mcpCall) {
	tool := mcpTool{readOnly: readOnly}
	for _, rt := range s.routes {
		if rt.Method+" "+rt.Pattern == route {
			tool.route = rt
		}
	}
	if tool.route.Handler == nil {
		panic("mcp: no route " + route) // the table is constant
	}
	var perms []string
	for _, p := range tool.route.Permissions {
		perms = append(perms, string(p))
	}
	f := false
	mcp.AddTool(srv, &mcp.Tool{
		Name:        name,
		Description: fmt.Sprintf("%s Needs one of these permissions: %s. The result is the JSON of %s.", description, strings.Join(perms, ", "), route),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: readOnly, DestructiveHint: &f, OpenWorldHint: &f},
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in In) (*mcp.CallToolResult, any, error) {
		return s.runMCPTool(ctx, name, tool, build(in))
	})
}

// runMCPTool runs call through tool's REST route for the caller of ctx
// (the /mcp request's): the permission check, then the route's prelude
// and handler on an in-memory answer. A 2xx answer is the result's
// structuredContent (and its text); an error answer is an error result
// carrying the API's error body.
func (s *Server) runMCPTool(ctx context.Context, name string, tool mcpTool, call mcpCall) (res *mcp.CallToolResult, _ any, err error) {
	st := stateOf(ctx)
	defer func() {
		// The SDK runs the call on a goroutine of its own, outside
		// withRequestID's recover: a panic is answered here, as there.
		if p := recover(); p != nil {
			s.Logger.ErrorContext(ctx, "internal error", "request_id", st.id, "tool", name, "err", fmt.Errorf("panic: %v", p))
			res, err = mcpError(&ams.Error{Kind: ams.EINTERNAL, Code: "internal_error",
				Message: "An internal error occurred. If it persists, contact support with the request id."}, st.id), nil
		}
	}()
	a := st.auth
	if a == nil { // serveMCP authenticates before the SDK runs
		return nil, nil, fmt.Errorf("mcp: tool %s called without a caller", name)
	}
	rt := tool.route
	if !a.Permissions.Allows(rt.Permissions...) {
		scope := make([]string, len(rt.Permissions))
		for i, p := range rt.Permissions {
			scope[i] = string(p)
		}
		e := ams.Errorf(ams.EFORBIDDEN, "insufficient_scope",
			"The tool %s needs one of these permissions: %s. The credential has: %s.", name, strings.Join(scope, ", "), a.Permissions.String())
		s.Logger.InfoContext(ctx, "mcp tool call", "request_id", st.id, "tool", name, "status", http.StatusForbidden)
		return mcpError(e, st.id), nil, nil
	}
	var body []byte
	if call.body != nil {
		var err error
		if body, err = json.Marshal(call.body); err != nil {
			return nil, nil, err
		}
	}
	target := rt.Pattern
	if len(call.query) > 0 {
		target += "?" + call.query.Encode()
	}
	// The tool's request has a state of its own (a list's page, its
	// answer), with the caller and the request id of the /mcp request.
	rec := &bufferedWriter{header: http.Header{}}
	sw := &statusWriter{ResponseWriter: rec}
	sub := &reqState{id: st.id, auth: a, resp: sw}
	ctx = context.WithValue(ctx, reqStateKey{}, sub)
	if rt.Method != http.MethodGet {
		ctx = ams.WithRequest(ctx, &ams.EventRequest{ID: st.id})
	}
	if s.RequestTimeout > 0 {
		limit := s.RequestTimeout
		if upstreamRoutes[rt.Method+" "+rt.Pattern] {
			limit += s.UpstreamTimeout
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
	r, err := http.NewRequestWithContext(ctx, rt.Method, target, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	r.Pattern = rt.Method + " " + rt.Pattern
	for k, v := range call.path {
		r.SetPathValue(k, v)
	}
	if body != nil {
		r.Header.Set("Content-Type", "application/json")
		r.ContentLength = int64(len(body))
	}
	h := rt.prelude()
	if turnRoutes[rt.Method+" "+rt.Pattern] {
		h = s.withTurnSlot(h)
	}
	if err := checkText(r, rt.Pattern); err != nil {
		s.writeError(sw, r, err)
	} else if err := h(sw, r); err != nil {
		s.writeError(sw, r, err)
	}
	s.Logger.InfoContext(ctx, "mcp tool call", "request_id", st.id, "tool", name, "status", sw.status)
	out := json.RawMessage(bytes.TrimSpace(rec.body.Bytes()))
	if sw.status < 200 || sw.status > 299 {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(out)}}, StructuredContent: out}, nil, nil
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(out)}}, StructuredContent: out}, nil, nil
}

// mcpError is the error result of err: the API's error body, as text and
// as structuredContent.
func mcpError(e *ams.Error, requestID string) *mcp.CallToolResult {
	b := mustJSON(errorBody{Error: errorDetail{Type: e.Kind.Type(), Code: e.Code, Message: e.Message, Param: e.Param}, RequestID: requestID})
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: json.RawMessage(b)}
}

// serveMCP is /mcp: authentication (a 401 names the resource's metadata,
// RFC 9728), the rate limits and metering of the account, then the SDK's
// Streamable HTTP handler.
func (s *Server) serveMCP(w http.ResponseWriter, r *http.Request) error {
	if _, err := s.authorize(w, r); err != nil {
		return err
	}
	s.mcpHTTP.ServeHTTP(w, r)
	return nil
}

// mcpChallenge is the WWW-Authenticate of a 401 from /mcp: RFC 6750's
// with RFC 9728's resource_metadata, which an MCP client follows to find
// the authorization server.
func (s *Server) mcpChallenge(r *http.Request) string {
	return fmt.Sprintf(`Bearer error="invalid_token", resource_metadata="%s"`, s.baseURL(r)+protectedResourcePath+MCPPath)
}

// protectedResource answers the RFC 9728 metadata of the MCP endpoint
// (at protectedResourcePath + MCPPath) or of the server as a whole (at
// protectedResourcePath): the resource, its authorization server (ams's
// own), the scopes and how a token is sent.
func (s *Server) protectedResource(resource string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		base := s.baseURL(r)
		scopes := oauth.MCPScopes // what the tools need
		if resource != MCPPath {
			scopes = make([]string, len(ams.AllPermissions))
			for i, p := range ams.AllPermissions {
				scopes[i] = string(p)
			}
		}
		doc := map[string]any{
			"resource":                 base + resource,
			"resource_name":            "ams",
			"authorization_servers":    []string{base},
			"scopes_supported":         scopes,
			"bearer_methods_supported": []string{"header"},
		}
		w.Header().Set("Cache-Control", "public, max-age=3600")
		writeJSON(w, http.StatusOK, doc)
	}
}

// mcpHandler returns the SDK's Streamable HTTP handler over s's tools.
//
// Stateless: no session is kept, so every request stands alone and any
// process answers it. JSONResponse: a call is answered with one JSON
// body, not an event stream (the tools answer once). The SDK's DNS
// rebinding check is off: it refuses a request that reached a loopback
// address under another Host, which is every request through a reverse
// proxy on the same machine; the attack it guards against needs an
// endpoint that trusts the browser's ambient credentials, and /mcp takes
// only bearer tokens.
func (s *Server) mcpHandler() http.Handler {
	srv := s.newMCPServer()
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		Stateless:                  true,
		JSONResponse:               true,
		Logger:                     s.Logger,
		MaxRequestBodyBytes:        MaxBodyBytes,
		DisableLocalhostProtection: true,
	})
}
