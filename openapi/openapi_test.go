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
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/openapi"
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

// publicOperation is the one operation that needs no credentials.
const publicOperation = "GET /v1/openapi.json"

// eventTypes are the event types of the interface, and webhook.ping.
var eventTypes = []string{
	ams.EventMessageCreated, ams.EventMessageUpdated, ams.EventMessageDeleted,
	ams.EventTaskCreated, ams.EventTaskCompleted, ams.EventTaskUpdated, ams.EventTaskReminder,
	ams.EventEventCreated, ams.EventEventUpdated, ams.EventEventReminder,
	ams.EventIntegrationConnected, ams.EventIntegrationDisconnected, ams.EventIntegrationError,
	"webhook.ping",
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
	if len(doc.Security) != 1 || doc.Security[0]["bearerAuth"] == nil {
		t.Errorf("global security = %v, want bearerAuth", doc.Security)
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
	for key, id := range contractOperations {
		if got, ok := ops[key]; !ok {
			t.Errorf("Operations() lacks %s", key)
		} else if got != id {
			t.Errorf("Operations()[%q] = %q, want %q", key, got, id)
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
				if op.Security != nil {
					t.Error("must use the global bearer security")
				}
				perms := permissions(t, op)
				if len(perms) == 0 {
					t.Fatal("x-permissions missing or empty")
				}
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
	if op.RequestBody == nil || !op.RequestBody.Value.Required {
		t.Fatal("POST needs a required request body")
	}
	mt := op.RequestBody.Value.Content.Get("application/json")
	if mt == nil || mt.Schema == nil {
		t.Fatal("POST body has no application/json schema")
	}
	if s := mt.Schema.Value; s.AdditionalProperties.Has == nil || *s.AdditionalProperties.Has || len(s.Required) == 0 {
		t.Error("POST body schema needs required fields and additionalProperties: false")
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
		"EventData_message_created", "EventData_integration_error", "EventData_webhook_ping",
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
	at := time.Date(2026, 11, 21, 10, 0, 0, 123e6, time.UTC)
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

	valid := []struct {
		schema string
		value  any
	}{
		{"Assistant", asst},
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
	}
	// Every event type, with data of the shape DESIGN.md gives it: each must
	// match exactly one variant of the Event oneOf.
	task := map[string]any{"id": ams.NewID(ams.PrefixTask), "object": "task", "assistant_id": astID, "title": "Call Bob", "notes": "",
		"status": "open", "due_at": "2026-11-22T09:00:00.000Z", "remind_at": nil, "completed_at": nil, "created_at": "2026-11-21T10:00:00.123Z", "updated_at": "2026-11-21T10:00:00.123Z"}
	cev := map[string]any{"id": ams.NewID(ams.PrefixCalendar), "object": "calendar_event", "title": "Dentist", "description": "", "location": "Main St 1",
		"starts_at": "2026-11-23T14:00:00.000Z", "ends_at": "2026-11-23T15:00:00.000Z", "remind_at": "2026-11-23T13:00:00.000Z", "created_at": "2026-11-21T10:00:00.123Z", "updated_at": "2026-11-21T10:00:00.123Z"}
	integData := jsonValue(t, integ)
	errData := jsonValue(t, &failing).(map[string]any)
	errData["error"] = lastErr
	msgData := jsonValue(t, ams.MessageCreatedEvent(msg)).(map[string]any)["data"]
	data := map[string]any{
		"message.created": msgData, "message.updated": msgData, "message.deleted": msgData,
		"task.created": task, "task.completed": task, "task.updated": task, "task.reminder": task,
		"event.created": cev, "event.updated": cev, "event.reminder": cev,
		"integration.connected": integData, "integration.disconnected": integData, "integration.error": errData,
		"webhook.ping": map[string]any{"webhook_id": ams.NewID(ams.PrefixWebhook)},
	}
	for _, typ := range eventTypes {
		valid = append(valid, struct {
			schema string
			value  any
		}{"Event", map[string]any{"id": ams.NewID(ams.PrefixEvent), "object": "event", "type": typ, "created_at": "2026-11-21T10:00:00.123Z", "data": data[typ]}})
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
		{"CreateMessageRequest", map[string]any{"assistant_id": astID, "message": "hi", "stream": true}},
		{"CreateMessageRequest", map[string]any{"assistant_id": astID, "message": " \n "}},
		{"Error", map[string]any{"error": map[string]any{"type": "oops", "code": "c", "message": "m"}, "request_id": ams.NewID(ams.PrefixRequest)}},
	}
	for _, c := range invalid {
		if err := visit(t, doc, c.schema, jsonValue(t, c.value)); err == nil {
			t.Errorf("%s accepts %s", c.schema, mustJSON(t, c.value))
		}
	}
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
