package builtin

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

var (
	ava = &ams.Assistant{ID: "ast_123", Name: "Ava", Description: "Ava helps the Acme team plan their week", Model: ams.ModelBuiltin}
	bob = &ams.Assistant{ID: "ast_456", Name: "Bob"}

	clock = time.Date(2026, 3, 10, 14, 30, 5, 0, time.FixedZone("CET", 3600))
)

func in(s string) *ams.Message  { return &ams.Message{Direction: ams.DirectionInbound, Content: s} }
func out(s string) *ams.Message { return &ams.Message{Direction: ams.DirectionOutbound, Content: s} }

func history(msgs ...*ams.Message) []*ams.Message { return msgs }

func testEngine() *Engine {
	return &Engine{Now: func() time.Time { return clock }}
}

func TestReply(t *testing.T) {
	tests := []struct {
		name      string
		assistant *ams.Assistant // ava if nil
		history   []*ams.Message
		want      []string // substrings of the reply
		notWant   []string
	}{
		// Greetings.
		{name: "hi", history: history(in("hi")), want: []string{"Hello!", "I'm Ava", `Say "help"`}},
		{name: "good morning", history: history(in("Good morning!")), want: []string{"Good morning!", "I'm Ava"}},
		{name: "hey there", history: history(in("Hey there :)")), want: []string{"Hello!", "I'm Ava"}},
		{name: "greeting uses the user's name", history: history(
			in("My name is Alice"), out("Nice to meet you, Alice!"), in("hello again")),
			want: []string{"Hello, Alice!", "I'm Ava"}},
		{name: "greeting then a question answers the question", history: history(in("hi, what time is it?")),
			want: []string{"It's Tuesday, 10 Mar 2026 13:30 UTC."}},

		// Help.
		{name: "help", history: history(in("help")), want: []string{
			"chat with you and keep the context", "remember what you tell me", "current date and time",
			"POST /v1/assistants/ast_123/actions", "create_task", "create_calendar_event", `Try: "What's my name?"`}},
		{name: "what can you do", history: history(in("What can you do?")), want: []string{"Here's what I can do", "create_task"}},
		{name: "how do I", history: history(in("how do I create a task?")), want: []string{"Here's what I can do", "API's actions"}},
		{name: "task request", history: history(in("Remind me to call mom tomorrow at 9")),
			want: []string{"can't create tasks", "/v1/assistants/ast_123/actions", "create_task"}},
		{name: "calendar request", history: history(in("Please schedule a meeting with Dana on Friday")),
			want: []string{"create_calendar_event"}},

		// Names.
		{name: "my name is", history: history(in("my name is alice")),
			want: []string{"Nice to meet you, Alice!", "I'm Ava", "remember your name"}},
		{name: "I'm X after a greeting", history: history(in("Hi, I'm Bob.")), want: []string{"Nice to meet you, Bob!"}},
		{name: "call me, two names", history: history(in("Call me Mary Jane")), want: []string{"Nice to meet you, Mary Jane!"}},
		{name: "I'm tired is no name", history: history(in("I'm tired")),
			want: []string{`You said: "I'm tired"`}, notWant: []string{"Nice to meet you"}},
		{name: "name question across turns", history: history(
			in("Hello, my name is Alice."), out("Nice to meet you, Alice!"),
			in("What's the date?"), out("It's Tuesday."),
			in("WHAT'S   MY NAME???")),
			want: []string{"Your name is Alice."}},
		{name: "name question with curly apostrophe", history: history(
			in("I’m Zoë"), out("Nice to meet you, Zoë!"), in("What’s my name")),
			want: []string{"Your name is Zoë."}},
		{name: "name unknown", history: history(in("hi"), out("Hello!"), in("Do you know my name?")),
			want: []string{"don't know your name yet", "My name is"}},
		{name: "renaming", history: history(in("My name is Alice"), out("Nice to meet you, Alice!"), in("Actually, call me Ally")),
			want: []string{"I'll call you Ally from now on, not Alice."}},
		{name: "latest name wins", history: history(
			in("My name is Alice"), out("…"), in("Actually, call me Ally"), out("…"), in("who am I?")),
			want: []string{"Your name is Ally."}},
		{name: "repeated introduction", history: history(in("I am Sam"), out("…"), in("my name is Sam")),
			want: []string{"I know, Sam"}},

		// What was said.
		{name: "what did I just say", history: history(
			in("I like green tea"), out("Noted."), in("What did I just say?")),
			want: []string{`Your previous message was: "I like green tea"`}},
		{name: "what did I ask quotes the previous inbound only", history: history(
			in("Is it going to rain?"), out("I can't check the weather."), in("what did i ask")),
			want: []string{`"Is it going to rain?"`}, notWant: []string{"weather"}},
		{name: "nothing said before", history: history(in("What did I say?")), want: []string{"first message"}},
		{name: "remember what I said is a question, not a note", history: history(
			in("The code is 4471"), out("…"), in("remember what I said?")),
			want: []string{`Your previous message was: "The code is 4471"`}, notWant: []string{"I'll remember"}},

		// Notes.
		{name: "remember that", history: history(in("Remember that the meeting moved to 3pm.")),
			want: []string{`I'll remember that: "the meeting moved to 3pm"`, "1 note", "what do you remember?"}},
		{name: "note colon is the second note", history: history(
			in("remember that the wifi password is hunter2"), out("Got it"), in("Note: buy milk")),
			want: []string{`I'll remember that: "buy milk"`, "2 notes"}},
		{name: "what did I ask you to remember", history: history(
			in("remember that the wifi password is hunter2"), out("Got it"),
			in("Note: buy milk"), out("Got it"),
			in("My name is Sam"), out("Nice to meet you"),
			in("What did I ask you to remember?")),
			want: []string{"(2 notes)", "1. the wifi password is hunter2", "2. buy milk", "your name is Sam"}},
		{name: "nothing to remember", history: history(in("hello"), out("Hello!"), in("What do you remember?")),
			want: []string{"haven't asked me to remember anything"}},
		{name: "only a name to remember", history: history(in("call me Kim"), out("…"), in("what do you remember")),
			want: []string{"any notes", "your name is Kim"}},

		// Counting.
		{name: "how many messages", history: history(
			in("hi"), out("Hello!"), in("thanks"), out("You're welcome!"), in("How many messages so far?")),
			want: []string{"5 messages so far", "3 from you and 2 from me"}},
		{name: "how many messages, first", history: history(in("how many messages have we exchanged")),
			want: []string{"1 message so far", "1 from you and 0 from me"}},

		// Small talk.
		{name: "thanks", history: history(in("thanks!")), want: []string{"You're welcome!"}},
		{name: "thank you so much", history: history(in("Thank you so much")), want: []string{"You're welcome!"}},
		{name: "bye", history: history(in("bye")), want: []string{"Goodbye!"}},
		{name: "bye with name", history: history(in("I'm Alice"), out("…"), in("OK, see you later!")),
			want: []string{"Goodbye, Alice!"}},
		{name: "how are you", history: history(in("How are you?")), want: []string{"doing well"}},

		// Identity.
		{name: "who are you", history: history(in("Who are you?")),
			want: []string{"I'm Ava. Ava helps the Acme team plan their week."}},
		{name: "what is your name without a description", assistant: bob, history: history(in("what is your name")),
			want: []string{"I'm Bob, an assistant running on the ams built-in engine."}},

		// Date and time.
		{name: "what time is it", history: history(in("What time is it?")), want: []string{"It's Tuesday, 10 Mar 2026 13:30 UTC."}},
		{name: "what's the date", history: history(in("whats the date today")), want: []string{"10 Mar 2026"}},

		// Fallback.
		{name: "fallback quotes a short message", history: history(in("Tell me a joke")),
			want: []string{`You said: "Tell me a joke".`, "built-in engine", "simple requests", `Say "help"`}},
		{name: "fallback cuts a long message", history: history(in(
			"I would like you to compare the annual reports of three companies and summarize the differences")),
			want:    []string{`"I would like you to compare the annual reports of three…"`, `Say "help"`},
			notWant: []string{"summarize"}},
		{name: "long message starting with hi is no mere greeting", history: history(
			in("hi, can you book me a flight to Paris next week please?")),
			want: []string{"Hello! You said:", "a flight to Paris"}},
		{name: "fallback uses the assistant's name", assistant: bob, history: history(in("¿Qué tal?")),
			want: []string{"I'm Bob", `"¿Qué tal?"`}},
		{name: "empty message", history: history(in("   ")), want: []string{"empty", `Say "help"`}},
	}
	e := testEngine()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := tt.assistant
			if a == nil {
				a = ava
			}
			r, err := e.Reply(context.Background(), &ams.EngineRequest{Assistant: a, History: tt.history})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.Content, w) {
					t.Errorf("reply lacks %q:\n%s", w, r.Content)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(r.Content, w) {
					t.Errorf("reply contains %q:\n%s", w, r.Content)
				}
			}
			again, _ := e.Reply(context.Background(), &ams.EngineRequest{Assistant: a, History: tt.history})
			if again.Content != r.Content {
				t.Errorf("reply is not deterministic:\n%s\n%s", r.Content, again.Content)
			}
		})
	}
}

