package messaging

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/amsdev/ams"
)

// Event types of a turn's stream (see http/stream.go for the wire form).
const (
	EventTurnStarted      = "turn.started"
	EventToolCall         = "tool_call"
	EventToolResult       = "tool_result"
	EventMessageDelta     = "message.delta"
	EventMessageCompleted = "message.completed"
	EventError            = "error"
)

// Lifecycle events of a turn's stream: the last event of an attempt,
// after message.completed or error, carrying the turn record (the same
// as the account events of these types, ams.TurnLifecycleEvent).
const (
	EventTurnRequiresAction = ams.EventTurnRequiresAction
	EventTurnCompleted      = ams.EventTurnCompleted
	EventTurnFailed         = ams.EventTurnFailed
	EventTurnCancelled      = ams.EventTurnCancelled
)

// Terminal reports whether an event of type typ ends an attempt of a
// turn: its lifecycle event (turn.completed, turn.failed,
// turn.cancelled, or turn.requires_action, after which the turn's stream
// goes on when it resumes); message.completed and error end the streams
// of turns stored before lifecycle events existed.
func Terminal(typ string) bool {
	switch typ {
	case EventTurnCompleted, EventTurnFailed, EventTurnCancelled, EventTurnRequiresAction, EventMessageCompleted, EventError:
		return true
	}
	return false
}

// TurnStartedData is the data of a turn.started event.
type TurnStartedData struct {
	TurnID           string `json:"turn_id"`
	InboundMessageID string `json:"inbound_message_id"`
	ConversationID   string `json:"conversation_id"`
	AssistantID      string `json:"assistant_id"`
	// Resumed is true when a retry resumes a failed or interrupted turn:
	// its committed tool calls are not run again.
	Resumed bool `json:"resumed"`
}

