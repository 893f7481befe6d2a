package browser

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestApprovalPages (issue 29): the assistant's page sets
// require_approval and multitask_strategy; a turn that waits for approval
// shows on its conversation's page with Approve / Reject, and Approve
// runs the tool and lets the assistant reply.
func TestApprovalPages(t *testing.T) {
	p := newPage(t)
	e := p.e
	e.needPage(t, "/account/assistants")
	st, body := e.api(t, "POST", "/v1/assistants", e.devKey, `{"name":"Approver"}`)
	var asst struct {
		ID string `json:"id"`
	}
	if st != http.StatusCreated || json.Unmarshal([]byte(body), &asst) != nil {
		t.Fatalf("create assistant: %d %s", st, body)
	}

	p.signIn("dev@example.com", e.devPass, "/account/assistants/"+asst.ID)
	p.waitText("Tools and double texting")
	p.check("create_task", true)
	p.choose("A message sent while a conversation's turn is unfinished", "is refused (reject)")
	p.submit("Save settings")
	p.waitText("Settings saved.")
	p.shot("assistant-settings")
	st, body = e.api(t, "GET", "/v1/assistants/"+asst.ID, e.devKey, "")
	if st != http.StatusOK || !strings.Contains(body, `"require_approval":["create_task"]`) || !strings.Contains(body, `"multitask_strategy":"reject"`) {
		t.Fatalf("the assistant after its settings were saved: %d %s", st, body)
	}

	st, body = e.api(t, "POST", "/v1/messages", e.devKey, `{"assistant_id":"`+asst.ID+`","message":"add a task: water the plants"}`)
	var turn struct {
		ID             string `json:"id"`
		Status         string `json:"status"`
		ConversationID string `json:"conversation_id"`
	}
	if st != http.StatusOK || json.Unmarshal([]byte(body), &turn) != nil || turn.Status != "requires_action" {
		t.Fatalf("POST /v1/messages: %d %s", st, body)
	}
	p.open("/account/assistants/" + asst.ID + "/conversations/" + turn.ConversationID)
	p.waitText("Waiting for your approval")
	p.waitText("create_task")
	p.shot("conversation-approval")
	p.submit("Approve")
	p.waitText("Approved: the assistant went on.")
	p.waitFor("the reply after approval", `(function(){ const out = [...document.querySelectorAll('[aria-label="Messages"] li')]; return out.length === 2 && out[1].innerText.includes("Water the plants"); })()`)
	if strings.Contains(p.bodyText(), "Waiting for your approval") {
		t.Fatal("the turn still shows as waiting after Approve")
	}
	st, body = e.api(t, "GET", "/v1/turns/"+turn.ID, e.devKey, "")
	if st != http.StatusOK || !strings.Contains(body, `"status":"completed"`) {
		t.Fatalf("the turn after Approve: %d %s", st, body)
	}
	st, body = e.api(t, "GET", "/v1/tasks", e.devKey, "")
	if st != http.StatusOK || !strings.Contains(body, "Water the plants") {
		t.Fatalf("the tasks after Approve: %d %s", st, body)
	}
}
