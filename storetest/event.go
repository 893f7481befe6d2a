package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/wait"
)

// testEventsCatchUp checks the catch-up guarantee of GET /v1/events: a
// reader that follows ListEvents in ascending order with after= the last
// id it saw never skips an event, even when transactions commit in
// another order than they inserted. Eight writers emit events inside
// transactions that sleep a random few milliseconds after inserting, so
// that a transaction that inserted first (a lower seq) often commits
// after one that inserted later; the reader follows the list meanwhile and
// must end with every event exactly once.
func testEventsCatchUp(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u := mustUser(t, s, "catchup@example.com")
	const writers, txs, perTx = 8, 25, 2
	var (
		mu      sync.Mutex
		emitted = map[string]bool{}
		done    atomic.Bool
		wg      sync.WaitGroup
		errs    = make(chan error, writers)
	)
	for w := range writers {
		wg.Go(func() {
			for i := range txs {
				var ids []string
				err := s.Update(ctx, func(tx ams.Tx) error {
					ids = ids[:0]
					for j := range perTx {
						e := &ams.Event{ID: ams.NewID(ams.PrefixEvent), Object: "event", UserID: u.ID, Type: ams.EventTaskCreated,
							CreatedAt: t0, Data: map[string]any{"writer": w, "tx": i, "n": j}}
						if err := tx.Emit(ctx, e); err != nil {
							return err
						}
						ids = append(ids, e.ID)
					}
					// Hold the transaction open after inserting: a
					// later insert of another writer may commit first.
					time.Sleep(time.Duration(rand.IntN(20_000)) * time.Microsecond)
					return nil
				})
				if err != nil {
					errs <- fmt.Errorf("writer %d, tx %d: %w", w, i, err)
					return
				}
				mu.Lock()
				for _, id := range ids {
					emitted[id] = true
				}
				mu.Unlock()
			}
		})
	}
	go func() { wg.Wait(); done.Store(true) }()

	seen := map[string]int{}
	var order []string
	after := ""
	// Until gives up after a minute: a skipped event never appears after
	// the cursor (the checks below tell which).
	wait.Until(func() bool {
		finished := done.Load() // before the read: a read after the last commit
		pg, err := s.ListEvents(ctx, u.ID, ams.EventFilter{}, ams.ListParams{Limit: 50, Order: ams.OrderAsc, After: after})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range pg.Data {
			seen[e.ID]++
			order = append(order, e.ID)
			after = e.ID
		}
		return finished && len(pg.Data) == 0 && len(seen) >= writers*txs*perTx
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var missing, twice int
	for id := range emitted {
		switch seen[id] {
		case 0:
			missing++
		case 1:
		default:
			twice++
		}
	}
	if len(emitted) != writers*txs*perTx {
		t.Fatalf("%d events emitted, want %d", len(emitted), writers*txs*perTx)
	}
	if missing > 0 || twice > 0 || len(seen) != len(emitted) {
		t.Fatalf("the reader following after= saw %d of %d events: %d skipped, %d seen more than once, %d unknown",
			len(seen), len(emitted), missing, twice, len(seen)-len(emitted)+missing)
	}
	// The order the reader followed is the list's order, read at once.
	all, err := s.ListEvents(ctx, u.ID, ams.EventFilter{}, ams.ListParams{Limit: 100, Order: ams.OrderAsc})
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range all.Data {
		if order[i] != e.ID {
			t.Fatalf("event %d of the list is %s, the reader saw %s there", i, e.ID, order[i])
		}
	}
}

// testEventFilters checks FindEvent's scoping and ListEvents' filters:
// type, created_after and created_before (strict, to the millisecond,
// with sub-millisecond bounds rounded the right way), together and with
// cursors.
func testEventFilters(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u, other := mustUser(t, s, "evf@example.com"), mustUser(t, s, "evf2@example.com")
	types := []string{ams.EventTaskCreated, ams.EventTaskUpdated}
	var evs []*ams.Event // one a second from t0, types alternating
	for i := range 6 {
		e := &ams.Event{ID: ams.NewID(ams.PrefixEvent), Object: "event", UserID: u.ID, Type: types[i%2],
			CreatedAt: t0.Add(time.Duration(i) * time.Second), Data: map[string]any{"i": float64(i)}}
		if err := s.Emit(ctx, e); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, e)
	}
	theirs := &ams.Event{ID: ams.NewID(ams.PrefixEvent), Object: "event", UserID: other.ID, Type: ams.EventTaskCreated, CreatedAt: t0.Add(time.Second), Data: map[string]any{}}
	if err := s.Emit(ctx, theirs); err != nil {
		t.Fatal(err)
	}

	// FindEvent: the user's own only.
	got, err := s.FindEvent(ctx, u.ID, evs[2].ID)
	if err != nil || got.ID != evs[2].ID || got.Type != ams.EventTaskCreated || !got.CreatedAt.Equal(evs[2].CreatedAt) || got.Data["i"] != float64(2) || got.Object != "event" {
		t.Fatalf("find event: %+v %v", got, err)
	}
	if _, err := s.FindEvent(ctx, other.ID, evs[2].ID); !ams.IsNotFound(err) {
		t.Fatalf("another account's event found: %v", err)
	}
	if _, err := s.FindEvent(ctx, u.ID, theirs.ID); !ams.IsNotFound(err) {
		t.Fatalf("another account's event found: %v", err)
	}
	if _, err := s.FindEvent(ctx, u.ID, "evt_nothere"); !ams.IsNotFound(err) {
		t.Fatalf("unknown event: %v", err)
	}

	at := func(sec float64) *time.Time {
		v := t0.Add(time.Duration(sec * float64(time.Second)))
		return &v
	}
	ids := func(idx ...int) string {
		var out []string
		for _, i := range idx {
			out = append(out, evs[i].ID)
		}
		return fmt.Sprint(out)
	}
	SettleEvents(t, s)
	for _, tc := range []struct {
		name string
		f    ams.EventFilter
		p    ams.ListParams
		want string
	}{
		{"after", ams.EventFilter{CreatedAfter: at(3)}, ams.ListParams{}, ids(4, 5)},
		{"before", ams.EventFilter{CreatedBefore: at(2)}, ams.ListParams{}, ids(0, 1)},
		{"between", ams.EventFilter{CreatedAfter: at(0), CreatedBefore: at(5)}, ams.ListParams{}, ids(1, 2, 3, 4)},
		{"empty range", ams.EventFilter{CreatedAfter: at(3), CreatedBefore: at(3)}, ams.ListParams{}, ids()},
		{"with type", ams.EventFilter{Type: ams.EventTaskUpdated, CreatedAfter: at(1)}, ams.ListParams{}, ids(3, 5)},
		{"sub-ms after", ams.EventFilter{CreatedAfter: at(0.9995)}, ams.ListParams{}, ids(1, 2, 3, 4, 5)},
		{"sub-ms after, rounded down", ams.EventFilter{CreatedAfter: at(1.0005)}, ams.ListParams{}, ids(2, 3, 4, 5)},
		{"sub-ms before, rounded up", ams.EventFilter{CreatedBefore: at(1.0005)}, ams.ListParams{}, ids(0, 1)},
		{"sub-ms before", ams.EventFilter{CreatedBefore: at(0.9995)}, ams.ListParams{}, ids(0)},
		{"desc", ams.EventFilter{CreatedAfter: at(2)}, ams.ListParams{Order: ams.OrderDesc}, ids(5, 4, 3)},
		{"after cursor", ams.EventFilter{CreatedBefore: at(5)}, ams.ListParams{After: evs[1].ID, Limit: 2}, ids(2, 3)},
		{"before cursor", ams.EventFilter{CreatedAfter: at(0)}, ams.ListParams{Before: evs[4].ID, Limit: 2}, ids(2, 3)},
		{"type and cursor", ams.EventFilter{Type: ams.EventTaskCreated, CreatedAfter: at(0)}, ams.ListParams{After: evs[2].ID}, ids(4)},
	} {
		p := tc.p
		if p.Order == "" {
			p.Order = ams.OrderAsc
		}
		if p.Limit == 0 {
			p.Limit = 10
		}
		pg, err := s.ListEvents(ctx, u.ID, tc.f, p)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var got []string
		for _, e := range pg.Data {
			got = append(got, e.ID)
		}
		if fmt.Sprint(got) != tc.want {
			t.Errorf("%s: got %v, want %s", tc.name, got, tc.want)
		}
	}
	// A cursor outside the filtered list is refused, as with type.
	_, err = s.ListEvents(ctx, u.ID, ams.EventFilter{CreatedAfter: at(3)}, ams.ListParams{Limit: 10, After: evs[1].ID})
	wantKind(t, err, ams.EINVALID)
	_, err = s.ListEvents(ctx, u.ID, ams.EventFilter{}, ams.ListParams{Limit: 10, After: theirs.ID})
	wantKind(t, err, ams.EINVALID)
}

// testEventsOrder checks the catch-up order of two overlapping
// transactions. B writes first (on PostgreSQL it takes the lower
// transaction id) but emits its event last; A emits and commits in
// between. Where A can commit while B runs (PostgreSQL), A's event is not
// listed until B has ended, though FindEvent and a cursor see it; in the
// end B's event comes first on every engine: on PostgreSQL by transaction
// id although A's seq is lower, on SQLite because its single writer made
// A wait for B.
func testEventsOrder(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u := mustUser(t, s, "evorder@example.com")
	newEvent := func(typ string) *ams.Event {
		return &ams.Event{ID: ams.NewID(ams.PrefixEvent), Object: "event", UserID: u.ID, Type: typ, CreatedAt: t0, Data: map[string]any{}}
	}
	eA, eB := newEvent(ams.EventTaskCreated), newEvent(ams.EventTaskUpdated)
	bWrote, release, bDone := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		bDone <- s.Update(ctx, func(tx ams.Tx) error {
			if err := tx.CreateAssistant(ctx, &ams.Assistant{ID: ams.NewID(ams.PrefixAssistant), Object: "assistant", UserID: u.ID, Name: "B",
				Model: ams.ModelBuiltin, CreatedAt: t0, UpdatedAt: t0}); err != nil {
				return err
			}
			close(bWrote)
			<-release
			return tx.Emit(ctx, eB)
		})
	}()
	var releaseOnce sync.Once
	releaseB := func() { releaseOnce.Do(func() { close(release) }) }
	defer releaseB() // on a failure too: B must not hold its transaction forever
	<-bWrote
	aDone := make(chan error, 1)
	go func() { aDone <- s.Update(ctx, func(tx ams.Tx) error { return tx.Emit(ctx, eA) }) }()
	var aErr error
	aFirst := false
	select {
	case aErr = <-aDone:
		aFirst = true
	case <-time.After(300 * time.Millisecond): // one writer: A waits for B
	}
	t.Logf("A committed while B ran: %v", aFirst)
	if aFirst {
		if aErr != nil {
			t.Fatal(aErr)
		}
		if _, err := s.FindEvent(ctx, u.ID, eA.ID); err != nil {
			t.Fatalf("a committed event is not found: %v", err)
		}
		pg, err := s.ListEvents(ctx, u.ID, ams.EventFilter{}, ams.ListParams{Limit: 10, Order: ams.OrderAsc})
		if err != nil || len(pg.Data) != 0 {
			t.Fatalf("an event listed while an older transaction runs: %v %v", pg, err)
		}
		pg, err = s.ListEvents(ctx, u.ID, ams.EventFilter{}, ams.ListParams{Limit: 10, Order: ams.OrderAsc, After: eA.ID})
		if err != nil || len(pg.Data) != 0 {
			t.Fatalf("after a held-back event: %v %v", pg, err)
		}
	}
	releaseB()
	if err := <-bDone; err != nil {
		t.Fatal(err)
	}
	if !aFirst {
		if err := <-aDone; err != nil {
			t.Fatal(err)
		}
	}
	SettleEvents(t, s)
	for _, tc := range []struct {
		p    ams.ListParams
		want []*ams.Event
	}{
		{ams.ListParams{Limit: 10, Order: ams.OrderAsc}, []*ams.Event{eB, eA}},
		{ams.ListParams{Limit: 10}, []*ams.Event{eA, eB}},
		{ams.ListParams{Limit: 10, Order: ams.OrderAsc, After: eB.ID}, []*ams.Event{eA}},
		{ams.ListParams{Limit: 10, Order: ams.OrderAsc, Before: eA.ID}, []*ams.Event{eB}},
		{ams.ListParams{Limit: 1, Order: ams.OrderAsc}, []*ams.Event{eB}},
		{ams.ListParams{Limit: 10, After: eA.ID}, []*ams.Event{eB}},
	} {
		pg, err := s.ListEvents(ctx, u.ID, ams.EventFilter{}, tc.p)
		if err != nil {
			t.Fatal(err)
		}
		var got, want []string
		for _, e := range pg.Data {
			got = append(got, e.ID)
		}
		for _, e := range tc.want {
			want = append(want, e.ID)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%+v: got %v, want %v (B %s, A %s)", tc.p, got, want, eB.ID, eA.ID)
		}
	}
}

