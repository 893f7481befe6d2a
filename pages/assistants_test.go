package pages_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/messaging"
	"golang.org/x/net/html"
)

// failingEngine is an assistant engine that always fails.
type failingEngine struct{}

func (failingEngine) Reply(context.Context, *ams.EngineRequest) (*ams.Reply, error) {
	return nil, errors.New("connection refused")
}

// newAssistant stores an assistant of u.
func newAssistant(e *env, u *ams.User, name, model, description string) *ams.Assistant {
	e.t.Helper()
	now := e.f.Clock.Now()
	a := &ams.Assistant{ID: ams.NewID(ams.PrefixAssistant), Object: "assistant", UserID: u.ID, Name: name, Model: model,
		Description: description, CreatedAt: now, UpdatedAt: now}
	if err := e.f.Store.CreateAssistant(context.Background(), a); err != nil {
		e.t.Fatal(err)
	}
	return a
}

// conversations returns all of u's conversations with a.
func conversations(e *env, u *ams.User, a *ams.Assistant) []*ams.Conversation {
	e.t.Helper()
	p, err := e.f.Store.ListConversations(context.Background(), u.ID, a.ID, ams.ListParams{Limit: 100})
	if err != nil {
		e.t.Fatal(err)
	}
	return p.Data
}

// messagesOf returns the messages of conversation id, oldest first.
func messagesOf(e *env, u *ams.User, id string) []*ams.Message {
	e.t.Helper()
	p, err := e.f.Store.ListMessages(context.Background(), u.ID, id, ams.ListParams{Limit: 100, Order: ams.OrderAsc})
	if err != nil {
		e.t.Fatal(err)
	}
	return p.Data
}

// chat returns the messages shown on a conversation page: direction
// (from the class) and text, in page order.
func chat(p *page) (dirs, texts []string) {
	walk(p.doc, func(n *html.Node) bool {
		if n.Type == html.ElementNode && n.Data == "li" && strings.Contains(attr(n, "class"), "msg ") {
			cls := attr(n, "class")
			switch {
			case strings.Contains(cls, "msg-inbound"):
				dirs = append(dirs, "in")
			case strings.Contains(cls, "msg-outbound"):
				dirs = append(dirs, "out")
			default:
				dirs = append(dirs, "?")
			}
			var text string
			walk(n, func(c *html.Node) bool {
				if c.Type == html.ElementNode && attr(c, "class") == "msg-text" {
					text = textOf(c)
					return false
				}
				return true
			})
			texts = append(texts, strings.TrimSpace(text))
			return false
		}
		return true
	})
	return dirs, texts
}

// links returns the hrefs of the links on p whose text contains label.
func links(p *page, label string) []string {
	var out []string
	walk(p.doc, func(n *html.Node) bool {
		if n.Type == html.ElementNode && n.Data == "a" && strings.Contains(textOf(n), label) {
			out = append(out, attr(n, "href"))
		}
		return true
	})
	return out
}

func eventCount(e *env, u *ams.User, typ string) int {
	e.t.Helper()
	p, err := e.f.Store.ListEvents(context.Background(), u.ID, ams.EventFilter{Type: typ}, ams.ListParams{Limit: 100})
	if err != nil {
		e.t.Fatal(err)
	}
	return len(p.Data)
}

