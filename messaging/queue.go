package messaging

import (
	"context"
	"encoding/json"
	"time"

	"github.com/amsdev/ams"
)

// Double texting and turns that outlive their process.
//
// A send to a conversation that has an unfinished turn (queued, running
// or requires_action) is admitted by its multitask strategy in the
// store's transaction (AdmitTurn): enqueued, refused or interrupting.
// A queued turn starts when it is the first unfinished turn of its
// conversation (StartQueuedTurn, one conditional UPDATE: of several
// processes exactly one starts it), its inbound message joining the
// conversation then, so that the history alternates and the engine sees
// every reply before it. Who starts it: the process where the turn
// before it ends (advance, at once), the process waiting for it (its
// send's Run, looking every QueuePoll), and every process's runner
// (RunTurns), which also takes over running turns whose lease lapsed
// (their process died).

// wakeWaiters tells the sends waiting for queued turns in this process
// that a turn ended.
func (s *Service) wakeWaiters() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wake != nil {
		close(s.wake)
		s.wake = nil
	}
}

// woken returns a channel closed at the next end of a turn here.
func (s *Service) woken() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wake == nil {
		s.wake = make(chan struct{})
	}
	return s.wake
}

// interrupted stops the runs of this process of turns a newer message
// interrupted (already stored cancelled); runs elsewhere stop at their
// next lease renewal.
func (s *Service) interrupted(cut []*ams.Turn) {
	for _, t := range cut {
		if r := s.running(t.ID); r != nil {
			r.fence()
		}
	}
}

// awaitQueued returns the Run of a queued turn: done once the turn has
// started (in this process or another) and ended. A background send
// does not wait for it, but the Run still watches (cheaply) so that a
// stream may follow it.
func (s *Service) awaitQueued(ctx context.Context, t *ams.Turn, background bool) *Run {
	r := &Run{Turn: t, s: s, done: make(chan struct{}), queued: true}
	if background {
		close(r.done)
		return r
	}
	go s.waitQueued(context.WithoutCancel(ctx), r)
	return r
}

// waitQueued waits for the queued turn of r to end, starting it when it
// is next.
func (s *Service) waitQueued(ctx context.Context, r *Run) {
	defer close(r.done)
	t := r.Turn
	for {
		wake := s.woken()
		if lr := s.running(t.ID); lr != nil {
			r.reply, r.err = lr.Result()
			r.final = lr.final
			return
		}
		cur, err := s.Store.FindTurn(ctx, t.UserID, t.ID)
		if err != nil {
			r.err = err
			return
		}
		switch cur.Status {
		case ams.TurnQueued:
			if s.startQueued(ctx, cur) != nil {
				continue // started here: wait for its run
			}
		case ams.TurnRunning:
		default:
			r.final = cur
			r.reply, r.err = s.outcome(ctx, cur)
			return
		}
		select {
		case <-wake:
		case <-time.After(s.queuePoll()):
		}
	}
}

// outcome is what a send answers for a turn that has stopped or ended:
// its reply, or its error (none for a turn waiting in requires_action).
func (s *Service) outcome(ctx context.Context, t *ams.Turn) (*ams.Message, error) {
	switch t.Status {
	case ams.TurnCompleted:
		return s.Store.FindMessage(ctx, t.UserID, t.ReplyMessageID)
	case ams.TurnRequiresAction:
		return nil, nil
	}
	if t.Error != nil {
		kind := ams.EUPSTREAM
		if t.Status == ams.TurnCancelled {
			kind = ams.ECONFLICT
		}
		return nil, &ams.Error{Kind: kind, Code: t.Error.Code, Message: t.Error.Message, Param: t.Error.Param}
	}
	return nil, ams.Errorf(ams.EUPSTREAM, "engine_error", "The turn ended without a reply.")
}

// advance starts the next turn of a conversation when it is queued and
// nothing holds it back.
func (s *Service) advance(ctx context.Context, userID, conversationID string) {
	next, err := s.Store.NextTurn(ctx, userID, conversationID)
	if err != nil || next.Status != ams.TurnQueued {
		return
	}
	s.startQueued(ctx, next)
}

