package openapi_test

// The document is validated with kin-openapi's openapi3 package. Its
// version here (v0.152.0) supports OpenAPI 3.1: (*openapi3.T).Validate reads
// the document's "openapi" field and, for 3.1, accepts type arrays such as
// ["string", "null"], const and the other JSON Schema 2020-12 keywords, and
// validates every example against its schema with a JSON Schema 2020-12
// validator. So no fallback of our own is needed. The tests below add the
// checks a generic validator cannot make: the conventions of this API
// (operation ids, error responses, headers, permissions) and the agreement
// of the schemas with the Go records that the server actually encodes.

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/oauth"
	"github.com/amsdev/ams/openapi"
	"github.com/amsdev/ams/webhook"
)

var (
	loadOnce sync.Once
	loaded   *openapi3.T
	loadErr  error
)

// load returns the document parsed by kin-openapi, with its refs resolved.
func load(t *testing.T) *openapi3.T {
	t.Helper()
	loadOnce.Do(func() {
		loaded, loadErr = openapi3.NewLoader().LoadFromData(openapi.Document)
	})
	if loadErr != nil {
		t.Fatalf("load openapi.json: %v", loadErr)
	}
	return loaded
}

// contractOperations are the operations of docs/api-contract.md.
var contractOperations = map[string]string{
	"GET /v1/assistants":                  "listAssistants",
	"GET /v1/assistants/{id}":             "getAssistant",
	"POST /v1/messages":                   "createMessage",
	"GET /v1/messages/{id}":               "getMessage",
	"GET /v1/conversations":               "listConversations",
	"GET /v1/conversations/{id}":          "getConversation",
	"GET /v1/conversations/{id}/messages": "listConversationMessages",
	"GET /v1/integrations":                "listIntegrations",
	"GET /v1/events":                      "listEvents",
	"GET /v1/openapi.json":                "getOpenAPIDocument",
}

// webhookOperations are the webhook operations of DESIGN.md ("Events and
// webhooks").
var webhookOperations = map[string]string{
	"POST /v1/webhooks":                                         "createWebhook",
	"GET /v1/webhooks":                                          "listWebhooks",
	"GET /v1/webhooks/{id}":                                     "getWebhook",
	"PATCH /v1/webhooks/{id}":                                   "updateWebhook",
	"DELETE /v1/webhooks/{id}":                                  "deleteWebhook",
	"POST /v1/webhooks/{id}/ping":                               "pingWebhook",
	"GET /v1/webhooks/{id}/deliveries":                          "listWebhookDeliveries",
	"POST /v1/webhooks/{id}/deliveries/{delivery_id}/redeliver": "redeliverWebhookDelivery",
}

// publicOperation is the one operation that needs no credentials.
const publicOperation = "GET /v1/openapi.json"

// eventTypes are the event types of the interface, and webhook.ping.
var eventTypes = []string{
	ams.EventMessageCreated, ams.EventMessageUpdated, ams.EventMessageDeleted,
	ams.EventTaskCreated, ams.EventTaskCompleted, ams.EventTaskUpdated, ams.EventTaskReminder,
	ams.EventEventCreated, ams.EventEventUpdated, ams.EventEventReminder,
	ams.EventIntegrationConnected, ams.EventIntegrationDisconnected, ams.EventIntegrationError,
	"webhook.ping", ams.EventWebhookFailing, ams.EventWebhookEnabled,
	ams.EventTaskDeleted, ams.EventEventDeleted, ams.EventEventRestored,
	ams.EventAPIKeyCreated, ams.EventAPIKeyRevoked,
	ams.EventOAuthClientCreated, ams.EventOAuthClientSecretRotated, ams.EventOAuthClientDeleted,
	ams.EventAccountUpdated,
	ams.EventAssistantCreated, ams.EventAssistantUpdated, ams.EventAssistantDeleted,
	ams.EventConversationCreated, ams.EventConversationUpdated, ams.EventConversationDeleted,
	ams.EventTurnRequiresAction, ams.EventTurnCompleted, ams.EventTurnFailed, ams.EventTurnCancelled,
	ams.EventWebhookDegraded, ams.EventWebhookRecovered,
}

var rateLimitHeaders = []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "RateLimit-Policy", "RateLimit"}

func TestDocumentIsValidOpenAPI31(t *testing.T) {
	doc := load(t)
	if doc.OpenAPI != "3.1.0" || !doc.IsOpenAPI31OrLater() {
		t.Fatalf("openapi = %q, want 3.1.0", doc.OpenAPI)
	}
	if err := doc.Validate(context.Background(), openapi3.EnableMultiError()); err != nil {
		t.Fatalf("openapi.json is not valid OpenAPI 3.1:\n%v", err)
	}
	if doc.Info.Version != ams.Version {
		t.Errorf("info.version = %q, want ams.Version %q", doc.Info.Version, ams.Version)
	}
	if len(doc.Servers) != 1 || doc.Servers[0].URL != "http://127.0.0.1:8080" {
		t.Errorf("servers = %v, want http://127.0.0.1:8080", doc.Servers)
	}
	// The default, which every authenticated operation restates with its
	// own scopes: an API key, or an access token.
	if len(doc.Security) != 2 || doc.Security[0]["bearerAuth"] == nil || len(doc.Security[0]["bearerAuth"]) != 0 ||
		doc.Security[1]["oauth2"] == nil || len(doc.Security[1]["oauth2"]) != 0 {
		t.Errorf("global security = %v, want bearerAuth or oauth2", doc.Security)
	}
	bearer := doc.Components.SecuritySchemes["bearerAuth"]
	if bearer == nil || bearer.Value.Type != "http" || bearer.Value.Scheme != "bearer" {
		t.Errorf("securitySchemes.bearerAuth must be http bearer")
	}
}

func TestOperationsFunction(t *testing.T) {
	ops, err := openapi.Operations()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []map[string]string{contractOperations, webhookOperations} {
		for key, id := range want {
			if got, ok := ops[key]; !ok {
				t.Errorf("Operations() lacks %s", key)
			} else if got != id {
				t.Errorf("Operations()[%q] = %q, want %q", key, got, id)
			}
		}
	}
	// Operations reads the JSON by hand: it must see what kin-openapi sees.
	doc := load(t)
	seen := map[string]string{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			seen[strings.ToUpper(method)+" "+path] = op.OperationID
		}
	}
	if !maps.Equal(ops, seen) {
		t.Errorf("Operations() = %v\nkin-openapi sees %v", ops, seen)
	}
}

// TestPathItemsHoldOnlyOperations keeps path-level fields (parameters,
// summary, ...) out of the document: the route conformance test in http/
// decodes every field of a path item as an operation. Path parameters are
// declared on each operation instead, which OpenAPI treats the same.
func TestPathItemsHoldOnlyOperations(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openapi.Document, &doc); err != nil {
		t.Fatal(err)
	}
	methods := []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}
	for path, item := range doc.Paths {
		for field := range item {
			if !slices.Contains(methods, field) {
				t.Errorf("path %s has the path-level field %q; move it into the operations", path, field)
			}
		}
	}
}