func TestReplyErrors(t *testing.T) {
	e := New()
	for name, h := range map[string][]*ams.Message{
		"nil":           nil,
		"empty":         {},
		"last outbound": {in("hi"), out("Hello!")},
		"last nil":      {in("hi"), nil},
	} {
		r, err := e.Reply(context.Background(), &ams.EngineRequest{Assistant: ava, History: h})
		if !errors.Is(err, ErrNothingToAnswer) || r != nil {
			t.Errorf("%s: Reply = %v, %v; want ErrNothingToAnswer", name, r, err)
		}
	}
}

func TestReplyCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := New().Reply(ctx, &ams.EngineRequest{Assistant: ava, History: history(in("hi"))}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestReplyDefaults(t *testing.T) {
	if New().Now == nil {
		t.Fatal("New().Now is nil")
	}
	// A zero Engine reads the system clock, and a nil assistant still gets
	// a reply.
	var e Engine
	r, err := e.Reply(context.Background(), &ams.EngineRequest{Assistant: nil, History: history(in("what time is it"), nil, in("What time is it?"))})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.Content, "UTC") {
		t.Errorf("reply = %q, want the time in UTC", r.Content)
	}
	r, _ = e.Reply(context.Background(), &ams.EngineRequest{Assistant: nil, History: history(in("hi"))})
	if !strings.Contains(r.Content, "I'm your assistant") {
		t.Errorf("reply = %q", r.Content)
	}
}

func FuzzReply(f *testing.F) {
	for _, s := range []string{"hi", "my name is", "I'm", "remember", "note:", "what did I say", "…", "call me 😀", "'''", "remember that   "} {
		f.Add("My name is Alice", s)
	}
	e := testEngine()
	f.Fuzz(func(t *testing.T, first, last string) {
		r, err := e.Reply(context.Background(), &ams.EngineRequest{Assistant: ava, History: history(in(first), out("ok"), in(last))})
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(r.Content) == "" {
			t.Fatalf("empty reply to %q, %q", first, last)
		}
	})
}

func TestWordsMakeUpText(t *testing.T) {
	for _, s := range []string{"", "Hello", " Hello  Ada!\nHow are you? ", "a b"} {
		got := strings.Join(words(s), "")
		if got != s {
			t.Errorf("words(%q) joined = %q", s, got)
		}
	}
	if n := len(words("Hello Ada, how are you?")); n != 5 {
		t.Errorf("%d pieces, want 5", n)
	}
}
