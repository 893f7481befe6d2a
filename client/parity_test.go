package client_test

import (
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/amsdev/ams/client"
	"github.com/amsdev/ams/openapi"
)

// operations maps every operationId of the OpenAPI document to the Client
// method that calls it. TestEveryOperationHasAMethod checks it both ways
// against the document and against the Client's methods, so an operation
// added to the API without a Go method fails the build's tests (as
// sdk/python/tests/test_api.py CoverageTest does for Python).
var operations = map[string]string{
	"listAssistants":           "ListAssistants",
	"createAssistant":          "CreateAssistant",
	"getAssistant":             "GetAssistant",
	"updateAssistant":          "UpdateAssistant",
	"deleteAssistant":          "DeleteAssistant",
	"runAction":                "RunAction",
	"listActions":              "ListActions",
	"getAction":                "GetAction",
	"createMessage":            "SendMessage",
	"getMessage":               "GetMessage",
	"cancelMessage":            "CancelMessage",
	"listTurns":                "ListTurns",
	"getTurn":                  "GetTurn",
	"submitToolOutputs":        "SubmitToolOutputs",
	"approveToolCalls":         "ApproveToolCalls",
	"streamTurnEvents":         "FollowTurn",
	"cancelTurn":               "CancelTurn",
	"updateMessage":            "UpdateMessageFields",
	"deleteMessage":            "DeleteMessage",
	"listConversations":        "ListConversations",
	"createConversation":       "CreateConversation",
	"getConversation":          "GetConversation",
	"updateConversation":       "UpdateConversation",
	"deleteConversation":       "DeleteConversation",
	"listConversationMessages": "ListConversationMessages",
	"createTask":               "CreateTask",
	"listTasks":                "ListTasks",
	"getTask":                  "GetTask",
	"updateTask":               "UpdateTask",
	"deleteTask":               "DeleteTask",
	"completeTask":             "CompleteTask",
	"createCalendarEvent":      "CreateCalendarEvent",
	"listCalendarEvents":       "ListCalendarEvents",
	"getCalendarEvent":         "GetCalendarEvent",
	"updateCalendarEvent":      "UpdateCalendarEvent",
	"deleteCalendarEvent":      "DeleteCalendarEvent",
	"restoreCalendarEvent":     "RestoreCalendarEvent",
	"createIntegration":        "CreateIntegration",
	"listIntegrations":         "ListIntegrations",
	"getIntegration":           "GetIntegration",
	"deleteIntegration":        "DeleteIntegration",
	"syncIntegration":          "SyncIntegration",
	"createCalendarFeed":       "CreateCalendarFeed",
	"listEvents":               "ListEvents",
	"getEvent":                 "GetEvent",
	"streamEvents":             "FollowEvents",
	"triggerEvent":             "TriggerEvent",
	"createWebhook":            "CreateWebhook",
	"listWebhooks":             "ListWebhooks",
	"getWebhook":               "GetWebhook",
	"updateWebhook":            "UpdateWebhook",
	"deleteWebhook":            "DeleteWebhook",
	"pingWebhook":              "PingWebhook",
	"recoverWebhook":           "RecoverWebhook",
	"listWebhookDeliveries":    "ListWebhookDeliveries",
	"redeliverWebhookDelivery": "RedeliverWebhookDelivery",
	"getOpenAPIDocument":       "GetOpenAPIDocument",
	"listAPIKeys":              "ListAPIKeys",
	"createAPIKey":             "CreateAPIKey",
	"getAPIKey":                "GetAPIKey",
	"revokeAPIKey":             "RevokeAPIKey",
	"listOAuthClients":         "ListOAuthClients",
	"createOAuthClient":        "CreateOAuthClient",
	"getOAuthClient":           "GetOAuthClient",
	"rotateOAuthClientSecret":  "RotateOAuthClientSecret",
	"deleteOAuthClient":        "DeleteOAuthClient",
	"getAccount":               "GetAccount",
	"updateAccount":            "UpdateAccount",
}

