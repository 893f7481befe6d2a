// Package messaging runs a conversation turn: it stores the inbound
// message with a running turn (and the conversation when it is new), asks
// the assistant's engine for a reply, and stores the reply with the turn's
// completion. The turn runs detached from the request that started it,
// under a lease renewed while it runs; its tool calls commit one by one,
// each with the turn's id and its call number, so that a retry resumes it
// without running a committed call again. The HTTP API and the account
// pages both send messages through it.
package messaging

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/testsignal"
	"github.com/amsdev/ams/tracing"
)

// HistoryLength is how many earlier messages of a conversation an engine
// sees.
const HistoryLength = 50

// Service sends messages to assistants.
type Service struct {
	Store Store
	// EngineFor returns the engine that runs the assistant (chosen by its
	// model).
	EngineFor func(a *ams.Assistant) (ams.Engine, error)
	// Tools returns the toolbox an engine may use to act for the user in a
	// conversation; nil means engines may not act.
	Tools func(userID string, a *ams.Assistant, conversationID string) ams.Toolbox
	Clock ams.Clock
	// EngineTimeout bounds one attempt of a turn; 0 means 60 s.
	EngineTimeout time.Duration
	// Lease is how long a turn's lease lasts; it is renewed every third
	// of it while the turn runs. 0 means 30 s.
	Lease time.Duration
	// FlushInterval is how often the turn's new stream events are
	// stored, in one transaction; 0 means 50 ms.
	FlushInterval time.Duration
	// DeferStart is how long a turn sent without Stream may run before
	// its start (the conversation when new, the inbound message with its
	// event, the running turn) is stored. A turn that ends sooner without
	// a tool call is stored whole, in one transaction at its end, with
	// its reply: half the commits of a short turn. A tool call, or the
	// time passing, stores the start first, so that a turn that acts or
	// runs long is visible (and cancellable) while it runs. Until then
	// nobody outside this process can know the turn: its ids reach the
	// client with its answer. 0 means 100 ms; negative stores every
	// start at once.
	DeferStart time.Duration
	// BackgroundTimeout bounds a background turn, from its start to its
	// end, whichever processes run it (ams serve
	// --background-turn-timeout); 0 means 10 minutes.
	BackgroundTimeout time.Duration
	// RequiredActionTimeout is how long a turn waits in requires_action
	// for outputs or approvals; 0 means 10 minutes.
	RequiredActionTimeout time.Duration
	// QueuePoll is how often a send waiting for its queued turn (or a
	// runner) looks at the store for a turn that another process started
	// or ended; 0 means 250 ms. Turns ending in this process wake waiters
	// at once.
	QueuePoll time.Duration
	// RunnerInterval is how often RunTurns looks for abandoned and queued
	// turns to take up; 0 means 1 s.
	RunnerInterval time.Duration
	Logger         *slog.Logger
	// Signals fire for tests (package testsignal); off unless a test
	// turns them on.
	Signals Signals

	mu   sync.Mutex
	runs map[string]*Run // turns running in this process
	// keys is the turns of this process whose start is deferred, by
	// user and idempotency key: a retry of one is in progress here.
	keys map[string]*Run
	// wake is closed (and replaced) whenever a turn run in this process
	// ends: sends waiting for their queued turn look again.
	wake chan struct{}
}

// Signals are the moments of the service that tests wait for.
type Signals struct {
	// TurnEnded fires with a turn's id once a turn run in this process
	// has ended: its end is stored (or could not be) and Wait returns.
	TurnEnded testsignal.Signal[string]
	// FollowerLeft fires with a turn's id when a follower of its events
	// (a stream) left before the end: its context ended.
	FollowerLeft testsignal.Signal[string]
}

func runKey(userID, key string) string { return userID + "\x00" + key }