// ToolCallData is the data of a tool_call event.
type ToolCallData struct {
	TurnID    string          `json:"turn_id"`
	CallSeq   int             `json:"call_seq"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// ToolResultData is the data of a tool_result event: the action record.
// Replayed is true when the call had committed in an earlier attempt of
// the turn and was not run again.
type ToolResultData struct {
	TurnID   string      `json:"turn_id"`
	CallSeq  int         `json:"call_seq"`
	Name     string      `json:"name"`
	Action   *ams.Action `json:"action"`
	Replayed bool        `json:"replayed"`
}

// DeltaData is the data of a message.delta event.
type DeltaData struct {
	Delta string `json:"delta"`
}

// ErrorData is the data of an error event: the API's error body.
type ErrorData struct {
	Error *ams.ActionError `json:"error"`
}

// eventLog is the stream of one attempt of a turn: events are numbered,
// kept in memory for this process's subscribers, and written to the store
// in batches (every FlushInterval) so that another process, or a later
// request, can read them.
type eventLog struct {
	store  eventStore
	clock  ams.Clock
	logger *slog.Logger
	turnID string

	mu      sync.Mutex
	first   int64 // seq of this attempt's first event
	seq     int64 // last seq given
	events  []*ams.TurnEvent
	written int // events[:written] are stored
	deltas  int // message.delta events emitted
	changed chan struct{}
	closed  bool
}

func newEventLog(store eventStore, clock ams.Clock, logger *slog.Logger, turnID string, last int64) *eventLog {
	return &eventLog{store: store, clock: clock, logger: logger, turnID: turnID, first: last + 1, seq: last, changed: make(chan struct{})}
}

// addDelta emits a piece of the reply's text as a message.delta event.
func (l *eventLog) addDelta(d string) {
	if d == "" {
		return
	}
	l.mu.Lock()
	l.deltas++
	l.mu.Unlock()
	l.emit(EventMessageDelta, DeltaData{Delta: d})
}

// streamData returns v's JSON as json.Marshal writes it. Every turn
// encodes its deltas, its reply and its record; those are written
// directly (json.Marshal would call the records' MarshalJSON and then
// check and copy what it wrote). TestStreamDataAsJSON compares the two.
func streamData(v any) ([]byte, error) {
	switch d := v.(type) {
	case DeltaData:
		b := append(make([]byte, 0, len(d.Delta)+16), `{"delta":`...)
		return append(ams.AppendJSONString(b, d.Delta), '}'), nil
	case *ams.Message:
		if d != nil {
			return d.MarshalJSON()
		}
	case *ams.Turn:
		if d != nil {
			return d.MarshalJSON()
		}
	}
	return json.Marshal(v)
}

// emit adds an event (after any buffered delta) and wakes subscribers.
func (l *eventLog) emit(typ string, v any) {
	b, err := streamData(v)
	if err != nil {
		b = []byte(`{}`)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.appendLocked(typ, b)
	l.wakeLocked()
}

func (l *eventLog) appendLocked(typ string, data []byte) {
	l.seq++
	l.events = append(l.events, &ams.TurnEvent{TurnID: l.turnID, Seq: l.seq, Type: typ, Data: data, CreatedAt: l.clock.Now()})
}

func (l *eventLog) wakeLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// flush stores the events not stored yet, in one transaction: a turn's
// events are written every FlushInterval, not one by one.
func (l *eventLog) flush(ctx context.Context) {
	l.mu.Lock()
	pending := l.events[l.written:]
	n := len(l.events)
	l.mu.Unlock()
	if len(pending) == 0 {
		return
	}
	if err := l.store.AppendTurnEvents(ctx, pending); err != nil {
		l.logger.Error("store turn events", "turn", l.turnID, "err", err)
		return
	}
	l.mu.Lock()
	if n > l.written {
		l.written = n
	}
	l.mu.Unlock()
}

// prepare returns the event that would come next, without adding it:
// the turn's last event, to be stored with the turn's completion and
// added by addStored once that has committed.
func (l *eventLog) prepare(typ string, v any) *ams.TurnEvent {
	return l.prepareAfter(nil, typ, v)
}

// prepareAfter is prepare for the event after prev (one prepared too),
// or the next one when prev is nil.
func (l *eventLog) prepareAfter(prev *ams.TurnEvent, typ string, v any) *ams.TurnEvent {
	b, err := streamData(v)
	if err != nil {
		b = []byte(`{}`)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	seq := l.seq + 1
	if prev != nil {
		seq = prev.Seq + 1
	}
	return &ams.TurnEvent{TurnID: l.turnID, Seq: seq, Type: typ, Data: b, CreatedAt: l.clock.Now()}
}

// unwritten returns the events not stored yet.
func (l *eventLog) unwritten() []*ams.TurnEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events[l.written:])
}

// addStored adds e, the event prepare made, stored with every event
// before it, and wakes the subscribers.
func (l *eventLog) addStored(es ...*ams.TurnEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range es {
		l.seq = e.Seq
		l.events = append(l.events, e)
	}
	l.written = len(l.events)
	l.wakeLocked()
}

// hasDeltas reports whether any text was emitted.
func (l *eventLog) hasDeltas() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deltas > 0
}

// close ends the log: no more events.
func (l *eventLog) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	l.wakeLocked()
}

// since returns the events after seq after, whether the log is closed, and
// a channel closed at the next change.
func (l *eventLog) since(after int64) ([]*ams.TurnEvent, bool, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []*ams.TurnEvent
	if i := int(after - l.first + 1); i < len(l.events) {
		if i < 0 {
			i = 0
		}
		out = append(out, l.events[i:]...)
	}
	return out, l.closed, l.changed
}

// Follow sends the turn's events after seq after to send, as they come,
// until the attempt ends (its terminal event is sent), send fails or ctx
// is done. Events of earlier attempts are read from the store.
func (r *Run) Follow(ctx context.Context, after int64, send func(*ams.TurnEvent) error) error {
	if r.queued {
		// A queued turn: its events come once it starts, here or
		// elsewhere.
		return r.s.FollowStored(ctx, r.Turn.UserID, r.Turn.ID, max(after, 0), 0, send)
	}
	l := r.log
	if after < l.first-1 {
		old, err := r.s.Store.TurnEvents(ctx, r.Turn.ID, after, int(l.first-1-after))
		if err != nil {
			return err
		}
		for _, e := range old {
			if e.Seq >= l.first {
				break
			}
			if err := send(e); err != nil {
				return err
			}
			after = e.Seq
		}
		after = max(after, l.first-1)
	}
	for {
		evs, closed, changed := l.since(after)
		for _, e := range evs {
			if err := send(e); err != nil {
				return err
			}
			after = e.Seq
		}
		if closed && len(evs) == 0 {
			return nil
		}
		if closed {
			continue
		}
		select {
		case <-changed:
		case <-ctx.Done():
			r.s.Signals.FollowerLeft.Signal(r.Turn.ID)
			return ctx.Err()
		}
	}
}

// FollowStored sends the stored events of a turn after seq after, polling
// the store every interval while the turn runs elsewhere, until the turn
// has ended and its terminal event is sent, send fails or ctx is done.
func (s *Service) FollowStored(ctx context.Context, userID, turnID string, after int64, interval time.Duration, send func(*ams.TurnEvent) error) error {
	if interval <= 0 {
		interval = 250 * time.Millisecond
	}
	idle := 0
	lastTerminal := false
	for {
		// In this process the run's own log is live.
		if r := s.running(turnID); r != nil && r.Turn.UserID == userID {
			return r.Follow(ctx, after, send)
		}
		t, err := s.Store.FindTurn(ctx, userID, turnID)
		if err != nil {
			return err
		}
		evs, err := s.Store.TurnEvents(ctx, turnID, after, 500)
		if err != nil {
			return err
		}
		for _, e := range evs {
			if err := send(e); err != nil {
				return err
			}
			after = e.Seq
			lastTerminal = Terminal(e.Type)
		}
		if len(evs) == 500 {
			continue
		}
		if t.Status != ams.TurnRunning && t.Status != ams.TurnQueued {
			// Ended: done once its terminal event is read (it is written
			// just after the turn's row), or after a few polls without one
			// (a process that died in between).
			if lastTerminal || idle >= 4 {
				return nil
			}
			idle++
		} else {
			idle = 0
		}
		select {
		case <-time.After(interval):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
