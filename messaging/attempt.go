package messaging

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/tracing"
)

// An attempt of a turn runs in named steps (Service.run):
//
//  1. watch: helpers run beside the engine (the deferred start, the
//     lease, the stream's flushes);
//  2. reply: the engine answers;
//  3. settle: the answer becomes the turn's end (an ending: the turn's
//     state, its reply, its last event);
//  4. record: the ending is stored, with the turn's start when that was
//     deferred, or through FinishTurn;
//  5. release: the run leaves the service and its waiters get the result.
//
// A new end state is a case of settle's switch and a method of ending
// that fills it in; record stores whatever ending it is given.

// run runs one attempt of a turn to its end: a stored reply (completed),
// an error (failed) or a cancel (cancelled).
func (s *Service) run(ctx context.Context, r *Run, engine ams.Engine, req *ams.EngineRequest) {
	ctx, span := tracing.Start(ctx, "turn", tracing.Account(r.Turn.UserID), tracing.Turn(r.Turn.ID))
	bg := context.WithoutCancel(ctx)
	h := s.watch(bg, r)
	reply, err := s.reply(ctx, r, engine, req)
	if err != nil && r.Turn.Background && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = backgroundTimeout(s.backgroundTimeout())
	}
	h.stop()
	r.cancel()
	e := s.settle(r, reply, err)
	s.record(bg, r, e)
	tracing.End(span, e.err) // before the waiters hear of the end
	s.release(r, e)
}

// helpers are the goroutines that run beside the engine during an
// attempt, until stop.
type helpers struct {
	done chan struct{}
	wg   sync.WaitGroup
}

// every runs f every d until stop.
func (h *helpers) every(d time.Duration, f func()) {
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		tick := time.NewTicker(d)
		defer tick.Stop()
		for {
			select {
			case <-h.done:
				return
			case <-tick.C:
				f()
			}
		}
	}()
}

// after runs f once after d, unless stop comes first.
func (h *helpers) after(d time.Duration, f func()) {
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		wait := time.NewTimer(d)
		defer wait.Stop()
		select {
		case <-h.done:
		case <-wait.C:
			f()
		}
	}()
}

// stop ends the helpers and waits for them.
func (h *helpers) stop() {
	close(h.done)
	h.wg.Wait()
}

// watch starts the helpers of an attempt: the deferred start stored once
// the turn has run DeferStart, the lease renewed (which also reads
// cancels asked of other processes), and the gathered deltas stored
// every FlushInterval.
func (s *Service) watch(ctx context.Context, r *Run) *helpers {
	h := &helpers{done: make(chan struct{})}
	if !r.stored() {
		h.after(s.deferStart(), func() {
			if err := r.storeStart(ctx); err != nil {
				r.cancel() // the turn cannot be stored: stop the engine
			}
		})
	}
	h.every(s.lease()/3, func() { r.renew(ctx) })
	h.every(s.flushInterval(), func() {
		if r.stored() {
			r.log.flush(ctx)
		}
	})
	return h
}

func (s *Service) flushInterval() time.Duration {
	if s.FlushInterval > 0 {
		return s.FlushInterval
	}
	return 50 * time.Millisecond
}

// ending is how an attempt ends: the turn as it is to be stored, the
// reply (of a completed turn), the error the run answers with, the
// account events and the stream events stored with the turn's end.
type ending struct {
	turn   ams.Turn
	reply  *ams.Message
	err    error
	events []*ams.Event
	// tail is the turn's last stream events (message.completed with the
	// reply, or error; then the turn's lifecycle event); stream is them
	// after the events not stored yet, written in the turn's last
	// transaction: subscribers get the tail once it commits.
	tail   []*ams.TurnEvent
	stream []*ams.TurnEvent
}