// SendInput is a message to send.
type SendInput struct {
	AssistantID    string
	Message        string
	ConversationID string // empty: start a new conversation
	// Timezone is the account's IANA time zone ("" is UTC), in which the
	// engine reads dates such as "tomorrow at 9".
	Timezone string
	// Metadata is the inbound message's metadata (ams.MetadataPatch;
	// null or "" values are left out).
	Metadata ams.MetadataPatch
	// IdempotencyKey is the request's Idempotency-Key: a send with the key
	// of an earlier turn (within ams.IdempotencyTTL) replays its reply
	// when it completed, and resumes it when it failed or its process
	// died.
	IdempotencyKey string
	// Stream asks for the reply in the pieces the engine produces (one
	// message.delta event each, stored with the turn's events). Without
	// it the engine is not asked to stream, and the turn's events carry
	// the reply as one delta: a turn nobody watches piece by piece does
	// not store dozens of events (the built-in engine streams word by
	// word). It is not part of what an Idempotency-Key names. It is
	// stored with the turn (ams.Turn.Stream): a queued turn streams once
	// it starts, whichever process starts it.
	Stream bool
	// Background starts the turn and returns at once (Start's Run is not
	// waited for): the turn runs on the server, taken over by another
	// process if this one dies, within Service.BackgroundTimeout.
	Background bool
	// MultitaskStrategy is what the send does when its conversation has
	// an unfinished turn: ams.MultitaskEnqueue, ams.MultitaskReject or
	// ams.MultitaskInterrupt ("": the assistant's, else enqueue).
	MultitaskStrategy string
	// Options are the per-turn options (nil: none), checked by
	// CheckOptions and the engine before anything is stored.
	Options *ams.TurnOptions
}

// Run is a turn running (or just run) in this process.
type Run struct {
	// Turn is the turn as it was when the run started.
	Turn *ams.Turn
	// Replayed is set when the turn had completed before: Reply is its
	// stored reply and nothing runs.
	Replayed bool

	s         *Service
	log       *eventLog
	cancel    context.CancelFunc
	done      chan struct{}
	mu        sync.Mutex
	cancelled bool
	reply     *ams.Message
	err       error
	final     *ams.Turn

	startMu  sync.Mutex
	pending  *ams.Exchange // the turn's start, while it is deferred
	startErr error         // why the deferred start could not be stored

	// queued is set for the Run of a queued turn that Start returns: it
	// waits for the turn to be started (here or elsewhere) and ended.
	queued bool
	// actionIDs are the actions the turn's tool calls returned in this
	// attempt (turnTools), in order; fenced is set when the store said
	// another attempt owns the turn now.
	actionIDs []string
	fenced    bool
	// whole is set when the turn was stored whole at its end (its start
	// deferred): no turn can have queued behind it.
	whole bool
}

// Final returns the turn as stored when the run ended (completed, failed
// or cancelled; for a replay, the turn replayed), or nil when nothing
// of it was stored; valid once Done is closed.
func (r *Run) Final() *ams.Turn {
	<-r.done
	return r.final
}

// storeStart stores the turn's deferred start, if it has not been: before
// a tool call acts, or once the turn has run for DeferStart.
func (r *Run) storeStart(ctx context.Context) error {
	r.startMu.Lock()
	defer r.startMu.Unlock()
	if r.pending == nil {
		return r.startErr
	}
	x := r.pending
	r.pending = nil
	if err := r.s.Store.SaveExchange(ctx, x); err != nil {
		r.startErr = err
		return err
	}
	return nil
}

// stored reports whether the turn is in the store (its start was not
// deferred, or has been stored).
func (r *Run) stored() bool {
	r.startMu.Lock()
	defer r.startMu.Unlock()
	return r.pending == nil && r.startErr == nil
}

// Done is closed when the run has ended.
func (r *Run) Done() <-chan struct{} { return r.done }

// FirstSeq is the number of this attempt's first stream event.
func (r *Run) FirstSeq() int64 {
	if r.log == nil {
		return 0
	}
	return r.log.first
}

// Result returns the reply, or why there is none; valid once Done is
// closed.
func (r *Run) Result() (*ams.Message, error) {
	<-r.done
	return r.reply, r.err
}

// Wait waits for the reply, or until ctx is done (the turn goes on).
func (r *Run) Wait(ctx context.Context) (*ams.Message, error) {
	select {
	case <-r.done:
		return r.reply, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (r *Run) requestCancel() {
	r.mu.Lock()
	r.cancelled = true
	r.mu.Unlock()
	if r.cancel != nil {
		r.cancel()
	}
}

// fence stops a run whose turn is no longer its attempt's (another
// process claimed it, or a newer message interrupted it): what it does
// from now on is not stored.
func (r *Run) fence() {
	r.mu.Lock()
	r.fenced = true
	r.mu.Unlock()
	r.requestCancel()
}

func (r *Run) isFenced() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fenced
}

// addAction records an action of the turn's tool calls.
func (r *Run) addAction(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.actionIDs = append(r.actionIDs, id)
}

func (r *Run) isCancelled() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cancelled
}