// helpers are the Client's methods that are not the one method of an
// operation: the low-level Request, and other ways to call an operation
// that operations already maps. The All... iterators are helpers too.
var helpers = map[string]bool{
	"Request":                 true, // any endpoint
	"SendMessageStream":       true, // createMessage with "stream": true
	"SendMessageBackground":   true, // createMessage with "background": true
	"UpdateMessage":           true, // updateMessage, content only
	"ListConversationActions": true, // listActions with conversation_id
	"RunTurn":                 true, // createMessage with tools, then submitToolOutputs / approveToolCalls until the turn ends
}

func TestEveryOperationHasAMethod(t *testing.T) {
	ops, err := openapi.Operations()
	if err != nil {
		t.Fatal(err)
	}
	inDoc := map[string]string{} // operationId -> "METHOD /path"
	for route, id := range ops {
		inDoc[id] = route
	}
	for id, route := range inDoc {
		if _, ok := operations[id]; !ok {
			t.Errorf("%s (%s) has no Go client method: add one and name it in operations", id, route)
		}
	}
	for id := range operations {
		if _, ok := inDoc[id]; !ok {
			t.Errorf("operations names %s, which the OpenAPI document does not have", id)
		}
	}
	typ := reflect.TypeFor[*client.Client]()
	var names []string
	for id, name := range operations {
		m, ok := typ.MethodByName(name)
		if !ok {
			t.Errorf("%s: (*client.Client).%s does not exist", id, name)
			continue
		}
		// Every operation method takes the context first and returns an
		// error last.
		ft := m.Type
		if ft.NumIn() < 2 || ft.In(1).String() != "context.Context" || ft.NumOut() == 0 || ft.Out(ft.NumOut()-1).String() != "error" {
			t.Errorf("%s: (*client.Client).%s has signature %s", id, name, ft)
		}
		names = append(names, name)
	}
	// The other way: every method of the Client is an operation's or a
	// helper, so a new method is classified here.
	for i := range typ.NumMethod() {
		name := typ.Method(i).Name
		if !slices.Contains(names, name) && !helpers[name] && !strings.HasPrefix(name, "All") {
			t.Errorf("(*client.Client).%s is neither an operation's method (operations) nor a helper (helpers)", name)
		}
	}
	slices.Sort(names)
	if d := slices.Compact(slices.Clone(names)); len(d) != len(names) {
		t.Errorf("two operations map to the same method: %v", names)
	}
}

// TestSDKImportsOnlyStandardLibrary checks what the README promises: the
// client and client/webhook packages build with the standard library
// alone, without the server's packages.
func TestSDKImportsOnlyStandardLibrary(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".", "./webhook").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		if p != "github.com/amsdev/ams/client" && p != "github.com/amsdev/ams/client/webhook" {
			t.Errorf("the SDK imports %s", p)
		}
	}
}

// TestREADMEListsEveryOperation: client/README.md has a row for every
// operation of the OpenAPI document, naming its method first, and no row
// for an operation the document lacks.
func TestREADMEListsEveryOperation(t *testing.T) {
	raw, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	ops, err := openapi.Operations()
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{} // "METHOD /path" -> the rest of the row
	for _, line := range strings.Split(string(raw), "\n") {
		route, rest, ok := strings.Cut(strings.TrimPrefix(line, "| `"), "` | ")
		if ok && strings.HasPrefix(line, "| `") && strings.Contains(route, " /v1") {
			rows[route] = rest
		}
	}
	for route, id := range ops {
		rest, ok := rows[route]
		if !ok {
			t.Errorf("README.md lacks %s", route)
			continue
		}
		if want := "`" + operations[id] + "`"; !strings.HasPrefix(rest, want) {
			t.Errorf("README.md: %s names %q, want %s first", route, rest, want)
		}
		delete(rows, route)
	}
	for route := range rows {
		t.Errorf("README.md lists %s, which the OpenAPI document does not have", route)
	}
}