func TestOperationConventions(t *testing.T) {
	doc := load(t)
	camel := regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)
	ids := map[string]string{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			key := strings.ToUpper(method) + " " + path
			t.Run(key, func(t *testing.T) {
				if op.OperationID == "" {
					t.Fatal("no operationId")
				}
				if !camel.MatchString(op.OperationID) {
					t.Errorf("operationId %q is not camelCase", op.OperationID)
				}
				if other, dup := ids[op.OperationID]; dup {
					t.Errorf("operationId %q also used by %s", op.OperationID, other)
				}
				ids[op.OperationID] = key
				if op.Summary == "" || op.Description == "" || len(op.Tags) == 0 {
					t.Error("needs a summary, a description and a tag")
				}
				checkPathParameters(t, path, item, op)
				checkResponses(t, key, op)
				if key == publicOperation {
					if op.Security == nil || len(*op.Security) != 0 {
						t.Error("must declare security: [] (no credentials)")
					}
					if _, ok := op.Extensions["x-permissions"]; ok {
						t.Error("a public operation has no x-permissions")
					}
					return
				}
				perms := permissions(t, op)
				if len(perms) == 0 {
					t.Fatal("x-permissions missing or empty")
				}
				checkSecurity(t, op, perms)
				for _, p := range perms {
					if !slices.Contains(ams.AllPermissions, ams.Permission(p)) {
						t.Errorf("x-permissions names unknown permission %q", p)
					}
					if !strings.Contains(op.Description, "`"+p+"`") {
						t.Errorf("description does not name permission `%s`", p)
					}
				}
				for _, status := range []int{401, 429} {
					if op.Responses.Status(status) == nil {
						t.Errorf("no %d response", status)
					}
				}
				if method == "POST" {
					checkPost(t, op)
				}
			})
		}
	}
}

// checkSecurity checks that an authenticated operation accepts either
// credential: an API key, or an access token with any one of the scopes
// the operation's x-permissions name.
func checkSecurity(t *testing.T, op *openapi3.Operation, perms []string) {
	t.Helper()
	if op.Security == nil {
		t.Error(`must declare security: [{"bearerAuth": []}, {"oauth2": <x-permissions>}]`)
		return
	}
	sec := *op.Security
	if len(sec) != 2 || len(sec[0]) != 1 || len(sec[1]) != 1 {
		t.Errorf(`security = %v, want [{"bearerAuth": []}, {"oauth2": %v}]`, sec, perms)
		return
	}
	if scopes, ok := sec[0]["bearerAuth"]; !ok || len(scopes) != 0 {
		t.Errorf(`security[0] = %v, want {"bearerAuth": []}`, sec[0])
	}
	if scopes, ok := sec[1]["oauth2"]; !ok || !slices.Equal(scopes, perms) {
		t.Errorf(`security[1] = %v, want {"oauth2": %v} (the x-permissions, in their order)`, sec[1], perms)
	}
}

// checkPathParameters checks that every {name} of the path has a required
// path parameter whose schema has a prefix pattern.
func checkPathParameters(t *testing.T, path string, item *openapi3.PathItem, op *openapi3.Operation) {
	t.Helper()
	for _, m := range regexp.MustCompile(`\{([^}]+)\}`).FindAllStringSubmatch(path, -1) {
		p := op.Parameters.GetByInAndName("path", m[1])
		if p == nil {
			p = item.Parameters.GetByInAndName("path", m[1])
		}
		if p == nil {
			t.Errorf("path parameter %s not declared", m[1])
			continue
		}
		if !p.Required || p.Schema == nil || !strings.HasPrefix(p.Schema.Value.Pattern, "^") {
			t.Errorf("path parameter %s must be required with a prefix pattern", m[1])
		}
	}
}

func checkResponses(t *testing.T, key string, op *openapi3.Operation) {
	t.Helper()
	for code, ref := range op.Responses.Map() {
		r := ref.Value
		if r.Headers["X-Request-Id"] == nil {
			t.Errorf("%s response lacks X-Request-Id", code)
		}
		if code == "204" {
			// No Content: headers only.
			if len(r.Content) != 0 {
				t.Error("204 response has content")
			}
			for _, h := range rateLimitHeaders {
				if r.Headers[h] == nil {
					t.Errorf("%s response lacks %s", code, h)
				}
			}
			continue
		}
		if code == "304" {
			// Not Modified (a conditional GET): headers only, the ETag
			// among them.
			if len(r.Content) != 0 || r.Headers["ETag"] == nil {
				t.Error("304 response must have no content and an ETag header")
			}
			for _, h := range rateLimitHeaders {
				if r.Headers[h] == nil {
					t.Errorf("%s response lacks %s", code, h)
				}
			}
			continue
		}
		if sse := r.Content.Get("text/event-stream"); sse != nil && len(r.Content) == 1 && code == "200" {
			// A streamed answer (POST /v1/messages with "stream": true):
			// Server-Sent Events, with the headers of any success.
			if sse.Schema == nil {
				t.Errorf("%s response has no text/event-stream schema", code)
			}
			for _, h := range rateLimitHeaders {
				if r.Headers[h] == nil {
					t.Errorf("%s response lacks %s", code, h)
				}
			}
			continue
		}
		mt := r.Content.Get("application/json")
		if mt == nil || mt.Schema == nil {
			t.Errorf("%s response has no application/json schema", code)
			continue
		}
		switch {
		case code >= "400":
			if mt.Schema.Ref != "#/components/schemas/Error" {
				t.Errorf("%s response schema is %q, want the Error schema", code, mt.Schema.Ref)
			}
			if !strings.HasPrefix(ref.Ref, "#/components/responses/") {
				t.Errorf("%s response must be a shared components/responses entry", code)
			}
		case code >= "200" && code < "300" && key != publicOperation:
			for _, h := range rateLimitHeaders {
				if r.Headers[h] == nil {
					t.Errorf("%s response lacks %s", code, h)
				}
			}
		}
	}
	if r := op.Responses.Status(429); r != nil && r.Value.Headers["Retry-After"] == nil {
		t.Error("429 response lacks Retry-After")
	}
	if r := op.Responses.Status(201); r != nil && r.Value.Headers["Location"] == nil {
		t.Error("201 response lacks Location")
	}
}

func checkPost(t *testing.T, op *openapi3.Operation) {
	t.Helper()
	if p := op.Parameters.GetByInAndName("header", "Idempotency-Key"); p == nil {
		t.Error("POST lacks the Idempotency-Key header parameter")
	}
	if op.RequestBody == nil {
		t.Fatal("POST needs a request body")
	}
	mt := op.RequestBody.Value.Content.Get("application/json")
	if mt == nil || mt.Schema == nil {
		t.Fatal("POST body has no application/json schema")
	}
	s := mt.Schema.Value
	closed := s.AdditionalProperties.Has != nil && !*s.AdditionalProperties.Has
	if op.RequestBody.Value.Required {
		if !closed || len(s.Required) == 0 {
			t.Error("POST body schema needs required fields and additionalProperties: false")
		}
	} else if !closed || len(s.Properties) != 0 {
		// A POST that takes no parameters (ping, redeliver) accepts no
		// body or {}, and nothing else.
		t.Error("an optional POST body must be the empty object: no properties and additionalProperties: false")
	}
	for _, status := range []int{400, 409, 413, 415} {
		if op.Responses.Status(status) == nil {
			t.Errorf("POST lacks a %d response", status)
		}
	}
}

func permissions(t *testing.T, op *openapi3.Operation) []string {
	t.Helper()
	raw, ok := op.Extensions["x-permissions"]
	if !ok {
		return nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		t.Fatal(err)
	}
	var perms []string
	if err := json.Unmarshal(b, &perms); err != nil {
		t.Fatalf("x-permissions is not a list of strings: %s", b)
	}
	return perms
}

