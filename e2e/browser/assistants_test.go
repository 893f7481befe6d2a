package browser

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// TestAssistantsPages: a conversation started through the API is read on
// the assistants pages, and continued from the page (the built-in
// assistant keeps its context); a new conversation is started from the
// assistant's page. The API sees the messages sent from the pages.
func TestAssistantsPages(t *testing.T) {
	p := newPage(t)
	e := p.e
	e.needPage(t, "/account/assistants")
	asst := regexp.MustCompile(`assistant\s+(ast_\w+)`).FindStringSubmatch(e.stdout)[1]

	st, body := e.api(t, "POST", "/v1/messages", e.devKey, `{"assistant_id":"`+asst+`","message":"Hello! My name is Ada."}`)
	var reply struct {
		ConversationID string `json:"conversation_id"`
	}
	if st != http.StatusCreated || json.Unmarshal([]byte(body), &reply) != nil || reply.ConversationID == "" {
		t.Fatalf("POST /v1/messages: %d %s", st, body)
	}

	// The list, then the assistant with its conversations.
	p.signIn("dev@example.com", e.devPass, "/account/assistants")
	p.waitText("Dev Assistant")
	p.shot("assistants")
	p.submit("Dev Assistant")
	p.waitPath("/account/assistants/" + asst)
	p.waitText("New conversation")
	p.waitText("Conversations")
	p.shot("assistant")

	// The conversation: both messages; send one from the page.
	p.submit("Hello! My name is Ada.") // the conversation's title, a link
	p.waitPath("/account/assistants/" + asst + "/conversations/" + reply.ConversationID)
	p.waitText("Hello! My name is Ada.")
	p.fill("Message", "What's my name?")
	p.submit("Send")
	p.waitText("What's my name?")
	p.waitFor("the reply to the page's message", `(function(){ const out = [...document.querySelectorAll('[aria-label="Messages"] li')].filter(li => li.innerText.includes("Dev Assistant")); return out.length >= 2 && out[out.length - 1].innerText.includes("Ada"); })()`)
	p.shot("conversation")
	st, body = e.api(t, "GET", "/v1/conversations/"+reply.ConversationID+"/messages?order=asc", e.devKey, "")
	if st != http.StatusOK || strings.Count(body, `"object":"message"`) != 4 || !strings.Contains(body, "What's my name?") {
		t.Fatalf("the conversation through the API after a message from the page: %d %s", st, body)
	}

	// A new conversation from the assistant's page.
	p.open("/account/assistants/" + asst)
	p.waitText("New conversation")
	p.fill("Message", "Hello from the account pages")
	p.submit("Send")
	p.waitText("Hello from the account pages")
	if !strings.Contains(p.location(), "/conversations/conv_") {
		t.Fatalf("after starting a conversation: at %s, want the conversation", p.location())
	}
	if n, err := eval[int](p, `document.querySelectorAll('[aria-label="Messages"] li').length`); err != nil || n != 2 {
		t.Fatalf("the new conversation shows %d messages (%v), want the message and the reply", n, err)
	}
}