// Send delivers in.Message to the user's assistant and returns the stored
// reply: Start, then Wait. When ctx ends first, the turn goes on and its
// reply is stored; Send returns ctx's error.
func (s *Service) Send(ctx context.Context, userID string, in SendInput) (*ams.Message, error) {
	r, err := s.Start(ctx, userID, in)
	if err != nil {
		return nil, err
	}
	return r.Wait(ctx)
}

// Start stores the inbound message with a running turn and starts the
// turn, detached from ctx. Errors (nothing stored): EINVALID for bad
// input, ENOTFOUND (param assistant_id or conversation_id) for an
// assistant or conversation the user does not have; with an idempotency
// key of an earlier turn, ECONFLICT idempotency_key_reused when it asked
// something else, turn_in_progress while it runs elsewhere, turn_cancelled
// when it was cancelled. Once started, the turn's failures (EUPSTREAM
// when the engine fails) come from the Run.
func (s *Service) Start(ctx context.Context, userID string, in SendInput) (*Run, error) {
	if err := CheckContent(in.Message, "message"); err != nil {
		return nil, err
	}
	md, err := in.Metadata.Merge(ams.Metadata{}, "metadata")
	if err != nil {
		return nil, err
	}
	a, err := s.Store.FindAssistant(ctx, userID, in.AssistantID)
	if err != nil {
		return nil, ams.WithParam(err, "assistant_id")
	}
	if in.MultitaskStrategy == "" {
		in.MultitaskStrategy = a.MultitaskStrategy
	}
	if in.MultitaskStrategy, err = CheckStrategy(in.MultitaskStrategy); err != nil {
		return nil, err
	}
	if err := CheckOptions(in.Options, a); err != nil {
		return nil, err
	}
	now := s.Clock.Now()
	hash := RequestHash(in)
	if r, found, err := s.sentBefore(ctx, a, userID, hash, in, now); found || err != nil {
		return r, err
	}
	x := &ams.Exchange{ConversationID: in.ConversationID}
	if in.ConversationID == "" {
		x.NewConversation = &ams.Conversation{
			ID: ams.NewID(ams.PrefixConversation), Object: "conversation", UserID: userID, AssistantID: a.ID,
			Title: Title(in.Message), LastMessageAt: now, CreatedAt: now, UpdatedAt: now,
		}
		x.ConversationID = x.NewConversation.ID
	} else {
		c, err := s.Store.FindConversation(ctx, userID, in.ConversationID)
		if err != nil {
			return nil, ams.WithParam(err, "conversation_id")
		}
		if c.AssistantID != a.ID {
			return nil, ams.ParamError("parameter_invalid", "conversation_id",
				"Conversation '%s' belongs to assistant '%s', not '%s'.", c.ID, c.AssistantID, a.ID)
		}
		// Its history is read once the turn is admitted (begin).
	}
	x.Inbound = &ams.Message{
		ID: ams.NewID(ams.PrefixMessage), Object: "message", UserID: userID, AssistantID: a.ID,
		ConversationID: x.ConversationID, Direction: ams.DirectionInbound, Content: in.Message, Metadata: md,
		CreatedAt: now, UpdatedAt: now,
	}
	return s.begin(ctx, a, x, hash, in, now)
}

// sentBefore answers a send whose idempotency key started a turn
// before (found), in this process or stored: a retry of it.
func (s *Service) sentBefore(ctx context.Context, a *ams.Assistant, userID, hash string, in SendInput, now time.Time) (*Run, bool, error) {
	if in.IdempotencyKey == "" {
		return nil, false, nil
	}
	if r := s.deferredRun(userID, in.IdempotencyKey); r != nil {
		if !ams.SecretsEqual(r.Turn.RequestHash, hash) {
			return nil, true, keyReused(in.IdempotencyKey)
		}
		return nil, true, inProgress(r.Turn.ID)
	}
	t, err := s.Store.FindTurnByKey(ctx, userID, in.IdempotencyKey, now.Add(-ams.IdempotencyTTL))
	if err == nil {
		r, err := s.retry(ctx, a, t, hash, in)
		return r, true, err
	} else if !ams.IsNotFound(err) {
		return nil, true, err
	}
	return nil, false, nil
}