// TestRecordSchemasAreClosed checks that record schemas list every field as
// required and allow no other.
func TestRecordSchemasAreClosed(t *testing.T) {
	doc := load(t)
	names := []string{
		"Error", "Assistant", "Conversation", "Message", "Integration", "Task", "CalendarEvent",
		"AssistantList", "ConversationList", "MessageList", "IntegrationList", "EventList",
		"Webhook", "Delivery", "WebhookRedelivery", "WebhookList", "DeliveryList",
		"EventData_message_created", "EventData_integration_error", "EventData_webhook_ping",
		"APIKey", "CreatedAPIKey", "APIKeyList", "OAuthClient", "OAuthClientWithSecret", "OAuthClientList",
		"Account", "EmailNotifications", "EventData_account_updated",
	}
	for _, typ := range eventTypes {
		names = append(names, "Event_"+underscore(typ))
	}
	for _, name := range names {
		ref := doc.Components.Schemas[name]
		if ref == nil {
			t.Errorf("schema %s missing", name)
			continue
		}
		s := ref.Value
		if s.AdditionalProperties.Has == nil || *s.AdditionalProperties.Has {
			t.Errorf("%s: additionalProperties must be false", name)
		}
		props := slices.Sorted(maps.Keys(s.Properties))
		if strings.HasPrefix(name, "Event_") {
			// test is the one optional field of an event: only test
			// events (POST /v1/events/trigger) have it.
			props = slices.DeleteFunc(props, func(p string) bool { return p == "test" })
		}
		if req := slices.Sorted(slices.Values(s.Required)); !slices.Equal(props, req) {
			t.Errorf("%s: required %v, want every property %v", name, req, props)
		}
	}
}

// TestEventTypesDocumented checks that every event type has its data
// schema and its variant of the Event schema.
func TestEventTypesDocumented(t *testing.T) {
	doc := load(t)
	schemas := doc.Components.Schemas
	var enum []string
	for _, v := range schemas["EventType"].Value.Enum {
		enum = append(enum, v.(string))
	}
	if !slices.Equal(slices.Sorted(slices.Values(enum)), slices.Sorted(slices.Values(eventTypes))) {
		t.Errorf("EventType enum %v, want %v", enum, eventTypes)
	}
	var variants []string
	for _, r := range schemas["Event"].Value.OneOf {
		variants = append(variants, r.Ref)
	}
	if len(variants) != len(eventTypes) {
		t.Errorf("Event has %d variants, want %d", len(variants), len(eventTypes))
	}
	for _, typ := range eventTypes {
		name := "Event_" + underscore(typ)
		if !slices.Contains(variants, "#/components/schemas/"+name) {
			t.Errorf("Event.oneOf lacks %s", name)
		}
		v := schemas[name]
		if v == nil {
			t.Errorf("schema %s missing", name)
			continue
		}
		if c := v.Value.Properties["type"].Value.Const; c != typ {
			t.Errorf("%s: type const %v, want %q", name, c, typ)
		}
		dataName := "EventData_" + underscore(typ)
		if schemas[dataName] == nil {
			t.Errorf("schema %s missing", dataName)
		}
		if got := v.Value.Properties["data"].Ref; got != "#/components/schemas/"+dataName {
			t.Errorf("%s: data is %q, want %s", name, got, dataName)
		}
	}
}

func underscore(typ string) string { return strings.ReplaceAll(typ, ".", "_") }

