package http_test

import (
	"context"
	"strings"
	"testing"

	"github.com/amsdev/ams"
)

// TestBackgroundSend: background: true answers 202 with the turn and its
// Location at once; the turn runs on the server and completes, with its
// usage, stop reason and turn.completed.
func TestBackgroundSend(t *testing.T) {
	t.Parallel()
	f := setup(t)
	release := make(chan struct{})
	f.useEngine(engineFunc(func(ctx context.Context, req *ams.EngineRequest) (*ams.Reply, error) {
		<-release
		return &ams.Reply{Content: "Done.", Usage: ams.Usage{InputTokens: 4, OutputTokens: 1, TotalTokens: 5}, StopReason: ams.StopEndTurn}, nil
	}))
	r := f.do("POST", "/v1/messages", `{"assistant_id":"`+f.Assistant.ID+`","message":"take your time","background":true}`)
	turn := r.json(t)
	id, _ := turn["id"].(string)
	if r.status != 202 || turn["object"] != "turn" || turn["status"] != "running" || turn["background"] != true ||
		r.header.Get("Location") != "/v1/turns/"+id || r.header.Get("X-Turn-Id") != id {
		t.Fatalf("background send: %d %v %s", r.status, r.header, r.body)
	}
	close(release)
	done := f.waitTurn(id)
	usage, _ := done["usage"].(map[string]any)
	if done["status"] != "completed" || done["stop_reason"] != "end_turn" || usage["total_tokens"] != float64(5) || done["reply_message_id"] == "" {
		t.Fatalf("background turn at its end: %v", done)
	}
	if ev := f.eventsN("turn.completed", 1); ev[0]["id"] != id || ev[0]["status"] != "completed" {
		t.Fatalf("turn.completed: %v", ev)
	}
}

// TestDoubleTextingOverHTTP: a send to a busy conversation with reject is
// 409 conversation_busy and stores nothing; a queued background send is
// 202 queued, and runs once the turn before it ends; bad options are 400
// naming the parameter, with nothing stored.
func TestDoubleTextingOverHTTP(t *testing.T) {
	t.Parallel()
	f := setup(t)
	started, release := make(chan string, 4), make(chan struct{})
	f.useEngine(engineFunc(func(ctx context.Context, req *ams.EngineRequest) (*ams.Reply, error) {
		msg := req.History[len(req.History)-1].Content
		started <- msg
		<-release
		return &ams.Reply{Content: "re: " + msg}, nil
	}))
	r := f.do("POST", "/v1/messages", `{"assistant_id":"`+f.Assistant.ID+`","message":"one","background":true}`)
	first := r.json(t)
	conv := first["conversation_id"].(string)
	<-started
	before := f.counts()
	body := func(extra string) string {
		return `{"assistant_id":"` + f.Assistant.ID + `","conversation_id":"` + conv + `","message":"two"` + extra + `}`
	}
	wantError(t, f.do("POST", "/v1/messages", body(`,"multitask_strategy":"reject"`)), 409, "invalid_request_error", "conversation_busy", "")
	for _, c := range []struct{ extra, param string }{
		{`,"multitask_strategy":"later"`, "multitask_strategy"},
		{`,"multitask_strategy":""`, "multitask_strategy"},
		{`,"max_output_tokens":0`, "max_output_tokens"},
		{`,"tool_choice":"sometimes"`, "tool_choice"},
		{`,"tools":[{"type":"function","name":"bad name"}]`, "tools[0].name"},
		{`,"response_format":{"type":"xml"}`, "response_format.type"},
	} {
		wantError(t, f.do("POST", "/v1/messages", body(c.extra)), 400, "invalid_request_error", "parameter_invalid", c.param)
	}
	if after := f.counts(); after != before {
		t.Fatalf("refused sends stored something: %v, then %v", before, after)
	}
	r = f.do("POST", "/v1/messages", body(`,"background":true`))
	queued := r.json(t)
	if r.status != 202 || queued["status"] != "queued" || !strings.HasPrefix(r.header.Get("Location"), "/v1/turns/trn_") {
		t.Fatalf("queued send: %d %s", r.status, r.body)
	}
	if after := f.counts(); after[1] != before[1] {
		t.Fatalf("a queued turn's message joined the conversation before it started: %v", after)
	}
	// A third queued send, cancelled while it waits: it never runs.
	third := f.do("POST", "/v1/messages", `{"assistant_id":"`+f.Assistant.ID+`","conversation_id":"`+conv+`","message":"three","background":true}`).json(t)
	r = f.do("POST", "/v1/turns/"+third["id"].(string)+"/cancel", "")
	if c := r.json(t); r.status != 200 || c["status"] != "cancelled" || c["stop_reason"] != "cancelled" {
		t.Fatalf("cancel a queued turn: %d %s", r.status, r.body)
	}
	close(release)
	f.waitTurn(first["id"].(string))
	if got := <-started; got != "two" {
		t.Fatalf("second turn started with %q", got)
	}
	done := f.waitTurn(queued["id"].(string))
	if done["status"] != "completed" {
		t.Fatalf("queued turn: %v", done)
	}
	msgs := f.do("GET", "/v1/conversations/"+conv+"/messages?order=asc", "").json(t)["data"].([]any)
	var order []string
	for _, m := range msgs {
		order = append(order, m.(map[string]any)["content"].(string))
	}
	if strings.Join(order, "|") != "one|re: one|two|re: two" {
		t.Fatalf("conversation: %v", order)
	}
}