// begin starts the turn of exchange x (its conversation and inbound
// message made): its start is stored first, or deferred (see
// DeferStart) when the reply is not streamed.
func (s *Service) begin(ctx context.Context, a *ams.Assistant, x *ams.Exchange, hash string, in SendInput, now time.Time) (*Run, error) {
	engine, err := s.EngineFor(a)
	if err != nil {
		return nil, err
	}
	if c, ok := engine.(ams.EngineChecker); ok && in.Options != nil {
		if err := c.CheckOptions(turnOptions(a, in.Options)); err != nil {
			return nil, err
		}
	}
	userID := x.Inbound.UserID
	x.Turn = &ams.Turn{ID: ams.NewID(ams.PrefixTurn), Object: "turn", UserID: userID, AssistantID: a.ID, ConversationID: x.ConversationID,
		InboundMessageID: x.Inbound.ID, Status: ams.TurnRunning, IdempotencyKey: in.IdempotencyKey, RequestHash: hash,
		LeaseUntil: now.Add(s.lease()), Attempt: 1, CreatedAt: now, UpdatedAt: now, Request: ams.RequestFrom(ctx),
		Background: in.Background, MultitaskStrategy: in.MultitaskStrategy, Options: in.Options, ActionIDs: []string{}, Stream: in.Stream}
	if in.Background {
		d := now.Add(s.backgroundTimeout())
		x.Turn.Deadline = &d
	}
	x.Events = []*ams.Event{ams.MessageCreatedEvent(x.Inbound)}
	if x.NewConversation != nil {
		x.Events = append([]*ams.Event{ams.ConversationEvent(ams.EventConversationCreated, x.NewConversation, now)}, x.Events...)
	}
	history := []*ams.Message{x.Inbound}
	// A turn in a new conversation may defer its start: nobody else can
	// send to the conversation before it is stored. In an existing one
	// the start is admitted first (AdmitTurn), so that the
	// conversation's turns run one at a time; a background turn is
	// stored at once, for another process to take over.
	if !in.Stream && !in.Background && s.DeferStart >= 0 && x.NewConversation != nil {
		return s.launch(ctx, a, engine, x.Turn, history, in.Timezone, false, false, 0, x), nil
	}
	var cut []*ams.Turn
	if x.NewConversation != nil {
		err = s.Store.SaveExchange(ctx, x)
	} else {
		cut, err = s.Store.AdmitTurn(ctx, x)
	}
	if err == nil {
		s.interrupted(cut)
		if x.Turn.Status == ams.TurnQueued {
			r := s.awaitQueued(ctx, x.Turn, in.Background)
			// The turn before it may have ended while it was admitted.
			go s.advance(context.WithoutCancel(ctx), x.Turn.UserID, x.Turn.ConversationID)
			return r, nil
		}
	}
	if err != nil {
		if in.IdempotencyKey != "" && ams.ErrorKindOf(err) != ams.ENOTFOUND {
			// Another request with the key stored its turn first.
			if t, ferr := s.Store.FindTurnByKey(ctx, userID, in.IdempotencyKey, now.Add(-ams.IdempotencyTTL)); ferr == nil {
				return s.retry(ctx, a, t, hash, in)
			}
		}
		return nil, err
	}
	if x.NewConversation == nil {
		// Read once admitted, when the turns before it have ended: read
		// before, it could miss the reply of a turn that ended meanwhile
		// (the turn then ran at once, not queued, blind to that reply).
		if history, err = s.historyTo(ctx, userID, x.ConversationID, x.Inbound.ID); err != nil {
			s.failTaken(context.WithoutCancel(ctx), x.Turn, err)
			return nil, err
		}
	}
	return s.launch(ctx, a, engine, x.Turn, history, in.Timezone, in.Stream, false, 0, nil), nil
}

// unstored answers a turn whose deferred start could not be stored: when
// another request with the same idempotency key stored its turn first,
// as a retry with the key would be (its reply replayed, or 409 while it
// runs or after it was cancelled or failed); otherwise err (the
// conversation was deleted meanwhile, or the store failed). The turn's
// reply, if any, is dropped: it had no effects (a tool call stores the
// start first).
func (s *Service) unstored(ctx context.Context, t *ams.Turn, err error) (*ams.Message, *ams.Turn, error) {
	if t.IdempotencyKey == "" || ams.ErrorKindOf(err) == ams.ENOTFOUND {
		return nil, nil, err
	}
	other, ferr := s.Store.FindTurnByKey(ctx, t.UserID, t.IdempotencyKey, t.CreatedAt.Add(-ams.IdempotencyTTL))
	if ferr != nil || other.ID == t.ID {
		return nil, nil, err
	}
	if !ams.SecretsEqual(other.RequestHash, t.RequestHash) {
		return nil, nil, keyReused(t.IdempotencyKey)
	}
	switch other.Status {
	case ams.TurnCompleted:
		reply, ferr := s.Store.FindMessage(ctx, other.UserID, other.ReplyMessageID)
		if ferr != nil {
			return nil, nil, ferr
		}
		return reply, other, nil
	case ams.TurnCancelled:
		return nil, nil, keyCancelled(other.ID)
	}
	return nil, nil, inProgress(other.ID)
}