// TestRecordsMatchSchemas encodes the Go records as the server does and
// validates them against their schemas, so that a field added to a record
// but not to the document (or the reverse) fails here.
func TestRecordsMatchSchemas(t *testing.T) {
	doc := load(t)
	at := time.Date(2026, 11, 21, 10, 0, 0, 120e6, time.UTC) // 120 ms: a trailing zero must stay (".120Z")
	astID, convID := ams.NewID(ams.PrefixAssistant), ams.NewID(ams.PrefixConversation)
	asst := &ams.Assistant{ID: astID, Object: "assistant", UserID: "usr_x", Name: "Ada", Model: ams.ModelBuiltin, CreatedAt: at, UpdatedAt: at}
	conv := &ams.Conversation{ID: convID, Object: "conversation", UserID: "usr_x", AssistantID: astID, Title: "Hi", MessageCount: 2, LastMessageAt: at, CreatedAt: at, UpdatedAt: at}
	msg := &ams.Message{ID: ams.NewID(ams.PrefixMessage), Object: "message", UserID: "usr_x", AssistantID: astID, ConversationID: convID,
		Direction: ams.DirectionOutbound, Content: "Hello!\nHow can I help?", CreatedAt: at, UpdatedAt: at}
	in := *msg
	in.ID, in.Direction = ams.NewID(ams.PrefixMessage), ams.DirectionInbound
	lastErr := "token expired"
	integ := &ams.Integration{ID: ams.NewID(ams.PrefixIntegration), Object: "integration", Provider: "google_calendar", Status: "connected",
		Config: map[string]any{"calendar": "primary"}, ConnectedAt: at, CreatedAt: at, UpdatedAt: at}
	failing := *integ
	failing.Status, failing.LastError = "error", &lastErr
	first, last := msg.ID, in.ID

	// Webhook records, built as the handlers and the delivery worker build
	// them (http/webhooks.go, webhook/worker.go).
	wh := &ams.Webhook{ID: ams.NewID(ams.PrefixWebhook), Object: "webhook", UserID: "usr_x", URL: "https://example.com/webhooks/ams",
		Events: []string{ams.EventMessageCreated, ams.EventTaskReminder}, Active: true, Status: ams.WebhookActive,
		Secret: exampleSecret, CreatedAt: at, UpdatedAt: at, Payload: ams.PayloadFull}
	failingWH := *wh
	failingWH.ID, failingWH.Events, failingWH.Active, failingWH.Status = ams.NewID(ams.PrefixWebhook), slices.Clone(ams.EventTypes), false, ams.WebhookFailing
	evtID := ams.NewID(ams.PrefixEvent)
	ok200, gone := 200, 410
	timeout, goneErr := "timeout: no answer within 5s", "the receiver answered 410 Gone: the webhook is marked failing"
	dlv := &ams.Delivery{ID: ams.NewID(ams.PrefixDelivery), Object: "webhook_delivery", UserID: "usr_x", WebhookID: wh.ID, EventID: evtID,
		EventType: ams.EventMessageCreated, Attempt: 1, URL: wh.URL, Success: true, StatusCode: &ok200, DurationMS: 87,
		ResponseBody: `{"received": true}`, CreatedAt: at}
	timedOut := *dlv // no answer: no status code, no body
	timedOut.ID, timedOut.Attempt, timedOut.Success, timedOut.StatusCode, timedOut.DurationMS, timedOut.Error, timedOut.ResponseBody =
		ams.NewID(ams.PrefixDelivery), 5, false, nil, 5001, &timeout, ""
	goneDlv := *dlv // an answer whose excerpt is the full 1 KiB of two-byte characters
	goneDlv.ID, goneDlv.Attempt, goneDlv.Success, goneDlv.StatusCode, goneDlv.Error, goneDlv.ResponseBody =
		ams.NewID(ams.PrefixDelivery), 2, false, &gone, &goneErr, strings.Repeat("é", ams.MaxResponseExcerpt/2)
	ping := &ams.Event{ID: ams.NewID(ams.PrefixEvent), Object: "event", UserID: "usr_x", Type: ams.EventWebhookPing, CreatedAt: at,
		Data: map[string]any{"webhook_id": wh.ID}}

	valid := []struct {
		schema string
		value  any
	}{
		{"Assistant", asst},
		{"Turn", &ams.Turn{ID: ams.NewID(ams.PrefixTurn), Object: "turn", UserID: "usr_x", AssistantID: astID, ConversationID: convID,
			Status: ams.TurnCompleted, InboundMessageID: in.ID, ReplyMessageID: msg.ID, IdempotencyKey: "k", Attempt: 2, CreatedAt: at, UpdatedAt: at, CompletedAt: &at,
			MultitaskStrategy: ams.MultitaskEnqueue, StopReason: ams.StopEndTurn, ActionIDs: []string{"act_1"}, Usage: ams.Usage{InputTokens: 1, OutputTokens: 2, TotalTokens: 3}}},
		{"Turn", &ams.Turn{ID: ams.NewID(ams.PrefixTurn), Object: "turn", UserID: "usr_x", AssistantID: astID, ConversationID: convID,
			Status: ams.TurnFailed, InboundMessageID: in.ID, Error: &ams.ActionError{Type: "api_error", Code: "engine_error", Message: "m"}, CreatedAt: at, UpdatedAt: at, CompletedAt: &at,
			MultitaskStrategy: ams.MultitaskReject, StopReason: ams.StopError, ActionIDs: []string{}}},
		{"Turn", &ams.Turn{ID: ams.NewID(ams.PrefixTurn), Object: "turn", UserID: "usr_x", AssistantID: astID, ConversationID: convID,
			Status: ams.TurnRunning, InboundMessageID: in.ID, CancelRequested: true, CreatedAt: at, UpdatedAt: at, MultitaskStrategy: ams.MultitaskEnqueue,
			ActionIDs: []string{}, Background: true}},
		{"Conversation", conv},
		{"Message", msg},
		{"Message", &in},
		{"Integration", integ},
		{"Integration", &failing},
		{"Event", ams.MessageCreatedEvent(msg)},
		{"Event", ams.MessageCreatedEvent(&in)},
		{"MessageList", map[string]any{"object": "list", "data": []*ams.Message{msg, &in}, "first_id": first, "last_id": last, "has_more": true}},
		{"AssistantList", map[string]any{"object": "list", "data": []*ams.Assistant{}, "first_id": nil, "last_id": nil, "has_more": false}},
		{"Error", map[string]any{"error": map[string]any{"type": "invalid_request_error", "code": "unknown_parameter", "message": "m", "param": "x"}, "request_id": ams.NewID(ams.PrefixRequest)}},
		{"Error", map[string]any{"error": map[string]any{"type": "api_error", "code": "internal_error", "message": "m"}, "request_id": ams.NewID(ams.PrefixRequest)}},
		{"CreateMessageRequest", map[string]any{"assistant_id": astID, "message": "Hello!"}},
		{"CreateMessageRequest", map[string]any{"assistant_id": astID, "message": "Hello!", "conversation_id": convID}},
		{"CreateMessageRequest", map[string]any{"assistant_id": astID, "message": "Hello!", "stream": true}},
		{"Webhook", wh},
		{"Webhook", &failingWH},
		{"WebhookList", map[string]any{"object": "list", "data": []*ams.Webhook{wh, &failingWH}, "first_id": wh.ID, "last_id": failingWH.ID, "has_more": false}},
		{"Delivery", dlv},
		{"Delivery", &timedOut},
		{"Delivery", &goneDlv},
		{"DeliveryList", map[string]any{"object": "list", "data": []*ams.Delivery{dlv, &timedOut, &goneDlv}, "first_id": dlv.ID, "last_id": goneDlv.ID, "has_more": true}},
		{"DeliveryList", map[string]any{"object": "list", "data": []*ams.Delivery{}, "first_id": nil, "last_id": nil, "has_more": false}},
		{"WebhookRedelivery", map[string]any{"object": "webhook_redelivery", "webhook_id": wh.ID, "event_id": evtID, "delivery_id": timedOut.ID, "status": "queued"}},
		{"Event_webhook_ping", ping},
		{"Event", ping},
		{"CreateWebhookRequest", map[string]any{"url": wh.URL, "events": wh.Events, "secret": exampleSecret}},
		{"CreateWebhookRequest", map[string]any{"url": wh.URL, "events": ams.EventTypes, "secret": "0123456789abcdef", "active": false}},
		{"UpdateWebhookRequest", map[string]any{"active": true}},
		{"UpdateWebhookRequest", map[string]any{"url": wh.URL, "events": []string{ams.EventIntegrationError}, "secret": exampleSecret, "active": false}},
		{"UpdateWebhookRequest", map[string]any{}},
		{"UpdateWebhookRequest", map[string]any{"metadata": map[string]any{"team": "billing", "old": nil, "gone": ""}}},
		{"CreateConversationRequest", map[string]any{"assistant_id": astID, "title": "Trip", "metadata": map[string]any{"k": "v"}}},
		{"UpdateConversationRequest", map[string]any{"title": ""}},
		{"UpdateMessageRequest", map[string]any{"metadata": map[string]any{"k": nil}}},
		{"EmptyRequest", map[string]any{}},
	}
	// Every event type, with data of the shape DESIGN.md gives it: each must
	// match exactly one variant of the Event oneOf.
	task := map[string]any{"id": ams.NewID(ams.PrefixTask), "object": "task", "assistant_id": astID, "title": "Call Bob", "notes": "",
		"status": "open", "due_at": "2026-11-22T09:00:00.000Z", "remind_at": nil, "completed_at": nil, "created_at": "2026-11-21T10:00:00.123Z", "updated_at": "2026-11-21T10:00:00.123Z",
		"metadata": map[string]any{"order_id": "A-17"}}
	cev := map[string]any{"id": ams.NewID(ams.PrefixCalendar), "object": "calendar_event", "assistant_id": astID, "title": "Dentist", "description": "", "location": "Main St 1",
		"starts_at": "2026-11-23T14:00:00.000Z", "ends_at": "2026-11-23T15:00:00.000Z", "remind_at": "2026-11-23T13:00:00.000Z", "created_at": "2026-11-21T10:00:00.123Z", "updated_at": "2026-11-21T10:00:00.123Z",
		"metadata": map[string]any{}, "deleted_at": nil, "deleted_by": nil}
	integData := jsonValue(t, integ)
	errData := jsonValue(t, &failing).(map[string]any)
	errData["error"] = lastErr
	msgData := jsonValue(t, ams.MessageCreatedEvent(msg)).(map[string]any)["data"]
	data := map[string]any{
		"message.created": msgData, "message.updated": msgData,
		"message.deleted": jsonValue(t, ams.MessageDeletedEvent(msg, at)).(map[string]any)["data"],
		"task.created":    task, "task.completed": task, "task.updated": task, "task.reminder": task, "task.deleted": task,
		"event.created": cev, "event.updated": cev, "event.reminder": cev, "event.deleted": cev, "event.restored": cev,
		"integration.connected": integData, "integration.disconnected": integData, "integration.error": errData,
		"webhook.ping":    map[string]any{"webhook_id": ams.NewID(ams.PrefixWebhook)},
		"webhook.failing": map[string]any{"webhook_id": ams.NewID(ams.PrefixWebhook), "url": "https://example.com/hook", "reason": "timeout: no answer within 5s"},
		"webhook.enabled": map[string]any{"webhook_id": ams.NewID(ams.PrefixWebhook), "url": "https://example.com/hook"},
	}
	code503, code200, why := 503, 200, "the receiver answered 503"
	data[ams.EventWebhookDegraded] = jsonValue(t, ams.WebhookHealthEvent(ams.EventWebhookDegraded, "usr_x", wh.ID, wh.URL, &code503, &why, 3, at).Data)
	data[ams.EventWebhookRecovered] = jsonValue(t, ams.WebhookHealthEvent(ams.EventWebhookRecovered, "usr_x", wh.ID, wh.URL, &code200, nil, 7, at).Data)
	filtered := *wh // a thin webhook with a filter, and its summary as GET /v1/webhooks/{id} shows it
	rate, p95 := 0.9937, int64(412)
	filtered.Payload, filtered.Filter = ams.PayloadThin, ams.WebhookFilter{AssistantID: astID, ConversationID: convID, Metadata: map[string]string{"team": "billing"}}
	filtered.Summary = &ams.WebhookSummary{WindowHours: 24, Attempts: 1270, Succeeded: 1262, SuccessRate: &rate, P95DurationMS: &p95}
	valid = append(valid, struct {
		schema string
		value  any
	}{"Webhook", &filtered}, struct {
		schema string
		value  any
	}{"CreateWebhookRequest", map[string]any{"url": wh.URL, "events": wh.Events, "secret": exampleSecret, "payload": "thin", "filter": map[string]any{"assistant_id": astID, "metadata.team": "billing"}}},
		struct {
			schema string
			value  any
		}{"UpdateWebhookRequest", map[string]any{"filter": nil, "payload": "full"}})
	for _, typ := range []string{ams.EventAssistantCreated, ams.EventAssistantUpdated, ams.EventAssistantDeleted} {
		data[typ] = jsonValue(t, ams.AssistantEvent(typ, asst, at).Data)
	}
	for _, typ := range []string{ams.EventConversationCreated, ams.EventConversationUpdated, ams.EventConversationDeleted} {
		data[typ] = jsonValue(t, ams.ConversationEvent(typ, conv, at).Data)
	}
	for _, st := range []string{ams.TurnRequiresAction, ams.TurnCompleted, ams.TurnFailed, ams.TurnCancelled} {
		tr := &ams.Turn{ID: ams.NewID(ams.PrefixTurn), Object: "turn", UserID: "usr_x", AssistantID: astID, ConversationID: convID, Status: st,
			InboundMessageID: in.ID, MultitaskStrategy: ams.MultitaskEnqueue, ActionIDs: []string{}, CreatedAt: at, UpdatedAt: at, CompletedAt: &at}
		if st == ams.TurnRequiresAction {
			tr.CompletedAt, tr.StopReason = nil, ams.StopRequiresAction
			tr.RequiredAction = &ams.RequiredAction{Type: ams.RequiredSubmitToolOutputs, ExpiresAt: at,
				ToolCalls: []*ams.ToolCallRequest{{ID: "call_1", Name: "lookup", Arguments: json.RawMessage(`{"q":"x"}`)}}}
		}
		e := ams.TurnLifecycleEvent(tr, at)
		data[e.Type] = jsonValue(t, e.Data)
	}
	// The audit events of the management API, built as the services build
	// them (account.Service, package oauth).
	mgmtKey := &ams.APIKey{ID: ams.NewID(ams.PrefixAPIKey), UserID: "usr_x", Name: "export", Hint: ams.KeyHint("ams_sk_abcdefXy3Z"),
		Permissions: ams.Permissions{ams.PermRead, ams.PermMessages}, CreatedAt: at, ExpiresAt: &at}
	mgmtClient := &ams.OAuthClient{ID: ams.NewID(ams.PrefixClient), Object: "oauth_client", UserID: "usr_x", Name: "Planner",
		RedirectURIs: []string{"https://planner.example/cb"}, SecretHash: "h", CreatedAt: at, UpdatedAt: at}
	mgmtUser := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: "ann@example.com", Plan: ams.PlanStandard, Timezone: "Europe/Paris",
		KeyReminderEmailsOff: true, CreatedAt: at, UpdatedAt: at, ApprovedAt: &at}
	for _, e := range []*ams.Event{
		ams.APIKeyEvent(ams.EventAPIKeyCreated, mgmtKey, at), ams.APIKeyEvent(ams.EventAPIKeyRevoked, mgmtKey, at),
		ams.OAuthClientEvent(ams.EventOAuthClientCreated, mgmtClient, at), ams.OAuthClientEvent(ams.EventOAuthClientSecretRotated, mgmtClient, at),
		ams.OAuthClientEvent(ams.EventOAuthClientDeleted, mgmtClient, at),
		ams.AccountUpdatedEvent(mgmtUser, map[string]any{"timezone": "UTC", "email_notifications": map[string]any{"key_reminders": true}}, at),
	} {
		data[e.Type] = jsonValue(t, e.Data)
		valid = append(valid, struct {
			schema string
			value  any
		}{"Event_" + underscore(e.Type), e})
	}
	valid = append(valid, []struct {
		schema string
		value  any
	}{
		{"APIKey", mgmtKey.Record(at)},
		{"APIKeyList", map[string]any{"object": "list", "data": []*ams.APIKeyRecord{mgmtKey.Record(at)}, "first_id": mgmtKey.ID, "last_id": mgmtKey.ID, "has_more": false}},
		{"OAuthClient", mgmtClient},
		{"Account", mgmtUser.Account()},
		{"CreateAPIKeyRequest", map[string]any{"name": "export", "permissions": []string{"read"}}},
		{"CreateOAuthClientRequest", map[string]any{"name": "Planner", "redirect_uris": []string{"https://planner.example/cb"}, "public": true}},
		{"UpdateAccountRequest", map[string]any{"email_notifications": map[string]any{"webhook_failing": false}}},
	}...)
	valid = append(valid, struct {
		schema string
		value  any
	}{"Task", task}, struct {
		schema string
		value  any
	}{"CalendarEvent", cev})
	for _, typ := range eventTypes {
		valid = append(valid, struct {
			schema string
			value  any
		}{"Event", withPrevious(typ, map[string]any{"id": ams.NewID(ams.PrefixEvent), "object": "event", "type": typ, "created_at": "2026-11-21T10:00:00.123Z",
			"request": nil, "turn_id": nil, "data": data[typ]})})
		// Caused by an API request, with and without an Idempotency-Key,
		// and by a turn.
		key, turn := "retry-1", ams.NewID(ams.PrefixTurn)
		for _, cause := range []map[string]any{
			{"request": map[string]any{"id": "req_x", "idempotency_key": key}, "turn_id": nil},
			{"request": map[string]any{"id": "req_x", "idempotency_key": nil}, "turn_id": turn},
		} {
			valid = append(valid, struct {
				schema string
				value  any
			}{"Event", withPrevious(typ, map[string]any{"id": ams.NewID(ams.PrefixEvent), "object": "event", "type": typ, "created_at": "2026-11-21T10:00:00.123Z",
				"request": cause["request"], "turn_id": cause["turn_id"], "data": data[typ]})})
		}
	}
	for _, c := range valid {
		if err := visit(t, doc, c.schema, jsonValue(t, c.value)); err != nil {
			t.Errorf("%s does not accept %s:\n%v", c.schema, mustJSON(t, c.value), err)
		}
	}

	// And the schemas are not vacuous: they refuse what the API never sends.
	withExtra := jsonValue(t, msg).(map[string]any)
	withExtra["user_id"] = "usr_x"
	withoutField := jsonValue(t, conv).(map[string]any)
	delete(withoutField, "title")
	wrongPrefix := jsonValue(t, asst).(map[string]any)
	wrongPrefix["id"] = "conv_abc"
	withSecret := jsonValue(t, wh).(map[string]any)
	withSecret["secret"] = exampleSecret
	pingSubscribed := jsonValue(t, wh).(map[string]any)
	pingSubscribed["events"] = []string{ams.EventWebhookPing}
	disabled := jsonValue(t, wh).(map[string]any)
	disabled["status"] = "disabled"
	attemptZero := jsonValue(t, dlv).(map[string]any)
	attemptZero["attempt"] = 0
	longExcerpt := jsonValue(t, dlv).(map[string]any)
	longExcerpt["response_body"] = strings.Repeat("x", ams.MaxResponseExcerpt+1)
	wrongDelivery := jsonValue(t, dlv).(map[string]any)
	wrongDelivery["id"] = evtID
	invalid := []struct {
		schema string
		value  any
	}{
		{"Message", withExtra},
		{"Conversation", withoutField},
		{"Assistant", wrongPrefix},
		{"Event", map[string]any{"id": ams.NewID(ams.PrefixEvent), "object": "event", "type": "task.created", "created_at": "2026-11-21T10:00:00.123Z", "data": msgData}},
		{"Event", map[string]any{"id": ams.NewID(ams.PrefixEvent), "object": "event", "type": "nothing.happened", "created_at": "2026-11-21T10:00:00.123Z", "data": msgData}},
		{"CreateMessageRequest", map[string]any{"assistant_id": astID}},
		{"CreateMessageRequest", map[string]any{"assistant_id": astID, "message": "hi", "stream": "yes"}},
		{"CreateMessageRequest", map[string]any{"assistant_id": astID, "message": " \n "}},
		{"Error", map[string]any{"error": map[string]any{"type": "oops", "code": "c", "message": "m"}, "request_id": ams.NewID(ams.PrefixRequest)}},
		{"Webhook", withSecret},
		{"Webhook", pingSubscribed},
		{"Webhook", disabled},
		{"Delivery", attemptZero},
		{"Delivery", longExcerpt},
		{"Delivery", wrongDelivery},
		{"WebhookRedelivery", map[string]any{"object": "webhook_redelivery", "webhook_id": wh.ID, "event_id": evtID, "delivery_id": timedOut.ID, "status": "sent"}},
		{"CreateWebhookRequest", map[string]any{"url": wh.URL, "events": wh.Events}},
		{"CreateWebhookRequest", map[string]any{"url": wh.URL, "events": wh.Events, "secret": "too short"}},
		{"CreateWebhookRequest", map[string]any{"url": wh.URL, "events": wh.Events, "secret": "sixteen chars\nwith a newline"}},
		{"CreateWebhookRequest", map[string]any{"url": wh.URL, "events": []string{}, "secret": exampleSecret}},
		{"CreateWebhookRequest", map[string]any{"url": wh.URL, "events": []string{ams.EventWebhookPing}, "secret": exampleSecret}},
		{"CreateWebhookRequest", map[string]any{"url": wh.URL, "events": wh.Events, "secret": exampleSecret, "status": "active"}},
		{"UpdateWebhookRequest", map[string]any{"events": []string{}}},
		{"UpdateWebhookRequest", map[string]any{"status": "active"}},
		{"UpdateWebhookRequest", map[string]any{"payload": "summary"}},
		{"UpdateWebhookRequest", map[string]any{"filter": map[string]any{"direction": "inbound"}}},
		{"UpdateWebhookRequest", map[string]any{"filter": map[string]any{"assistant_id": convID}}},
		{"EmptyRequest", map[string]any{"webhook_id": wh.ID}},
	}
	for _, c := range invalid {
		if err := visit(t, doc, c.schema, jsonValue(t, c.value)); err == nil {
			t.Errorf("%s accepts %s", c.schema, mustJSON(t, c.value))
		}
	}
}

