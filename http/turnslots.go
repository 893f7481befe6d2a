package http

import (
	"context"
	"net/http"
	"sync"

	"github.com/amsdev/ams"
)

// DefaultMaxConcurrentTurns is how many turns and streams one account may
// have in flight in one process unless Server.MaxConcurrentTurns (ams
// serve --max-concurrent-turns-per-account) says otherwise.
const DefaultMaxConcurrentTurns = 10

// TurnRetryAfter is the Retry-After, in seconds, of a request refused for
// the account's concurrent turns: turns end within seconds.
const TurnRetryAfter = "1"

// turnSlots counts each account's requests that hold a turn or a stream
// open in this process: POST /v1/messages (answered at the reply, or
// streamed) and GET /v1/turns/{id}/events. The cap protects the process
// (an engine call, a connection and a goroutine each), so it is counted
// per process, in memory, not across processes as the rate limits are;
// the rate limits bound how fast an account starts them, this how many it
// holds at once.
type turnSlots struct {
	mu sync.Mutex
	n  map[string]int
}

// take reserves a slot of account when fewer than max are taken, and
// returns its release; ok is false when the account holds max already.
func (t *turnSlots) take(account string, max int) (release func(), ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n[account] >= max {
		return nil, false
	}
	if t.n == nil {
		t.n = map[string]int{}
	}
	t.n[account]++
	var once sync.Once
	return func() {
		once.Do(func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			if t.n[account]--; t.n[account] <= 0 {
				delete(t.n, account)
			}
		})
	}, true
}

// maxTurns is the server's cap on an account's concurrent turns and
// streams.
func (s *Server) maxTurns() int {
	if s.MaxConcurrentTurns > 0 {
		return s.MaxConcurrentTurns
	}
	return DefaultMaxConcurrentTurns
}

// withTurnSlot runs h while holding one of the account's turn slots;
// when the account holds them all it answers 429
// concurrent_turns_exceeded with Retry-After, and h does not run. The
// slot is released when h returns, unless h handed it to a turn that
// runs on after the request (keepTurnSlot).
func (s *Server) withTurnSlot(h func(http.ResponseWriter, *http.Request) error) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		max := s.maxTurns()
		release, ok := s.turns.take(auth(r).User.ID, max)
		if !ok {
			w.Header().Set("Retry-After", TurnRetryAfter)
			return ams.Errorf(ams.ERATELIMIT, "concurrent_turns_exceeded",
				"This account already has %d turns or streams in progress, the most it may have at once. Retry when one ends.", max)
		}
		slot := &heldSlot{release: release}
		defer slot.requestDone()
		return h(w, r.WithContext(context.WithValue(r.Context(), heldSlotKey{}, slot)))
	}
}

// heldSlot is the turn slot a request holds (withTurnSlot).
type heldSlot struct {
	release func()
	mu      sync.Mutex
	kept    bool
}

type heldSlotKey struct{}

// requestDone releases the slot when the request ends, unless it was
// kept for a turn that runs on.
func (h *heldSlot) requestDone() {
	h.mu.Lock()
	kept := h.kept
	h.mu.Unlock()
	if !kept {
		h.release()
	}
}

// keepTurnSlot keeps the turn slot the request holds until done is
// closed, beyond the request: a background turn, answered 202 at once,
// counts against its account's concurrent turns (MaxConcurrentTurns) for
// as long as it runs in this process, as a turn answered at its reply
// does. A request without a slot keeps nothing.
func keepTurnSlot(r *http.Request, done <-chan struct{}) {
	h, _ := r.Context().Value(heldSlotKey{}).(*heldSlot)
	if h == nil {
		return
	}
	h.mu.Lock()
	if h.kept {
		h.mu.Unlock()
		return
	}
	h.kept = true
	h.mu.Unlock()
	go func() {
		<-done
		h.release()
	}()
}