// retry answers a send whose idempotency key started turn t.
func (s *Service) retry(ctx context.Context, a *ams.Assistant, t *ams.Turn, hash string, in SendInput) (*Run, error) {
	if !ams.SecretsEqual(t.RequestHash, hash) {
		return nil, keyReused(in.IdempotencyKey)
	}
	switch t.Status {
	case ams.TurnCompleted:
		reply, err := s.Store.FindMessage(ctx, t.UserID, t.ReplyMessageID)
		if err != nil {
			return nil, err
		}
		r := &Run{Turn: t, Replayed: true, s: s, done: make(chan struct{}), reply: reply, final: t}
		close(r.done)
		return r, nil
	case ams.TurnCancelled:
		return nil, keyCancelled(t.ID)
	case ams.TurnQueued:
		// Still waiting for its turn: this send waits for it too.
		return s.awaitQueued(ctx, t, t.Background), nil
	case ams.TurnRequiresAction:
		r := &Run{Turn: t, Replayed: true, s: s, done: make(chan struct{}), final: t}
		close(r.done)
		return r, nil
	}
	if r := s.running(t.ID); r != nil {
		return nil, inProgress(t.ID)
	}
	engine, err := s.EngineFor(a)
	if err != nil {
		return nil, err
	}
	now := s.Clock.Now()
	claimed, err := s.Store.ClaimTurn(ctx, t.UserID, t.ID, now, now.Add(s.lease()))
	if err != nil {
		if e, ok := err.(*ams.Error); ok && e.Code == "turn_in_progress" {
			return nil, inProgress(t.ID)
		}
		return nil, err
	}
	r, err := s.resume(ctx, a, engine, claimed, in.Timezone, in.Stream, true)
	if err != nil {
		// Not started after all: the attempt fails at once rather than
		// hold its lease with no process running it.
		end := *claimed
		now := s.Clock.Now()
		end.Status, end.Error, end.UpdatedAt, end.CompletedAt = ams.TurnFailed, apiError(err), now, &now
		if ferr := s.Store.FinishTurn(context.WithoutCancel(ctx), &end, nil, nil); ferr != nil {
			s.logger().Warn("fail a turn that could not resume", "turn", t.ID, "err", ferr)
		}
		return nil, err
	}
	return r, nil
}

// resume starts the claimed attempt of turn t: the engine gets the
// conversation up to the turn's inbound message, and the stream goes on
// numbering after the turn's stored events.
func (s *Service) resume(ctx context.Context, a *ams.Assistant, engine ams.Engine, t *ams.Turn, tz string, stream, resumed bool) (*Run, error) {
	history, err := s.historyTo(ctx, t.UserID, t.ConversationID, t.InboundMessageID)
	if err != nil {
		return nil, err
	}
	last, err := s.lastEventSeq(ctx, t.ID)
	if err != nil {
		return nil, err
	}
	t.Request = ams.RequestFrom(ctx)
	return s.launch(ctx, a, engine, t, history, tz, stream, resumed, last, nil), nil
}

// historyTo returns what an engine sees of a conversation for the turn
// whose inbound message is inboundID: the HistoryLength messages before
// it and the message, oldest first.
func (s *Service) historyTo(ctx context.Context, userID, conversationID, inboundID string) ([]*ams.Message, error) {
	history, err := s.Store.RecentMessages(ctx, userID, conversationID, HistoryLength+1)
	if err != nil {
		return nil, err
	}
	cut := -1
	for i, m := range history {
		if m.ID == inboundID {
			cut = i
		}
	}
	if cut < 0 {
		m, err := s.Store.FindMessage(ctx, userID, inboundID)
		if err != nil {
			return nil, err
		}
		return []*ams.Message{m}, nil
	}
	return history[max(0, cut+1-HistoryLength-1) : cut+1], nil
}