// exampleSecret is the webhook secret of the document's examples, in the
// Standard Webhooks form whsec_<base64>.
const exampleSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// TestWebhookSchemaHasNoSecret checks that no answer can show a webhook's
// secret: only the request bodies that set it have a secret property, and
// the record as the server encodes it has none.
func TestWebhookSchemaHasNoSecret(t *testing.T) {
	doc := load(t)
	schemas := doc.Components.Schemas
	if _, ok := schemas["Webhook"].Value.Properties["secret"]; ok {
		t.Error("the Webhook schema has a secret property")
	}
	if items := schemas["WebhookList"].Value.Properties["data"].Value.Items; items == nil || items.Ref != "#/components/schemas/Webhook" {
		t.Error("WebhookList.data must be a list of Webhook")
	}
	var withSecret []string
	for name, ref := range schemas {
		if _, ok := ref.Value.Properties["secret"]; ok {
			withSecret = append(withSecret, name)
		}
	}
	// CreatedAPIKey is the answer of POST /v1/keys, which shows the new
	// key's secret once.
	if want := []string{"CreateWebhookRequest", "CreatedAPIKey", "UpdateWebhookRequest"}; !slices.Equal(slices.Sorted(slices.Values(withSecret)), want) {
		t.Errorf("schemas with a secret property: %v, want only %v", withSecret, want)
	}
	// Nor its previous secret (rotation): only when that stops signing.
	expires := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	wh := &ams.Webhook{ID: ams.NewID(ams.PrefixWebhook), Object: "webhook", URL: "https://example.com/h", Events: []string{ams.EventMessageCreated},
		Active: true, Status: ams.WebhookActive, Secret: exampleSecret, PreviousSecret: "the-previous-secret-value", PreviousSecretExpiresAt: &expires}
	b := mustJSON(t, wh)
	var fields map[string]any
	if err := json.Unmarshal(b, &fields); err != nil {
		t.Fatal(err)
	}
	for k := range fields {
		if strings.Contains(k, "secret") && k != "previous_secret_expires_at" {
			t.Errorf("ams.Webhook encodes %s: %s", k, b)
		}
	}
	if strings.Contains(string(b), exampleSecret) || strings.Contains(string(b), "the-previous-secret-value") {
		t.Errorf("ams.Webhook encodes its secret: %s", b)
	}
}