// settleUsers holds, per store, the account whose events SettleEvents
// emits.
var settleUsers sync.Map // ams.Store -> user id

// SettleEvents waits until every event committed before it was called can
// be listed by ListEvents. A list holds back the events that a transaction
// still running could precede (on PostgreSQL: while any transaction with a
// smaller id runs, even another database's), so a test that lists what it
// has just written calls this first. It emits an event for an account of
// its own (created on first use; no webhooks, so no deliveries) and waits
// until that account's list shows it: every transaction that committed
// before it has a smaller id, and has ended.
func SettleEvents(t testing.TB, s ams.Store) {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	v, ok := settleUsers.Load(s)
	if !ok {
		id := ams.NewID(ams.PrefixUser)
		u := &ams.User{ID: id, Email: "settle-" + strings.ToLower(id) + "@example.com", Plan: ams.PlanStandard, Timezone: "UTC",
			CreatedAt: now, UpdatedAt: now, ApprovedAt: &now}
		if err := s.CreateUser(ctx, u); err != nil {
			t.Fatalf("settle events: create user: %v", err)
		}
		v, _ = settleUsers.LoadOrStore(s, id)
	}
	userID := v.(string)
	e := &ams.Event{ID: ams.NewID(ams.PrefixEvent), Object: "event", UserID: userID, Type: ams.EventWebhookPing, CreatedAt: now, Data: map[string]any{}}
	if err := s.Emit(ctx, e); err != nil {
		t.Fatalf("settle events: emit: %v", err)
	}
	wait.Eventually(t, "settle events: an event emitted to be listed (a transaction of the database server runs that long?)", func() bool {
		pg, err := s.ListEvents(ctx, userID, ams.EventFilter{}, ams.ListParams{Limit: 1})
		if err != nil {
			t.Fatalf("settle events: %v", err)
		}
		return len(pg.Data) == 1 && pg.Data[0].ID == e.ID
	})
}

// listEvents is s.ListEvents once every event committed so far can be
// listed (SettleEvents).
func listEvents(t testing.TB, s ams.Store, ctx context.Context, userID string, f ams.EventFilter, p ams.ListParams) (*ams.Page[*ams.Event], error) {
	t.Helper()
	SettleEvents(t, s)
	return s.ListEvents(ctx, userID, f, p)
}