// keyReused answers a send whose idempotency key named another message.
func keyReused(key string) error {
	return ams.Errorf(ams.ECONFLICT, "idempotency_key_reused",
		"Idempotency-Key '%s' was used with another message; use a new key for a new message.", key)
}

// keyCancelled answers a send whose idempotency key's turn was cancelled.
func keyCancelled(id string) error {
	return ams.Errorf(ams.ECONFLICT, "turn_cancelled", "Turn '%s' of this Idempotency-Key was cancelled; send the message again with a new key.", id)
}

func inProgress(id string) error {
	return ams.Errorf(ams.ECONFLICT, "turn_in_progress",
		"Turn '%s' of this Idempotency-Key is still running; follow it with GET /v1/turns/%s/events or retry later.", id, id)
}

// lastEventSeq returns the number of a turn's last stored stream event.
func (s *Service) lastEventSeq(ctx context.Context, turnID string) (int64, error) {
	var last int64
	for {
		evs, err := s.Store.TurnEvents(ctx, turnID, last, 1000)
		if err != nil {
			return 0, err
		}
		if len(evs) == 0 {
			return last, nil
		}
		last = evs[len(evs)-1].Seq
	}
}

// RequestHash identifies what a send asks (assistant, conversation and
// message), for its idempotency key: a retry must ask the same.
func RequestHash(in SendInput) string {
	h := sha256.New()
	h.Write([]byte(in.AssistantID + "\x00" + in.ConversationID + "\x00" + in.Message))
	// What only the new options ask is added when they are given, so
	// that a send without them keeps the hash it always had.
	if in.Background || in.Options != nil {
		b, _ := json.Marshal(struct {
			Background bool             `json:"background"`
			Options    *ams.TurnOptions `json:"options"`
		}{in.Background, in.Options})
		h.Write([]byte{0})
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (s *Service) deferStart() time.Duration {
	if s.DeferStart > 0 {
		return s.DeferStart
	}
	return 100 * time.Millisecond
}

func (s *Service) backgroundTimeout() time.Duration {
	if s.BackgroundTimeout > 0 {
		return s.BackgroundTimeout
	}
	return 10 * time.Minute
}

func (s *Service) requiredActionTimeout() time.Duration {
	if s.RequiredActionTimeout > 0 {
		return s.RequiredActionTimeout
	}
	return 10 * time.Minute
}

func (s *Service) queuePoll() time.Duration {
	if s.QueuePoll > 0 {
		return s.QueuePoll
	}
	return 250 * time.Millisecond
}

func (s *Service) lease() time.Duration {
	if s.Lease > 0 {
		return s.Lease
	}
	return 30 * time.Second
}

func (s *Service) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

// deferredRun returns the turn of this process whose start, deferred,
// holds the user's idempotency key, if any.
func (s *Service) deferredRun(userID, key string) *Run {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys[runKey(userID, key)]
}

// running returns the run of a turn in this process, if any.
func (s *Service) running(turnID string) *Run {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs[turnID]
}

// launch starts turn t in the background, detached from the request
// (parent) that began it.
// pending is the turn's start when it is deferred (not stored yet).
func (s *Service) launch(parent context.Context, a *ams.Assistant, engine ams.Engine, t *ams.Turn, history []*ams.Message, tz string, stream, resumed bool, lastSeq int64,
	pending *ams.Exchange) *Run {
	timeout := s.EngineTimeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	// Only the request's span (the parent of the turn's) is kept of parent.
	base := ams.WithRequest(tracing.Detach(parent), t.Request)
	ctx, cancel := context.WithTimeout(base, timeout)
	if t.Background && t.Deadline != nil {
		// A background turn is bounded by its deadline (on the service's
		// clock), not one reply's time.
		ctx, cancel = context.WithTimeout(base, t.Deadline.Sub(s.Clock.Now()))
	}
	r := &Run{Turn: t, s: s, cancel: cancel, done: make(chan struct{}), pending: pending,
		log: newEventLog(s.Store, s.Clock, s.logger(), t.ID, lastSeq)}
	s.mu.Lock()
	if s.runs == nil {
		s.runs = map[string]*Run{}
	}
	s.runs[t.ID] = r
	if pending != nil && t.IdempotencyKey != "" {
		if s.keys == nil {
			s.keys = map[string]*Run{}
		}
		s.keys[runKey(t.UserID, t.IdempotencyKey)] = r
	}
	s.mu.Unlock()
	r.log.emit(EventTurnStarted, TurnStartedData{TurnID: t.ID, InboundMessageID: t.InboundMessageID, ConversationID: t.ConversationID,
		AssistantID: t.AssistantID, Resumed: resumed})
	loc := time.UTC
	if tz != "" {
		if l, err := time.LoadLocation(tz); err == nil {
			loc = l
		}
	}
	req := &ams.EngineRequest{Assistant: a, History: history, Now: s.Clock.Now(), Location: loc, Options: turnOptions(a, t.Options), Calls: t.Calls,
		NeedsApproval: needsApproval(a)}
	if stream {
		req.Stream = func(d string) error { r.log.addDelta(d); return nil }
	}
	if s.Tools != nil {
		if tb := s.Tools(t.UserID, a, t.ConversationID); tb != nil {
			// Calls number on from the turn's earlier ones (required.go).
			req.Tools = &turnTools{inner: tb, r: r, n: len(t.Calls)}
			req.NeedsApproval = withToolboxApproval(req.NeedsApproval, tb)
		}
	}
	go s.run(ctx, r, engine, req)
	return r
}

// renew extends the turn's lease; a cancel asked through the store (by
// another process) cancels the run.
func (r *Run) renew(ctx context.Context) {
	s := r.s
	if !r.stored() {
		return // nothing to renew yet (or ever)
	}
	now := s.Clock.Now()
	cancel, err := s.Store.RenewTurn(ctx, r.Turn.UserID, r.Turn.ID, r.Turn.Attempt, now.Add(s.lease()))
	if err != nil {
		if ams.ErrorKindOf(err) == ams.ECONFLICT {
			// Another process took the turn over, or a newer message
			// interrupted it: this attempt stops.
			r.fence()
			return
		}
		s.logger().Warn("renew turn lease", "turn", r.Turn.ID, "err", err)
		return
	}
	if cancel {
		r.requestCancel()
	}
}

// reply runs the engine and checks its answer. A turn with pending
// client calls (ams.PendingCalls: made in a round that asked for
// approvals first) stops for their outputs without asking the engine.
func (s *Service) reply(ctx context.Context, r *Run, engine ams.Engine, req *ams.EngineRequest) (*ams.Reply, error) {
	if pending := ams.PendingCalls(req.Calls); len(pending) > 0 {
		return &ams.Reply{StopReason: ams.StopRequiresAction, Calls: req.Calls,
			RequiredAction: &ams.RequiredAction{Type: ams.RequiredSubmitToolOutputs, ToolCalls: pending}}, nil
	}
	reply, err := engine.Reply(ctx, req)
	if err != nil {
		var ae *ams.Error
		if errors.As(err, &ae) {
			return nil, ae
		}
		return nil, &ams.Error{Kind: ams.EUPSTREAM, Code: "engine_error",
			Message: fmt.Sprintf("The assistant's engine could not reply: %s", engineReason(err))}
	}
	if reply.RequiredAction == nil && strings.TrimSpace(reply.Content) == "" {
		return nil, &ams.Error{Kind: ams.EUPSTREAM, Code: "engine_error", Message: "The assistant's engine returned an empty reply."}
	}
	return reply, nil
}

// apiError is err as the API's error body: the message of an *ams.Error
// of a client-facing kind, a generic text otherwise.
func apiError(err error) *ams.ActionError {
	if e := ams.ActionErrorOf(err); e != nil && ams.ErrorKindOf(err) != ams.EINTERNAL {
		return e
	}
	return &ams.ActionError{Type: ams.TypeAPI, Code: "internal_error", Message: "The turn could not be stored; retry with the same Idempotency-Key."}
}

// engineReason says why an engine failed without exposing internal text:
// only a timeout is named.
func engineReason(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "it did not answer in time."
	}
	return "it failed."
}

// Title returns a conversation title from its first message: the first
// line, at most 80 characters.
func Title(msg string) string {
	line := strings.TrimSpace(msg)
	if i := strings.IndexAny(line, "\r\n"); i >= 0 {
		line = strings.TrimSpace(line[:i])
	}
	if utf8.RuneCountInString(line) <= 80 {
		return line
	}
	r := []rune(line)
	return strings.TrimSpace(string(r[:79])) + "…"
}