// TestWebhookSchemasMatchServer checks the enums and bounds of the webhook
// schemas against the values the server uses.
func TestWebhookSchemasMatchServer(t *testing.T) {
	doc := load(t)
	schemas := doc.Components.Schemas
	var subscribable []string
	for _, v := range schemas["WebhookEventType"].Value.Enum {
		subscribable = append(subscribable, v.(string))
	}
	// Same order too: a webhook lists its events in the order of
	// ams.EventTypes; "*" (every type) comes first.
	if want := append([]string{ams.EventAll}, ams.EventTypes...); !slices.Equal(subscribable, want) {
		t.Errorf("WebhookEventType enum %v, want \"*\" and ams.EventTypes %v", subscribable, want)
	}
	var statuses []string
	for _, v := range schemas["Webhook"].Value.Properties["status"].Value.Enum {
		statuses = append(statuses, v.(string))
	}
	if want := []string{ams.WebhookActive, ams.WebhookFailing}; !slices.Equal(slices.Sorted(slices.Values(statuses)), want) {
		t.Errorf("Webhook.status enum %v, want %v", statuses, want)
	}
	// http/webhooks.go: secrets of 16 to 256 characters.
	for _, name := range []string{"CreateWebhookRequest", "UpdateWebhookRequest"} {
		sec := schemas[name].Value.Properties["secret"].Value
		if sec.MinLength != 16 || sec.MaxLength == nil || *sec.MaxLength != 256 {
			t.Errorf("%s.secret: length %d..%v, want 16..256", name, sec.MinLength, sec.MaxLength)
		}
	}
	if got := schemas["CreateWebhookRequest"].Value.Required; !slices.Equal(slices.Sorted(slices.Values(got)), []string{"events", "secret", "url"}) {
		t.Errorf("CreateWebhookRequest.required = %v, want url, events, secret", got)
	}
	if got := schemas["UpdateWebhookRequest"].Value.Required; len(got) != 0 {
		t.Errorf("UpdateWebhookRequest.required = %v, want none", got)
	}
	if rb := schemas["Delivery"].Value.Properties["response_body"].Value; rb.MaxLength == nil || *rb.MaxLength != ams.MaxResponseExcerpt {
		t.Errorf("Delivery.response_body maxLength %v, want %d", rb.MaxLength, ams.MaxResponseExcerpt)
	}
}

