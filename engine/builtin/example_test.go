package builtin_test

import (
	"context"
	"fmt"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/engine/builtin"
)

func ExampleEngine_Reply() {
	e := builtin.New()
	e.Now = func() time.Time { return time.Date(2026, 3, 10, 14, 30, 0, 0, time.UTC) }
	a := &ams.Assistant{ID: "ast_123", Name: "Ava", Description: "I help the Acme team plan their week."}

	var history []*ams.Message
	for _, text := range []string{
		"Hi, I'm Sam!",
		"Remember that the review moved to Thursday.",
		"What time is it?",
		"What do you remember?",
	} {
		history = append(history, &ams.Message{Direction: ams.DirectionInbound, Content: text})
		r, err := e.Reply(context.Background(), &ams.EngineRequest{Assistant: a, History: history})
		if err != nil {
			panic(err)
		}
		fmt.Println(r.Content)
		history = append(history, &ams.Message{Direction: ams.DirectionOutbound, Content: r.Content})
	}
	// Output:
	// Nice to meet you, Sam! I'm Ava. I'll remember your name for the rest of this conversation.
	// Got it, I'll remember that: "the review moved to Thursday" (1 note in this conversation). Ask me "what do you remember?" any time.
	// It's Tuesday, 10 Mar 2026 14:30 UTC.
	// Here's what you asked me to remember (1 note):
	// 1. the review moved to Thursday
	// And your name is Sam.
}