// settle turns the engine's answer into the attempt's ending. Each end
// state is a case of its switch and a method of ending that fills it in
// (status, stop reason, reply or required action); what every ending
// carries (usage, action ids, calls, the lifecycle event and the tail of
// the stream) is added after.
func (s *Service) settle(r *Run, reply *ams.Reply, err error) *ending {
	t := r.Turn
	now := s.Clock.Now()
	if now.Before(t.CreatedAt) {
		now = t.CreatedAt
	}
	e := &ending{turn: *t, err: err}
	e.turn.UpdatedAt, e.turn.CompletedAt = now, &now
	if err != nil && t.Background && t.Deadline != nil && !now.Before(*t.Deadline) {
		e.err = backgroundTimeout(s.backgroundTimeout())
	}
	switch {
	case r.isCancelled():
		e.cancelled()
	case e.err != nil:
		e.turn.Status, e.turn.StopReason = ams.TurnFailed, ams.StopError
	case reply.RequiredAction != nil:
		e.requiresAction(reply, now, s.requiredActionTimeout())
	default:
		e.completed(r, reply, now)
	}
	if e.err != nil {
		e.turn.Error = apiError(e.err)
	}
	e.account(r, reply)
	var last *ams.TurnEvent
	switch {
	case e.reply != nil:
		last = r.log.prepare(EventMessageCompleted, e.reply)
	case e.turn.Status != ams.TurnRequiresAction:
		last = r.log.prepare(EventError, ErrorData{Error: e.turn.Error})
	}
	if last != nil {
		e.tail = append(e.tail, last)
	}
	if ev := ams.TurnLifecycleEvent(&e.turn, now); ev != nil {
		e.events = append(e.events, ev)
		e.tail = append(e.tail, r.log.prepareAfter(last, ev.Type, &e.turn))
	}
	e.stream = append(r.log.unwritten(), e.tail...)
	return e
}