// TestWebhookDeliveryDocumented checks the top-level webhooks entry that
// documents what a receiver gets: its headers, its body, and that the
// example signatures are what the worker computes for the example body.
func TestWebhookDeliveryDocumented(t *testing.T) {
	doc := load(t)
	item := doc.Webhooks["event"]
	if item == nil || item.Post == nil {
		t.Fatal("webhooks: no event entry with a post operation")
	}
	op := item.Post
	if op.OperationID == "" || op.Summary == "" || op.Description == "" || !slices.Contains(op.Tags, "Webhooks") {
		t.Error("webhooks.event needs an operationId, a summary, a description and the Webhooks tag")
	}
	if op.Security == nil || len(*op.Security) != 0 {
		t.Error("webhooks.event must declare security: [] (receivers check signatures, not bearer tokens)")
	}
	if op.RequestBody == nil || !op.RequestBody.Value.Required {
		t.Fatal("webhooks.event needs a required request body")
	}
	body := op.RequestBody.Value.Content.Get("application/json")
	if body == nil || body.Schema == nil || body.Schema.Ref != "#/components/schemas/Event" {
		t.Fatal("webhooks.event body must be application/json with the Event schema")
	}
	examples := map[string]any{}
	for _, p := range op.Parameters {
		v := p.Value
		if v.In != "header" || !v.Required {
			t.Errorf("parameter %s: want a required header", v.Name)
		}
		if v.Example == nil {
			t.Errorf("header %s has no example", v.Name)
			continue
		}
		if err := v.Schema.Value.VisitJSON(v.Example, openapi3.EnableJSONSchema2020()); err != nil {
			t.Errorf("header %s: example %v: %v", v.Name, v.Example, err)
		}
		examples[strings.ToLower(v.Name)] = v.Example
	}
	for _, h := range []string{"user-agent", "x-service-signature", "x-service-event", "x-service-delivery", "webhook-id", "webhook-timestamp", "webhook-signature"} {
		if _, ok := examples[h]; !ok {
			t.Errorf("header %s not documented", h)
		}
	}
	for _, code := range []string{"2XX", "410", "default"} {
		if op.Responses.Value(code) == nil {
			t.Errorf("no %s response", code)
		}
	}

	// The example is one real delivery: the body the worker encodes for the
	// example event, and its headers.
	var env struct {
		ID        string         `json:"id"`
		Type      string         `json:"type"`
		CreatedAt time.Time      `json:"created_at"`
		Data      map[string]any `json:"data"`
	}
	if err := json.Unmarshal(mustJSON(t, body.Example), &env); err != nil {
		t.Fatal(err)
	}
	e := &ams.Event{ID: env.ID, Object: "event", Type: env.Type, CreatedAt: env.CreatedAt, Data: env.Data}
	raw, err := webhook.Body(e)
	if err != nil {
		t.Fatal(err)
	}
	if got := jsonValue(t, json.RawMessage(raw)); !equalJSON(t, got, body.Example) {
		t.Errorf("the body example is not what the worker sends:\n%s\n%s", raw, mustJSON(t, body.Example))
	}
	ts, _ := examples["webhook-timestamp"].(float64)
	for h, want := range map[string]any{
		"user-agent":          "ams-webhooks/" + ams.Version,
		"x-service-event":     e.Type,
		"webhook-id":          e.ID,
		"x-service-signature": webhook.Signature(exampleSecret, raw),
		"webhook-signature":   webhook.StandardSignature(exampleSecret, e.ID, int64(ts), raw),
	} {
		if examples[h] != want {
			t.Errorf("header %s: example %v, want %v", h, examples[h], want)
		}
	}

	// The schedule and the timeout the description gives are the worker's.
	if sched, err := webhook.ParseSchedule("0s,1m,5m,30m,2h"); err != nil || !slices.Equal(sched, webhook.DefaultSchedule) {
		t.Errorf("webhook.DefaultSchedule is %v, the document says 0s,1m,5m,30m,2h", webhook.DefaultSchedule)
	}
	if webhook.Timeout != 5*time.Second {
		t.Errorf("webhook.Timeout is %v, the document says 5 seconds", webhook.Timeout)
	}
	for _, s := range []string{"0s,1m,5m,30m,2h", "5 seconds", "410 Gone", "X-Service-Signature", "whsec_", "e-mail"} {
		if !strings.Contains(op.Description, s) {
			t.Errorf("webhooks.event description does not mention %q", s)
		}
	}
}

func equalJSON(t *testing.T, a, b any) bool {
	t.Helper()
	return string(mustJSON(t, a)) == string(mustJSON(t, b))
}

// TestHeaderExamples validates the examples of the shared headers and
// parameters, which Validate leaves unchecked.
func TestHeaderExamples(t *testing.T) {
	doc := load(t)
	for name, h := range doc.Components.Headers {
		if ex := h.Value.Example; ex != nil {
			if err := h.Value.Schema.Value.VisitJSON(ex, openapi3.EnableJSONSchema2020()); err != nil {
				t.Errorf("header %s: example %v: %v", name, ex, err)
			}
		}
	}
	for name, p := range doc.Components.Parameters {
		if ex := p.Value.Example; ex != nil {
			if err := p.Value.Schema.Value.VisitJSON(ex, openapi3.EnableJSONSchema2020()); err != nil {
				t.Errorf("parameter %s: example %v: %v", name, ex, err)
			}
		}
	}
}

func visit(t *testing.T, doc *openapi3.T, schema string, value any) error {
	t.Helper()
	ref := doc.Components.Schemas[schema]
	if ref == nil {
		t.Fatalf("schema %s missing", schema)
	}
	return ref.Value.VisitJSON(value, openapi3.EnableJSONSchema2020())
}