// The assistants page lists the user's assistants (name, model,
// description), not another user's; an assistant's page links to its
// conversations with their title, message count and last message time.
func TestAssistantsList(t *testing.T) {
	e := newEnv(t)
	ann := cheapUser(e, "ann.assistants@example.com")
	bob := cheapUser(e, "bob.assistants@example.com")
	helper := newAssistant(e, ann, "Helper", "builtin", "Keeps my calendar & tasks")
	newAssistant(e, ann, "Writer", "gpt-4o-mini", "")
	newAssistant(e, bob, "Bob's secret bot", "builtin", "not for ann")

	b := e.browser()
	b.signIn(ann.Email, "correct horse battery")
	p := b.get("/account/assistants")
	p.mustStatus(http.StatusOK)
	p.mustContain("Helper", "builtin", "Keeps my calendar & tasks", "Writer", "gpt-4o-mini")
	p.mustNotContain("Bob's secret bot", "not for ann", "Ann's assistant") // bob's, and the fixture user's
	if got := links(p, "Helper"); len(got) != 1 || got[0] != "/account/assistants/"+helper.ID {
		t.Errorf("link to Helper: %v", got)
	}
	// In the navigation, current.
	var current string
	walk(p.doc, func(n *html.Node) bool {
		if n.Type == html.ElementNode && n.Data == "a" && attr(n, "aria-current") == "page" {
			current = attr(n, "href")
		}
		return true
	})
	if current != "/account/assistants" {
		t.Errorf("current nav entry %q", current)
	}

	// Conversations, sent through the messaging service.
	ctx := context.Background()
	for _, m := range []string{"Hello! My name is Ada.", "Remind me to call Bob"} {
		if _, err := e.f.API.Messages.Send(ctx, ann.ID, messaging.SendInput{AssistantID: helper.ID, Message: m}); err != nil {
			t.Fatal(err)
		}
	}
	convs := conversations(e, ann, helper)
	if len(convs) != 2 {
		t.Fatalf("%d conversations", len(convs))
	}
	p = b.get("/account/assistants/" + helper.ID)
	p.mustStatus(http.StatusOK)
	p.mustContain("Helper", "Keeps my calendar & tasks", "New conversation", "Conversations")
	for _, c := range convs {
		row := p.byID("conversation-" + c.ID)
		if row == nil {
			t.Fatalf("no row of %s:\n%s", c.ID, p.text())
		}
		got := strings.Join(strings.Fields(textOf(row)), " ")
		if want := c.Title + " 2 21 Nov 2026 10:00 UTC just now"; got != want {
			t.Errorf("row: %q, want %q", got, want)
		}
		if l := links(p, c.Title); len(l) != 1 || l[0] != "/account/assistants/"+helper.ID+"/conversations/"+c.ID {
			t.Errorf("link of %q: %v", c.Title, l)
		}
	}
	if p.form("/account/assistants/"+helper.ID+"/conversations") == nil {
		t.Error("no form to start a conversation")
	}
}