// account fills in what every ending of the attempt carries: the usage
// (the turn's earlier attempts' plus this reply's), the tool calls so
// far, and the ids of the actions its calls recorded, and the reply's
// message.created event.
func (e *ending) account(r *Run, reply *ams.Reply) {
	ids := append([]string{}, r.Turn.ActionIDs...)
	r.mu.Lock()
	more := append([]string{}, r.actionIDs...)
	r.mu.Unlock()
	if reply != nil {
		e.turn.Usage = r.Turn.Usage.Add(reply.Usage)
		if len(reply.Calls) > 0 {
			e.turn.Calls = reply.Calls
		}
		for _, a := range reply.Actions {
			more = append(more, a.ID)
		}
		for _, c := range reply.Calls {
			if c.ActionID != "" {
				more = append(more, c.ActionID)
			}
		}
	}
	for _, id := range more {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	e.turn.ActionIDs = ids
	if e.reply != nil {
		e.events = append(e.events, ams.MessageCreatedEvent(e.reply))
	}
}

// backgroundTimeout is the error of a background turn that did not end
// within d.
func backgroundTimeout(d time.Duration) error {
	return ams.Errorf(ams.EUPSTREAM, "background_turn_timeout", "The background turn did not end within %s (--background-turn-timeout).", d)
}

// cancelled ends the turn cancelled.
func (e *ending) cancelled() {
	e.turn.Status, e.turn.StopReason = ams.TurnCancelled, ams.StopCancelled
	e.err = ams.Errorf(ams.ECONFLICT, "turn_cancelled", "The turn was cancelled.")
}

// requiresAction stops the turn at requires_action: it waits, until
// timeout from now, for the outputs of the client tool calls the engine
// made or the approval of its calls (reply.RequiredAction). The turn is
// not ended (no completed_at, no reply); its stream stops at
// turn.requires_action, and goes on when the turn is resumed.
func (e *ending) requiresAction(reply *ams.Reply, now time.Time, timeout time.Duration) {
	ra := *reply.RequiredAction
	ra.ExpiresAt = now.Add(timeout)
	e.turn.Status, e.turn.StopReason, e.turn.RequiredAction, e.turn.CompletedAt = ams.TurnRequiresAction, ams.StopRequiresAction, &ra, nil
}

// completed ends the turn completed with the engine's reply, stored as
// an outbound message at now.
func (e *ending) completed(r *Run, reply *ams.Reply, now time.Time) {
	t := r.Turn
	e.turn.Status, e.turn.StopReason, e.turn.RequiredAction = ams.TurnCompleted, reply.StopReason, nil
	if e.turn.StopReason == "" || e.turn.StopReason == ams.StopRequiresAction {
		e.turn.StopReason = ams.StopEndTurn
	}
	e.reply = &ams.Message{
		ID: ams.NewID(ams.PrefixMessage), Object: "message", UserID: t.UserID, AssistantID: t.AssistantID,
		ConversationID: t.ConversationID, Direction: ams.DirectionOutbound, Content: reply.Content, Metadata: ams.Metadata{},
		CreatedAt: now, UpdatedAt: now,
	}
	e.turn.ReplyMessageID = e.reply.ID
	if !r.log.hasDeltas() {
		// An engine that does not stream: its whole text is one delta,
		// so that the deltas always make up the content.
		r.log.addDelta(reply.Content)
	}
}

// takeStart returns the turn's start if it is still deferred (the turn
// is then stored whole, with its end), or why it could not be stored;
// no helper stores it after this.
func (r *Run) takeStart() (*ams.Exchange, error) {
	r.startMu.Lock()
	defer r.startMu.Unlock()
	whole := r.pending
	r.pending = nil
	return whole, r.startErr
}

// record stores the attempt's ending.
func (s *Service) record(ctx context.Context, r *Run, e *ending) {
	whole, startErr := r.takeStart()
	if startErr != nil || whole != nil {
		s.recordWhole(ctx, r, e, whole, startErr)
		return
	}
	s.recordEnd(ctx, r, e)
}

// recordWhole stores a turn whose start was still deferred, whole, in
// one transaction; when its start could not be stored (startErr) or
// the whole turn cannot be, the run answers as unstored says.
func (s *Service) recordWhole(ctx context.Context, r *Run, e *ending, whole *ams.Exchange, startErr error) {
	if startErr == nil {
		whole.Turn, whole.Reply, whole.Events, whole.Stream = &e.turn, e.reply, append(whole.Events, e.events...), e.stream
		startErr = s.Store.SaveExchange(ctx, whole)
	}
	if startErr == nil {
		r.log.addStored(e.tail...)
		r.final, r.whole = &e.turn, true
		return
	}
	var other *ams.Turn
	e.reply, other, e.err = s.unstored(ctx, r.Turn, startErr)
	r.final = other
	if e.err != nil {
		if ams.ErrorKindOf(e.err) == ams.EINTERNAL {
			s.logger().Error("store turn", "turn", r.Turn.ID, "err", e.err)
		}
		r.log.emit(EventError, ErrorData{Error: apiError(e.err)})
	}
}

// recordEnd stores the end of a turn whose start is stored.
func (s *Service) recordEnd(ctx context.Context, r *Run, e *ending) {
	err := s.Store.FinishTurn(ctx, &e.turn, e.reply, e.events, e.stream...)
	if err == nil {
		r.log.addStored(e.tail...)
		r.final = &e.turn
		return
	}
	if ams.ErrorKindOf(err) == ams.ECONFLICT {
		// Fenced: another process took the turn over (its lease had
		// lapsed), or a newer message interrupted it. What this attempt
		// did is not stored; the turn is as the store has it.
		if cur, ferr := s.Store.FindTurn(ctx, r.Turn.UserID, r.Turn.ID); ferr == nil {
			r.final, e.reply = cur, nil
			e.err = err
			if cur.Error != nil {
				e.err = &ams.Error{Kind: ams.ECONFLICT, Code: cur.Error.Code, Message: cur.Error.Message}
			}
			r.log.emit(EventError, ErrorData{Error: apiError(e.err)})
			if ev := ams.TurnLifecycleEvent(cur, s.Clock.Now()); ev != nil && cur.Finished() {
				// Interrupted (or cancelled) by its store: its stream
				// ends here. A turn another process took over goes on in
				// that process's stream.
				r.log.emit(ev.Type, cur)
				r.log.flush(ctx)
			}
			return
		}
	}
	s.logger().Error("finish turn", "turn", r.Turn.ID, "err", err)
	e.reply, e.err = nil, err
	e.turn.Error = apiError(err)
	r.log.emit(EventError, ErrorData{Error: e.turn.Error})
	r.log.flush(ctx)
	r.final = &e.turn
}

// release ends the run: it leaves the service's maps, its log closes,
// and its waiters get the result.
func (s *Service) release(r *Run, e *ending) {
	t := r.Turn
	s.mu.Lock()
	delete(s.runs, t.ID)
	if k := runKey(t.UserID, t.IdempotencyKey); s.keys[k] == r {
		delete(s.keys, k)
	}
	s.mu.Unlock()
	r.log.close()
	r.reply, r.err = e.reply, e.err
	close(r.done)
	s.wakeWaiters()
	s.Signals.TurnEnded.Signal(t.ID)
	if r.final != nil && r.final.Status != ams.TurnRequiresAction && !r.whole {
		// The conversation's next queued turn, if any, starts now (in
		// this process; the runners of others would find it too).
		go s.advance(context.Background(), t.UserID, t.ConversationID)
	}
}
