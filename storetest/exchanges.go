package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

// testConcurrentExchanges: whole turns in new conversations stored at
// once (which a PostgreSQL store writes together, several turns to a
// statement: sqlstore's exchange.go) are each stored as one alone would
// be: its conversation, messages, turn and stream, its events, and a
// delivery job for each of its events that a webhook of its account is
// subscribed to (none for another account's webhook). One that cannot
// be stored (its conversation's id is taken) fails alone, storing
// nothing; the others are stored.
func testConcurrentExchanges(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u, other := mustUser(t, s, "exchanges@example.com"), mustUser(t, s, "exchanges2@example.com")
	a, oa := mustAssistant(t, s, u, "a"), mustAssistant(t, s, other, "o")
	w := mustWebhook(t, s, u, ams.EventMessageCreated)
	taken := sendTurn(t, s, u, a, t0)
	// Its jobs delivered: what is claimed later is the new exchanges'.
	before := claimAll(t, s, t0.Add(time.Second))
	for _, j := range before {
		record(t, s, j, ams.JobSucceeded, t0.Add(time.Second))
	}

	const n = 24
	xs := make([]*ams.Exchange, n)
	for i := range xs {
		user, asst := u, a
		if i%3 == 2 {
			user, asst = other, oa
		}
		at := t0.Add(time.Minute + time.Duration(i)*time.Millisecond)
		x := exchange(user, asst, ams.NewID(ams.PrefixConversation), true, fmt.Sprintf("hi %d", i), at)
		if i%2 == 0 {
			// A whole turn, with its stream: another shape of write.
			x.Turn = &ams.Turn{ID: ams.NewID(ams.PrefixTurn), Object: "turn", UserID: user.ID, AssistantID: asst.ID,
				ConversationID: x.ConversationID, InboundMessageID: x.Inbound.ID, ReplyMessageID: x.Reply.ID,
				Status: ams.TurnCompleted, RequestHash: "h", Attempt: 1, CreatedAt: at, UpdatedAt: at, CompletedAt: &at}
			for k, typ := range []string{"turn.started", "turn.completed"} {
				x.Stream = append(x.Stream, &ams.TurnEvent{TurnID: x.Turn.ID, Seq: int64(k + 1), Type: typ,
					Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)), CreatedAt: at})
			}
		}
		xs[i] = x
	}
	// The last one's conversation id is taken.
	bad := n - 1
	xs[bad].ConversationID, xs[bad].NewConversation.ID = taken.ConversationID, taken.ConversationID
	xs[bad].Inbound.ConversationID, xs[bad].Reply.ConversationID = taken.ConversationID, taken.ConversationID
	if xs[bad].Turn != nil {
		xs[bad].Turn.ConversationID = taken.ConversationID
	}

	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, x := range xs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = s.SaveExchange(ctx, x)
		}()
	}
	close(start)
	wg.Wait()

	var uEvents []string
	for i, x := range xs {
		user := x.Inbound.UserID
		if i == bad {
			if errs[i] == nil {
				t.Fatalf("exchange %d into a taken conversation id was stored", i)
			}
			for _, m := range []*ams.Message{x.Inbound, x.Reply} {
				if _, err := s.FindMessage(ctx, user, m.ID); ams.ErrorKindOf(err) != ams.ENOTFOUND {
					t.Errorf("message %s of the failed exchange: %v, want not found", m.ID, err)
				}
			}
			continue
		}
		if errs[i] != nil {
			t.Fatalf("exchange %d: %v", i, errs[i])
		}
		c, err := s.FindConversation(ctx, user, x.ConversationID)
		if err != nil || c.MessageCount != 2 || c.Title != x.Inbound.Content || c.UserID != user {
			t.Fatalf("exchange %d: conversation %+v %v", i, c, err)
		}
		pg, err := s.ListMessages(ctx, user, x.ConversationID, ams.ListParams{Limit: 10, Order: ams.OrderAsc})
		if err != nil || len(pg.Data) != 2 || pg.Data[0].ID != x.Inbound.ID || pg.Data[1].ID != x.Reply.ID || pg.Data[1].Content != x.Reply.Content {
			t.Fatalf("exchange %d: messages %+v %v", i, pg, err)
		}
		if x.Turn != nil {
			tr, err := s.FindTurn(ctx, user, x.Turn.ID)
			if err != nil || tr.Status != ams.TurnCompleted || tr.ReplyMessageID != x.Reply.ID || tr.ConversationID != x.ConversationID {
				t.Fatalf("exchange %d: turn %+v %v", i, tr, err)
			}
			evs, err := s.TurnEvents(ctx, x.Turn.ID, 0, 10)
			if err != nil || len(evs) != 2 || evs[0].Type != "turn.started" || string(evs[1].Data) != fmt.Sprintf(`{"n":%d}`, i) {
				t.Fatalf("exchange %d: stream %+v %v", i, evs, err)
			}
		}
		if user == u.ID {
			for _, e := range x.Events {
				uEvents = append(uEvents, e.ID)
			}
		}
		for _, e := range x.Events {
			got, err := s.FindEvent(ctx, user, e.ID)
			if err != nil || got.Type != ams.EventMessageCreated {
				t.Fatalf("exchange %d: event %s: %+v %v", i, e.ID, got, err)
			}
		}
	}
	if _, err := s.FindEvent(ctx, other.ID, uEvents[0]); ams.ErrorKindOf(err) != ams.ENOTFOUND {
		t.Fatalf("another account's event: %v, want not found", err)
	}

	// One job per event of u's, for u's webhook; none for other's events.
	jobs := claimAll(t, s, t0.Add(time.Hour))
	var got []string
	for _, j := range jobs {
		if j.WebhookID != w.ID || j.UserID != u.ID {
			t.Fatalf("job %+v: not u's webhook", j)
		}
		got = append(got, j.Event.ID)
	}
	slices.Sort(got)
	slices.Sort(uEvents)
	if len(before) != 2 || !slices.Equal(got, uEvents) {
		t.Fatalf("jobs for the events %v (before: %d), want %v", got, len(before), uEvents)
	}
}
