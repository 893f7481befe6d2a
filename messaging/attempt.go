package messaging

import (
	"context"
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
	// last is the turn's last stream event (message.completed with the
	// reply, or error); stream is it with the events not stored yet,
	// written in the turn's last transaction: subscribers get last once
	// it commits.
	last   *ams.TurnEvent
	stream []*ams.TurnEvent
}

// settle turns the engine's answer into the attempt's ending.
func (s *Service) settle(r *Run, reply *ams.Reply, err error) *ending {
	t := r.Turn
	now := s.Clock.Now()
	if now.Before(t.CreatedAt) {
		now = t.CreatedAt
	}
	e := &ending{turn: *t, err: err}
	e.turn.UpdatedAt, e.turn.CompletedAt = now, &now
	switch {
	case r.isCancelled():
		e.cancelled()
	case err != nil:
		e.turn.Status = ams.TurnFailed
	default:
		e.completed(r, reply, now)
	}
	if e.err != nil {
		e.turn.Error = apiError(e.err)
	}
	if e.reply != nil {
		e.events = []*ams.Event{ams.MessageCreatedEvent(e.reply)}
		e.last = r.log.prepare(EventMessageCompleted, e.reply)
	} else {
		e.last = r.log.prepare(EventError, ErrorData{Error: e.turn.Error})
	}
	e.stream = append(r.log.unwritten(), e.last)
	return e
}

// cancelled ends the turn cancelled.
func (e *ending) cancelled() {
	e.turn.Status = ams.TurnCancelled
	e.err = ams.Errorf(ams.ECONFLICT, "turn_cancelled", "The turn was cancelled.")
}

// completed ends the turn completed with the engine's reply, stored as
// an outbound message at now.
func (e *ending) completed(r *Run, reply *ams.Reply, now time.Time) {
	t := r.Turn
	e.turn.Status = ams.TurnCompleted
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
		r.log.addStored(e.last)
		r.final = &e.turn
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
	if err := s.Store.FinishTurn(ctx, &e.turn, e.reply, e.events, e.stream...); err != nil {
		s.logger().Error("finish turn", "turn", r.Turn.ID, "err", err)
		e.reply, e.err = nil, err
		e.turn.Error = apiError(err)
		r.log.emit(EventError, ErrorData{Error: e.turn.Error})
		r.log.flush(ctx)
	} else {
		r.log.addStored(e.last)
	}
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
	s.Signals.TurnEnded.Signal(t.ID)
}