// Send a message from the page: it goes through the messaging service
// (stored with its reply and events, as through the API), the browser is
// redirected back to the conversation, which shows both, in the user's
// time zone, with newlines kept.
func TestSendMessageFromThePage(t *testing.T) {
	e := newEnv(t)
	ann := cheapUser(e, "ann.send@example.com")
	tokyo := "Asia/Tokyo"
	if _, err := e.f.Store.UpdateUser(context.Background(), ann.ID, ams.UserUpdate{Timezone: &tokyo}, e.f.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	a := newAssistant(e, ann, "Helper", "builtin", "")
	b := e.browser()
	b.signIn(ann.Email, "correct horse battery")

	// A new conversation from the assistant's page.
	p := b.get("/account/assistants/" + a.ID)
	p = b.submit(p, "/account/assistants/"+a.ID+"/conversations", url.Values{"message": {"Hello! My name is Ada."}})
	p.mustStatus(http.StatusOK)
	convs := conversations(e, ann, a)
	if len(convs) != 1 {
		t.Fatalf("%d conversations after sending", len(convs))
	}
	conv := convs[0]
	path := "/account/assistants/" + a.ID + "/conversations/" + conv.ID
	msgs := messagesOf(e, ann, conv.ID)
	if len(msgs) != 2 || msgs[0].Content != "Hello! My name is Ada." || msgs[1].Direction != ams.DirectionOutbound {
		t.Fatalf("stored: %+v", msgs)
	}
	if p.url.Path != path || p.url.Fragment != msgs[1].ID || len(p.redirects) != 1 || p.redirects[0] != path {
		t.Fatalf("ended on %s after %v", p.url, p.redirects)
	}
	if conv.Title != "Hello! My name is Ada." {
		t.Errorf("title %q", conv.Title)
	}
	dirs, texts := chat(p)
	if strings.Join(dirs, " ") != "in out" || texts[0] != "Hello! My name is Ada." || !strings.Contains(texts[1], "Ada") {
		t.Fatalf("chat: %v %q", dirs, texts)
	}
	if texts[1] != msgs[1].Content {
		t.Errorf("reply shown %q, stored %q", texts[1], msgs[1].Content)
	}
	// Times in the user's zone (the fixture's clock is 10:00 UTC).
	p.mustContain("You · 21 Nov 2026 19:00 JST Hello! My name is Ada.", "Helper · 21 Nov 2026 19:00 JST Nice to meet you")
	if ev := eventCount(e, ann, ams.EventMessageCreated); ev != 2 {
		t.Errorf("%d message.created events", ev)
	}

	// Continue it: the assistant keeps context; newlines are kept
	// (CRLF from the browser stored as LF).
	p = b.submit(p, path+"/messages", url.Values{"message": {"What's my name?"}})
	p.mustStatus(http.StatusOK)
	_, texts = chat(p)
	if len(texts) != 4 || texts[2] != "What's my name?" || !strings.Contains(texts[3], "Ada") {
		t.Fatalf("after the second message: %q", texts)
	}
	p = b.submit(p, path+"/messages", url.Values{"message": {"line one\r\nline two\r\n\r\nline four"}})
	p.mustStatus(http.StatusOK)
	msgs = messagesOf(e, ann, conv.ID)
	if len(msgs) != 6 || msgs[4].Content != "line one\nline two\n\nline four" {
		t.Fatalf("stored: %q", msgs[4].Content)
	}
	if _, texts = chat(p); texts[4] != "line one\nline two\n\nline four" {
		t.Errorf("shown: %q", texts[4])
	}
	if !strings.Contains(p.body, ">line one\nline two\n\nline four<") {
		t.Error("the newlines are not in the page")
	}
	// The API sees the same conversation.
	key := e.f.NewKey(ann, "read")
	r := e.f.Do("GET", "/v1/conversations/"+conv.ID+"/messages?order=asc", key, "")
	if r.Status != http.StatusOK || strings.Count(string(r.Body), `"object":"message"`) != 6 {
		t.Fatalf("API: %d %s", r.Status, r.Body)
	}
	// The assistant's page lists it with its count.
	p = b.get("/account/assistants/" + a.ID)
	if got := strings.Fields(textOf(p.byID("conversation-" + conv.ID))); len(got) < 6 || got[5] != "6" {
		t.Errorf("conversation row: %q", got)
	}
}

// An empty message is a form error and stores nothing; so is an engine
// failure (502, not 500), which keeps the text in the form.
func TestSendMessageErrors(t *testing.T) {
	e := newEnv(t)
	ann := cheapUser(e, "ann.errors@example.com")
	a := newAssistant(e, ann, "Helper", "builtin", "")
	b := e.browser()
	b.signIn(ann.Email, "correct horse battery")

	for _, msg := range []string{"", "   \r\n  "} {
		p := b.get("/account/assistants/" + a.ID)
		p = b.submit(p, "/account/assistants/"+a.ID+"/conversations", url.Values{"message": {msg}})
		p.mustStatus(http.StatusUnprocessableEntity)
		p.mustContain("There is a problem", "The message must not be empty.")
		if ta := p.byID("message"); ta == nil || attr(ta, "aria-invalid") != "true" {
			t.Error("the field is not marked invalid")
		}
	}
	if n := len(conversations(e, ann, a)); n != 0 {
		t.Fatalf("%d conversations after empty messages", n)
	}

	// An existing conversation.
	reply, err := e.f.API.Messages.Send(context.Background(), ann.ID, messaging.SendInput{AssistantID: a.ID, Message: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	path := "/account/assistants/" + a.ID + "/conversations/" + reply.ConversationID
	p := b.get(path)
	p = b.submit(p, path+"/messages", url.Values{"message": {" "}})
	p.mustStatus(http.StatusUnprocessableEntity)
	p.mustContain("The message must not be empty.", "hi")
	// Too long: messaging's own limit.
	p = b.submit(b.get(path), path+"/messages", url.Values{"message": {strings.Repeat("x", ams.MaxMessageLength+1)}})
	p.mustStatus(http.StatusUnprocessableEntity)
	p.mustContain(fmt.Sprintf("The message is longer than %d bytes.", ams.MaxMessageLength))
	if n := len(messagesOf(e, ann, reply.ConversationID)); n != 2 {
		t.Fatalf("%d messages after refused ones", n)
	}

	// The engine fails.
	svc := e.f.API.Messages
	engineFor := svc.EngineFor
	svc.EngineFor = func(*ams.Assistant) (ams.Engine, error) { return failingEngine{}, nil }
	defer func() { svc.EngineFor = engineFor }()
	p = b.submit(b.get(path), path+"/messages", url.Values{"message": {"Are you there?"}})
	p.mustStatus(http.StatusBadGateway)
	p.mustContain("There is a problem", "The assistant's engine could not reply", "Your message is in the conversation without a reply")
	p.mustNotContain("connection refused")
	if ta := p.byID("message"); ta == nil || textOf(ta) != "Are you there? " {
		t.Errorf("the message is not kept in the form")
	}
	p = b.submit(b.get("/account/assistants/"+a.ID), "/account/assistants/"+a.ID+"/conversations", url.Values{"message": {"New one"}})
	p.mustStatus(http.StatusBadGateway)
	p.mustContain("The assistant's engine could not reply")
	// Each failed turn keeps its inbound message (in the conversation, or
	// in the one it started), without a reply.
	if n := len(messagesOf(e, ann, reply.ConversationID)); n != 3 {
		t.Fatalf("%d messages after engine failures, want 2 and the failed turn's inbound one", n)
	}
	if n := len(conversations(e, ann, a)); n != 2 {
		t.Fatalf("%d conversations after engine failures, want the one started by the failed turn too", n)
	}
	if ev := eventCount(e, ann, ams.EventMessageCreated); ev != 4 {
		t.Errorf("%d message.created events, want 2 and one per failed turn's inbound message", ev)
	}
}

// Another user's assistant or conversation is not found (404), also
// when sending to it, which stores nothing; a conversation under another
// of the user's assistants too.
func TestAssistantPagesOtherUsers(t *testing.T) {
	e := newEnv(t)
	ann := cheapUser(e, "ann.others@example.com")
	bob := cheapUser(e, "bob.others@example.com")
	annA := newAssistant(e, ann, "Ann's helper", "builtin", "")
	annB := newAssistant(e, ann, "Ann's other", "builtin", "")
	bobA := newAssistant(e, bob, "Bob's helper", "builtin", "")
	reply, err := e.f.API.Messages.Send(context.Background(), ann.ID, messaging.SendInput{AssistantID: annA.ID, Message: "ann's secret plan"})
	if err != nil {
		t.Fatal(err)
	}
	conv := reply.ConversationID

	b := e.browser()
	b.signIn(bob.Email, "correct horse battery")
	for _, path := range []string{
		"/account/assistants/" + annA.ID,
		"/account/assistants/" + annA.ID + "/conversations/" + conv,
		"/account/assistants/" + bobA.ID + "/conversations/" + conv,
		"/account/assistants/ast_nothere",
		"/account/assistants/" + bobA.ID + "/conversations/conv_nothere",
	} {
		p := b.get(path)
		p.mustStatus(http.StatusNotFound)
		p.mustNotContain("ann's secret plan", "Ann's helper")
	}
	// Posting needs a CSRF token: take the one of bob's own page.
	own := b.get("/account/assistants/" + bobA.ID)
	csrf := formValues(own.form("/account/assistants/" + bobA.ID + "/conversations")).Get("csrf_token")
	for _, path := range []string{
		"/account/assistants/" + annA.ID + "/conversations",
		"/account/assistants/" + annA.ID + "/conversations/" + conv + "/messages",
		"/account/assistants/" + bobA.ID + "/conversations/" + conv + "/messages",
	} {
		p := b.post(path, url.Values{"csrf_token": {csrf}, "message": {"bob was here"}})
		p.mustStatus(http.StatusNotFound)
	}
	if n := len(messagesOf(e, ann, conv)); n != 2 {
		t.Fatalf("ann's conversation has %d messages", n)
	}
	if n := len(conversations(e, bob, bobA)); n != 0 {
		t.Fatalf("bob has %d conversations", n)
	}

	// Ann: her conversation under her other assistant is not found.
	a := e.browser()
	a.signIn(ann.Email, "correct horse battery")
	a.get("/account/assistants/" + annB.ID + "/conversations/" + conv).mustStatus(http.StatusNotFound)
	a.get("/account/assistants/" + annA.ID + "/conversations/" + conv).mustStatus(http.StatusOK)
	// A cursor of another list is refused.
	a.get("/account/assistants/" + annB.ID + "?after=" + conv).mustStatus(http.StatusBadRequest)
	a.get("/account/assistants/" + annA.ID + "?after=ast_x").mustStatus(http.StatusBadRequest)
}

// Message content is escaped: a <script> is shown as text.
func TestMessageContentEscaped(t *testing.T) {
	e := newEnv(t)
	ann := cheapUser(e, "ann.escape@example.com")
	a := newAssistant(e, ann, `<img src=x onerror=alert(2)>`, "builtin", "")
	b := e.browser()
	b.signIn(ann.Email, "correct horse battery")
	evil := `<script>alert("x")</script> & <b>bold</b>`
	p := b.submit(b.get("/account/assistants/"+a.ID), "/account/assistants/"+a.ID+"/conversations", url.Values{"message": {evil}})
	p.mustStatus(http.StatusOK)
	if _, texts := chat(p); len(texts) != 2 || texts[0] != evil {
		t.Fatalf("shown: %q", texts)
	}
	if strings.Contains(p.body, "<script>alert") || strings.Contains(p.body, "<b>bold") || strings.Contains(p.body, "<img src=x") {
		t.Fatal("content not escaped")
	}
	if !strings.Contains(p.body, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt;") {
		t.Error("escaped content not found")
	}
	walk(p.doc, func(n *html.Node) bool {
		if n.Type == html.ElementNode && (n.Data == "img" || n.Data == "b" || (n.Data == "script" && attr(n, "src") == "")) {
			t.Errorf("a <%s> element in the page", n.Data)
		}
		return true
	})
	// The list pages too.
	for _, path := range []string{"/account/assistants", "/account/assistants/" + a.ID} {
		p := b.get(path)
		if strings.Contains(p.body, "<script>alert") || strings.Contains(p.body, "<img src=x") {
			t.Errorf("%s: not escaped", path)
		}
	}
}

// Conversations and messages are paginated with the store's cursors:
// older and newer links.
func TestAssistantPagesPaginate(t *testing.T) {
	e := newEnv(t)
	ann := cheapUser(e, "ann.pages@example.com")
	a := newAssistant(e, ann, "Helper", "builtin", "")
	ctx := context.Background()
	svc := e.f.API.Messages
	var first string
	for i := range 25 {
		r, err := svc.Send(ctx, ann.ID, messaging.SendInput{AssistantID: a.ID, Message: fmt.Sprintf("conversation %02d", i)})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = r.ConversationID
		}
	}
	b := e.browser()
	b.signIn(ann.Email, "correct horse battery")
	p := b.get("/account/assistants/" + a.ID)
	p.mustContain("conversation 24", "conversation 05")
	p.mustNotContain("conversation 04")
	if l := links(p, "Newer"); len(l) != 0 {
		t.Errorf("newer link on the first page: %v", l)
	}
	older := links(p, "Older")
	if len(older) != 1 {
		t.Fatalf("older links %v", older)
	}
	p = b.get(older[0])
	p.mustStatus(http.StatusOK)
	p.mustContain("conversation 04", "conversation 00")
	p.mustNotContain("conversation 05")
	if l := links(p, "Older"); len(l) != 0 {
		t.Errorf("older link on the last page: %v", l)
	}
	newer := links(p, "Newer")
	if len(newer) != 1 {
		t.Fatalf("newer links %v", newer)
	}
	p = b.get(newer[0])
	p.mustContain("conversation 24", "conversation 05")
	p.mustNotContain("conversation 04")

	// 30 turns in one conversation: 60 messages, 50 a page, the latest
	// last, with the form below them; the older page has no form.
	for i := range 29 {
		if _, err := svc.Send(ctx, ann.ID, messaging.SendInput{AssistantID: a.ID, ConversationID: first, Message: fmt.Sprintf("turn %02d", i+1)}); err != nil {
			t.Fatal(err)
		}
	}
	path := "/account/assistants/" + a.ID + "/conversations/" + first
	p = b.get(path)
	dirs, texts := chat(p)
	if len(texts) != 50 || texts[48] != "turn 29" || dirs[49] != "out" || texts[0] != "turn 05" {
		t.Fatalf("latest page: %d messages, %q … %q", len(texts), texts[0], texts[len(texts)-1])
	}
	if p.form(path+"/messages") == nil {
		t.Error("no form on the latest page")
	}
	older = links(p, "Older messages")
	if len(older) != 1 {
		t.Fatalf("older links %v", older)
	}
	p = b.get(older[0])
	_, texts = chat(p)
	if len(texts) != 10 || texts[0] != "conversation 00" || texts[8] != "turn 04" {
		t.Fatalf("older page: %q", texts)
	}
	if p.form(path+"/messages") != nil {
		t.Error("the form on an older page")
	}
	if l := links(p, "Older messages"); len(l) != 0 {
		t.Errorf("older link on the first page: %v", l)
	}
	if l := links(p, "Newer messages"); len(l) != 1 {
		t.Errorf("newer links %v", l)
	}
}

// TestSendMessageRateLimited: a message sent from the page counts against
// the account's rate limits like an API request; over the limit it is a
// form error (429) and nothing is stored.
func TestSendMessageRateLimited(t *testing.T) {
	e := newEnv(t)
	ann := cheapUser(e, "ann.limit@example.com")
	a := newAssistant(e, ann, "Helper", "builtin", "")
	b := e.browser()
	b.signIn(ann.Email, "correct horse battery")
	p := b.get("/account/assistants/" + a.ID)
	now := e.f.Clock.Now()
	for range ann.Limits().PerMinute {
		if d, err := e.f.API.Limiter.Take(context.Background(), ann.ID, ann.Limits(), now); err != nil || !d.Allowed {
			t.Fatalf("take: %+v %v", d, err)
		}
	}
	p = b.submit(p, "/account/assistants/"+a.ID+"/conversations", url.Values{"message": {"Hello"}})
	p.mustStatus(http.StatusTooManyRequests)
	p.mustContain("limit of 60 requests per minute")
	if convs := conversations(e, ann, a); len(convs) != 0 {
		t.Fatalf("%d conversations stored over the limit", len(convs))
	}
}