// startQueued starts queued turn t in this process when it is next in
// its conversation (nil when it is not, or another process started it).
func (s *Service) startQueued(ctx context.Context, t *ams.Turn) *Run {
	now := s.Clock.Now()
	var deadline *time.Time
	if t.Background {
		d := now.Add(s.backgroundTimeout())
		deadline = &d
	}
	started, err := s.Store.StartQueuedTurn(ctx, t.UserID, t.ID, now, now.Add(s.lease()), deadline)
	if err != nil {
		if ams.ErrorKindOf(err) == ams.EINTERNAL {
			s.logger().Error("start queued turn", "turn", t.ID, "err", err)
		}
		return nil
	}
	return s.runTaken(ctx, started, false)
}

// runTaken runs a turn this process has just taken up (a queued turn
// started, or an abandoned one claimed): it fails at once when its
// assistant or engine is gone, or its background deadline passed.
func (s *Service) runTaken(ctx context.Context, t *ams.Turn, resumed bool) *Run {
	fail := func(err error) *Run {
		s.failTaken(ctx, t, err)
		return nil
	}
	if t.Background && t.Deadline != nil && !s.Clock.Now().Before(*t.Deadline) {
		return fail(backgroundTimeout(s.backgroundTimeout()))
	}
	a, err := s.Store.FindAssistant(ctx, t.UserID, t.AssistantID)
	if err != nil {
		return fail(err)
	}
	engine, err := s.EngineFor(a)
	if err != nil {
		return fail(err)
	}
	tz := ""
	if u, err := s.Store.FindUser(ctx, t.UserID); err == nil {
		tz = u.Timezone
	}
	// A turn sent with stream: true streams whoever starts it.
	r, err := s.resume(ctx, a, engine, t, tz, t.Stream, resumed)
	if err != nil {
		return fail(err)
	}
	return r
}

// failTaken ends a turn this process took up and cannot run, failed with
// err, its events stored with it; the conversation's next turn may start.
func (s *Service) failTaken(ctx context.Context, t *ams.Turn, err error) {
	now := s.Clock.Now()
	end := *t
	end.Status, end.StopReason, end.Error, end.UpdatedAt, end.CompletedAt = ams.TurnFailed, ams.StopError, apiError(err), now, &now
	if end.ActionIDs == nil {
		end.ActionIDs = []string{}
	}
	last, _ := s.lastEventSeq(ctx, t.ID)
	errData, _ := json.Marshal(ErrorData{Error: end.Error})
	turnData, _ := json.Marshal(&end)
	stream := []*ams.TurnEvent{{TurnID: t.ID, Seq: last + 1, Type: EventError, Data: errData, CreatedAt: now},
		{TurnID: t.ID, Seq: last + 2, Type: EventTurnFailed, Data: turnData, CreatedAt: now}}
	if ferr := s.Store.FinishTurn(ctx, &end, nil, []*ams.Event{ams.TurnLifecycleEvent(&end, now)}, stream...); ferr != nil {
		s.logger().Warn("fail a turn that could not run", "turn", t.ID, "err", ferr)
		return
	}
	s.wakeWaiters()
	go s.advance(context.WithoutCancel(ctx), t.UserID, t.ConversationID)
}

// RunTurns takes up, until ctx is done, the turns no process runs: every
// RunnerInterval it claims the running turns whose lease lapsed (their
// process died; a background turn past its deadline fails with
// background_turn_timeout) and starts the queued turns that are next in
// their conversation. Every `ams serve` runs it; the store's conditional
// claims let exactly one process take each turn.
func (s *Service) RunTurns(ctx context.Context) error {
	every := s.RunnerInterval
	if every <= 0 {
		every = time.Second
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		s.RunTurnsOnce(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// RunTurnsOnce is one look of RunTurns: it returns how many turns this
// process took up.
func (s *Service) RunTurnsOnce(ctx context.Context) int {
	now := s.Clock.Now()
	ts, err := s.Store.RunnableTurns(ctx, now, 100)
	if err != nil {
		if ctx.Err() == nil {
			s.logger().Error("find turns to run", "err", err)
		}
		return 0
	}
	n := 0
	for _, t := range ts {
		if ctx.Err() != nil {
			break
		}
		if s.running(t.ID) != nil {
			continue
		}
		switch t.Status {
		case ams.TurnQueued:
			if s.startQueued(ctx, t) != nil {
				n++
			}
		case ams.TurnRunning:
			claimed, err := s.Store.ClaimTurn(ctx, t.UserID, t.ID, now, now.Add(s.lease()))
			if err != nil {
				continue // another process took it, or it ended meanwhile
			}
			n++
			s.runTaken(ctx, claimed, true)
		}
	}
	return n
}