// jsonValue returns v as encoding/json encodes it, decoded into any.
func jsonValue(t *testing.T, v any) any {
	t.Helper()
	var out any
	if err := json.Unmarshal(mustJSON(t, v), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestOAuth2SecurityScheme checks the oauth2 scheme: the authorization code
// flow at the authorization server's URLs, exactly the five scopes, and a
// description that gives what a client needs to know.
func TestOAuth2SecurityScheme(t *testing.T) {
	doc := load(t)
	ref := doc.Components.SecuritySchemes["oauth2"]
	if ref == nil || ref.Value.Type != "oauth2" {
		t.Fatal("securitySchemes.oauth2 must be of type oauth2")
	}
	scheme := ref.Value
	flows := scheme.Flows
	if flows == nil || flows.AuthorizationCode == nil {
		t.Fatal("securitySchemes.oauth2 needs an authorizationCode flow")
	}
	if flows.Implicit != nil || flows.Password != nil || flows.ClientCredentials != nil {
		t.Error("securitySchemes.oauth2 must have the authorizationCode flow only")
	}
	ac := flows.AuthorizationCode
	for name, got := range map[string]string{
		"authorizationUrl": ac.AuthorizationURL, "tokenUrl": ac.TokenURL, "refreshUrl": ac.RefreshURL,
	} {
		want := "/oauth/token"
		if name == "authorizationUrl" {
			want = "/oauth/authorize"
		}
		if got != want {
			t.Errorf("authorizationCode.%s = %q, want %q", name, got, want)
		}
	}
	var want []string
	for _, p := range ams.AllPermissions {
		want = append(want, string(p))
	}
	slices.Sort(want)
	if got := slices.Sorted(maps.Keys(ac.Scopes)); !slices.Equal(got, want) {
		t.Errorf("oauth2 scopes %v, want exactly %v", got, want)
	}
	for scope, meaning := range ac.Scopes {
		if strings.TrimSpace(meaning) == "" {
			t.Errorf("scope %s has no meaning", scope)
		}
	}
	if !strings.Contains(ac.Scopes["admin"], "every operation") {
		t.Errorf("the admin scope must say that it grants every operation: %q", ac.Scopes["admin"])
	}

	// The lifetimes the description gives are the server's.
	if ams.AccessTokenLifetime != 3600*time.Second {
		t.Errorf("ams.AccessTokenLifetime is %v, the document says 3600 seconds", ams.AccessTokenLifetime)
	}
	if ams.RefreshTokenLifetime != 30*24*time.Hour {
		t.Errorf("ams.RefreshTokenLifetime is %v, the document says 30 days", ams.RefreshTokenLifetime)
	}
	for _, s := range []string{
		"S256", "required for public clients", "3600 seconds", "30 days", "rotate", "Reuse detection",
		"`POST /oauth/revoke`", "RFC 7009", "`GET /.well-known/oauth-authorization-server`", "RFC 8414",
		"ANY ONE", "`token_expired`", "`invalid_token`", "`insufficient_scope`", "ams_at_", "ams_rt_",
	} {
		if !strings.Contains(scheme.Description, s) {
			t.Errorf("securitySchemes.oauth2 description does not mention %q", s)
		}
	}
	for _, s := range []string{"ANY ONE", "ams_at_", "`oauth2`", "`token_expired`", "`invalid_token`", "`insufficient_scope`"} {
		if !strings.Contains(doc.Info.Description, s) {
			t.Errorf("info.description does not mention %q", s)
		}
	}
}

// TestOAuth2SchemeMatchesServer checks the oauth2 scheme against the
// authorization server itself: its routes, and its RFC 8414 metadata.
func TestOAuth2SchemeMatchesServer(t *testing.T) {
	ac := load(t).Components.SecuritySchemes["oauth2"].Value.Flows.AuthorizationCode
	const base = "https://ams.example"
	// The routes and the metadata touch no storage.
	srv, err := oauth.New(oauth.Config{Store: noStore{}, BaseURL: base, Secret: make([]byte, oauth.SecretSize)})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	srv.Register(mux)
	const metadataPath = "/.well-known/oauth-authorization-server"
	for _, route := range []string{
		"GET " + ac.AuthorizationURL, "POST " + ac.TokenURL, "POST " + ac.RefreshURL,
		"POST /oauth/revoke", "GET " + metadataPath,
	} {
		method, path, _ := strings.Cut(route, " ")
		if _, pattern := mux.Handler(httptest.NewRequest(method, path, nil)); pattern != route {
			t.Errorf("the authorization server has no route %s (matched %q)", route, pattern)
		}
	}

	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("GET", metadataPath, nil))
	var meta struct {
		AuthorizationEndpoint string   `json:"authorization_endpoint"`
		TokenEndpoint         string   `json:"token_endpoint"`
		RevocationEndpoint    string   `json:"revocation_endpoint"`
		GrantTypes            []string `json:"grant_types_supported"`
		CodeChallengeMethods  []string `json:"code_challenge_methods_supported"`
		Scopes                []string `json:"scopes_supported"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &meta); rec.Code != 200 || err != nil {
		t.Fatalf("metadata: %d %v %s", rec.Code, err, rec.Body)
	}
	if meta.AuthorizationEndpoint != base+ac.AuthorizationURL || meta.TokenEndpoint != base+ac.TokenURL ||
		meta.TokenEndpoint != base+ac.RefreshURL || meta.RevocationEndpoint != base+"/oauth/revoke" {
		t.Errorf("metadata endpoints %+v do not match the document's URLs", meta)
	}
	if !slices.Equal(slices.Sorted(slices.Values(meta.Scopes)), slices.Sorted(maps.Keys(ac.Scopes))) {
		t.Errorf("metadata scopes_supported %v, the document has %v", meta.Scopes, slices.Sorted(maps.Keys(ac.Scopes)))
	}
	if !slices.Equal(meta.CodeChallengeMethods, []string{"S256"}) {
		t.Errorf("metadata code_challenge_methods_supported %v, the document says S256", meta.CodeChallengeMethods)
	}
	if !slices.Contains(meta.GrantTypes, "authorization_code") || !slices.Contains(meta.GrantTypes, "refresh_token") {
		t.Errorf("metadata grant_types_supported %v, want authorization_code and refresh_token", meta.GrantTypes)
	}
}

// noStore satisfies oauth.Store for a server whose storage is never used.
type noStore struct{ oauth.Store }

// TestUnauthorizedDocumentsTokenCodes checks that the shared 401 response
// names the access-token codes of oauth.Server.AuthenticateToken and shows
// an example of each.
func TestUnauthorizedDocumentsTokenCodes(t *testing.T) {
	doc := load(t)
	ref := doc.Components.Responses["Unauthorized"]
	if ref == nil {
		t.Fatal("no Unauthorized response")
	}
	r := ref.Value
	examples := r.Content.Get("application/json").Examples
	for _, code := range []string{"missing_credentials", "invalid_authorization_header", "invalid_api_key", "api_key_revoked", "api_key_expired", "token_expired", "invalid_token"} {
		if !strings.Contains(*r.Description, "`"+code+"`") {
			t.Errorf("the 401 description does not name %s", code)
		}
	}
	for _, code := range []string{"token_expired", "invalid_token"} {
		ex := examples[code]
		if ex == nil {
			t.Errorf("the 401 response has no %s example", code)
			continue
		}
		e, _ := ex.Value.Value.(map[string]any)["error"].(map[string]any)
		if e["type"] != "authentication_error" || e["code"] != code {
			t.Errorf("401 example %s: %v", code, e)
		}
	}
}

// TestForServer: the served document names the server's own URL and is
// otherwise the embedded one.
func TestForServer(t *testing.T) {
	b, err := openapi.ForServer("https://ams.example.com/")
	if err != nil {
		t.Fatal(err)
	}
	var doc, orig map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	servers := doc["servers"].([]any)
	if len(servers) != 1 || servers[0].(map[string]any)["url"] != "https://ams.example.com" {
		t.Fatalf("servers %v, want the one base URL without its trailing slash", servers)
	}
	json.Unmarshal(openapi.Document, &orig)
	delete(doc, "servers")
	delete(orig, "servers")
	if !reflect.DeepEqual(doc, orig) {
		t.Fatal("ForServer changed more than the servers")
	}
}

// withPrevious adds previous_attributes to the envelope e of a change's
// event (*.updated), which carries them.
func withPrevious(typ string, e map[string]any) map[string]any {
	if strings.HasSuffix(typ, ".updated") {
		e["previous_attributes"] = map[string]any{"title": "before"}
	}
	return e
}
