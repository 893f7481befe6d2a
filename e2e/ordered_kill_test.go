//go:build linux

package e2e

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/amsdev/ams/internal/testing/wait"
)

// The kill -9 test of ordered webhooks (issue 31, point 1). Its
// identifiers start with ok.
const (
	okEvents = 60 // tasks created, one task.created event each
	// okHoldAt is the number of first successful arrivals after which the
	// receiver holds the next delivery (one whose sender it can tell) and
	// the test kills the process that sent it.
	okHoldAt = 20
	okLease  = 6 * time.Second // --webhook-lease: the shortest above the 5 s delivery timeout
	// okRetries: a failed attempt is retried 50 ms later, so that the
	// receiver's failures hold the events behind them without the test
	// waiting a minute each.
	okRetries = "0s,50ms,50ms,50ms,50ms"
	// okFail is the share of events whose first attempt the receiver
	// answers 500 (never a second one: every event arrives).
	okFail = 0.2
	// okHoldMax bounds how long the receiver holds the delivery waiting
	// for its sender's death (the kill comes at once: only a broken test
	// reaches it).
	okHoldMax = 30 * time.Second
)

// TestOrderedWebhookKillNine: an ordered webhook keeps its order, and its
// one delivery in flight, across a kill -9 of the process delivering.
//
// On PostgreSQL three `ams serve` processes share one schema; on SQLite,
// whose store one process owns, one process runs, is killed and a new one
// starts on its data directory. The test creates 60 tasks through the
// API, one after the other (each request answered before the next is
// sent), over the live processes in turn: the event log's order of their
// task.created events (GET /v1/events?order=asc) is their creation order,
// which the test checks first. An ordered webhook subscribed to
// task.created points at a receiver that answers 500 to the first attempt
// of about one event in five (retried 50 ms later) and 200 otherwise.
// After 20 events have arrived, the receiver holds the next delivery (it
// does not answer) and signals which process sent it; the test kills that
// process with SIGKILL while the delivery is held, then (SQLite) starts a
// new process. The held delivery was never answered, so its job stays
// pending under the dead process's lease (--webhook-lease 6s); when the
// lease runs out a live process delivers it again, and the rest follow.
//
// It then requires, of the arrivals in the order the receiver got them:
//
//  1. each is of the event next in the log's order after the last event
//     that succeeded (its own retry or redelivery, or the next event): so
//     the first successful arrivals are exactly the log's order, a failed
//     event holds the ones behind it until it succeeds, and every event
//     arrives;
//  2. never two at once: the receiver's handlers never overlap;
//  3. the only arrival of an event beyond its deliberate failures and its
//     success is the held one, in flight at the kill and delivered again
//     (at-least-once: exactly one duplicate, which the test counts and
//     logs);
//  4. every signature is valid.
//
// It takes about 6 s (the lease) plus the deliveries: 15–40 s per engine
// on a loaded machine.
// The PostgreSQL half needs AMS_TEST_DATABASE_URL.
func TestOrderedWebhookKillNine(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) { orderedKillNine(t, engine) })
	}
}

func orderedKillNine(t *testing.T, engine string) {
	bin := amsBinary(t)
	flags := []string{"--webhook-lease", okLease.String(), "--webhook-retry-schedule", okRetries}
	var env []string
	var key, asst string
	nprocs := 1
	if engine == "postgres" {
		dbURL := os.Getenv("AMS_TEST_DATABASE_URL")
		if dbURL == "" {
			t.Skip("AMS_TEST_DATABASE_URL is not set: the PostgreSQL half is skipped (CI sets it, e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable)")
		}
		env = mpEnv(mpSchema(t, dbURL), mpSecretKey())
		key, asst = mpAccount(t, bin, env, "ordered@example.com")
		nprocs = 3
	} else {
		dir := t.TempDir()
		env = append(mpEnv("", mpSecretKey()), "AMS_DATA_DIR="+dir)
		key, asst = mpAccountIn(t, bin, env, dir, "ordered@example.com")
	}
	rec := newOKReceiver(t)
	procs := make([]*mpProc, nprocs)
	for i := range procs {
		procs[i] = mpStart(t, bin, env, i, flags...)
	}
	pidsOf := func() []int {
		var pids []int
		for _, p := range procs {
			pids = append(pids, p.cmd.Process.Pid)
		}
		return pids
	}
	rec.owners.setPIDs(pidsOf())
	began := time.Now()
	api := &mpAPI{key: key, c: &http.Client{Timeout: 30 * time.Second}}
	t.Cleanup(api.c.CloseIdleConnections)

	var wh struct {
		ID      string
		Ordered bool
	}
	body := fmt.Sprintf(`{"url":%q,"events":["task.created"],"secret":%q,"ordered":true}`, rec.url, mpSecret)
	if err := api.do("POST", procs[0].base+"/v1/webhooks", body, 201, &wh); err != nil {
		t.Fatal(err)
	}
	if !wh.Ordered {
		t.Fatalf("webhook %s is not ordered", wh.ID)
	}

	// The tasks, one request at a time, over the live processes in turn.
	// live is what the kill changes: it takes the lock, so that no
	// request is cut by it (a cut request would leave it unknown whether
	// its task was made).
	var live sync.Mutex
	created := make([]string, 0, okEvents) // task ids in creation order
	createErr := make(chan error, 1)
	go func() {
		for i := range okEvents {
			live.Lock()
			p := procs[i%len(procs)]
			var task struct{ ID string }
			err := api.do("POST", p.base+"/v1/tasks", fmt.Sprintf(`{"assistant_id":%q,"title":"ordered %d"}`, asst, i), 201, &task)
			if err == nil {
				created = append(created, task.ID)
			}
			live.Unlock()
			if err != nil {
				createErr <- fmt.Errorf("task %d: %w", i, err)
				return
			}
		}
		createErr <- nil
	}()

	// The kill: as soon as the receiver holds a delivery, its sender dies.
	var victim int
	var killedAt time.Time
	createDone := createErr
	holdDeadline := time.After(60 * time.Second)
	var pid int
	for pid == 0 {
		select {
		case pid = <-rec.heldBy:
		case err := <-createDone:
			if err != nil {
				t.Fatal(err)
			}
			createDone = nil // every task made: wait for the hold only
		case <-holdDeadline:
			t.Fatalf("no delivery was held for the kill within 60 s (%d arrivals)\n%s", len(rec.snapshot()), mpLogs(procs))
		}
	}
	{
		live.Lock()
		for i, p := range procs {
			if p.cmd.Process.Pid == pid {
				victim = i
			}
		}
		v := procs[victim]
		if v.cmd.Process.Pid != pid {
			live.Unlock()
			t.Fatalf("the held delivery came from pid %d, not an ams process (%v)", pid, pidsOf())
		}
		if err := v.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-v.done
		rec.release()
		if engine == "sqlite" {
			procs[victim] = mpStart(t, bin, env, len(procs), flags...)
		} else {
			procs = slices.Delete(procs, victim, victim+1)
		}
		rec.owners.setPIDs(pidsOf())
		live.Unlock()
		killedAt = time.Now()
		t.Logf("killed process %d (pid %d) %s after the start, while the receiver held its delivery of event %s", victim, pid,
			killedAt.Sub(began).Round(time.Millisecond), rec.heldEvent())
	}
	if createDone != nil {
		if err := <-createDone; err != nil {
			t.Fatal(err)
		}
	}

	// The log's order of the task.created events, read as a catch-up
	// reader does (an event is listed once no older transaction runs).
	var logOrder []string // event ids
	logTask := map[string]string{}
	if !wait.Until(func() bool {
		logOrder, logTask = nil, map[string]string{}
		after := ""
		for {
			var page struct {
				Data []struct {
					ID   string
					Data struct{ ID string }
				}
				HasMore bool `json:"has_more"`
			}
			if err := api.do("GET", procs[0].base+"/v1/events?type=task.created&order=asc&limit=100"+after, "", 200, &page); err != nil {
				t.Fatal(err)
			}
			for _, e := range page.Data {
				logOrder = append(logOrder, e.ID)
				logTask[e.ID] = e.Data.ID
			}
			if !page.HasMore || len(page.Data) == 0 {
				return len(logOrder) == okEvents
			}
			after = "&after=" + page.Data[len(page.Data)-1].ID
		}
	}) {
		t.Fatalf("%d task.created events listed, want %d", len(logOrder), okEvents)
	}
	for i, e := range logOrder {
		if logTask[e] != created[i] {
			t.Fatalf("the log's event %d (%s) is of task %s; the test created %s %d-th", i, e, logTask[e], created[i], i)
		}
	}

	// Every event's success, then an empty queue (so that a late
	// duplicate would have arrived too).
	deadline := time.After(okLease + 45*time.Second)
	for rec.successes() < okEvents {
		select {
		case <-rec.progress:
		case <-deadline:
			t.Fatalf("%d of %d events delivered\n%s", rec.successes(), okEvents, mpLogs(procs))
		}
	}
	if !wait.Until(func() bool {
		depth, err := mpQueueDepth(api.c, procs[0].base)
		return err == nil && depth == 0
	}) {
		t.Fatalf("the queue did not drain\n%s", mpLogs(procs))
	}

	// ---- the checks
	arr := rec.snapshot()
	pos := map[string]int{}
	for i, e := range logOrder {
		pos[e] = i
	}
	next := 0 // index in logOrder of the event expected
	failed, held, dups := 0, 0, 0
	var heldEvent string
	for k, a := range arr {
		if !a.sigOK {
			t.Errorf("arrival %d (%s of %s): bad signature", k, a.delivery, a.event)
		}
		if _, ok := pos[a.event]; !ok {
			t.Errorf("arrival %d: unknown event %q", k, a.event)
			continue
		}
		if next >= len(logOrder) {
			t.Errorf("arrival %d: event %s (log position %d) after every event succeeded", k, a.event, pos[a.event])
			continue
		}
		if a.event != logOrder[next] {
			t.Errorf("arrival %d: event %s (log position %d), want %s (position %d): out of order", k, a.event, pos[a.event], logOrder[next], next)
			continue
		}
		switch {
		case a.held:
			held++
			heldEvent = a.event
		case a.status == 200:
			next++
		default:
			failed++
		}
	}
	// The held event arrives once more than its failures and success:
	// the duplicate at-least-once allows; any other is an error.
	perEvent := map[string]int{}
	for _, a := range arr {
		if a.status != 500 {
			perEvent[a.event]++
		}
	}
	for e, n := range perEvent {
		switch {
		case e == heldEvent && n == 2:
			dups++
		case n != 1:
			t.Errorf("event %s (log position %d) arrived %d times besides its deliberate failures", e, pos[e], n)
		}
	}
	if held != 1 {
		t.Errorf("%d deliveries held for the kill, want 1", held)
	}
	if most := rec.mostOpen(); most != 1 {
		t.Errorf("the ordered receiver had %d deliveries open at once, want 1", most)
	}
	var again, last time.Time
	for _, a := range arr {
		if a.event == heldEvent && !a.held && a.status == 200 {
			again = a.at
		}
		last = a.at
	}
	t.Logf("the held event delivered again %s after the kill, the last arrival %s after it",
		again.Sub(killedAt).Round(time.Millisecond), last.Sub(killedAt).Round(time.Millisecond))
	t.Logf("%d arrivals: %d events in the log's order, %d deliberate failures retried, %d delivery held until its sender's kill and delivered again (the one duplicate at-least-once allows: %d)",
		len(arr), next, failed, held, dups)
}

// okArrival is one request at the ordered receiver.
type okArrival struct {
	event    string // the envelope's id
	delivery string // X-Service-Delivery
	pid      int    // sender, when the receiver could tell (the hold needs it)
	status   int    // the answer: 200, 500, or 0 if held (never answered)
	held     bool
	sigOK    bool
	at       time.Time // the request arrived
}

// okReceiver is the ordered webhook's receiver: it records every request,
// counts the requests open at once, fails the first attempt of some
// events, and holds one delivery for the kill.
type okReceiver struct {
	url      string
	owners   *mpOwners
	heldBy   chan int      // the sender of the held delivery
	progress chan struct{} // a success arrived
	gate     chan struct{} // closed by release

	mu        sync.Mutex
	log       []okArrival
	failedYet map[string]bool
	succeeded map[string]bool
	open      int
	most      int
	armed     bool
	heldEv    string
}

func newOKReceiver(t *testing.T) *okReceiver {
	r := &okReceiver{owners: &mpOwners{}, heldBy: make(chan int, 1), progress: make(chan struct{}, 1), gate: make(chan struct{}),
		failedYet: map[string]bool{}, succeeded: map[string]bool{}, armed: true}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
	srv.Config.ConnContext = r.owners.connContext
	srv.Start()
	t.Cleanup(srv.Close)
	t.Cleanup(r.release)
	r.url = srv.URL + "/ordered"
	return r
}

func (r *okReceiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	var env struct{ ID string }
	json.Unmarshal(body, &env)
	mac := hmac.New(sha256.New, []byte(mpSecret))
	mac.Write(body)
	a := okArrival{at: time.Now(), event: env.ID, delivery: req.Header.Get("X-Service-Delivery"), pid: r.owners.owner(req),
		sigOK: hmac.Equal([]byte(req.Header.Get("X-Service-Signature")), []byte("sha256="+hex.EncodeToString(mac.Sum(nil))))}

	r.mu.Lock()
	r.open++
	r.most = max(r.most, r.open)
	switch {
	case r.armed && len(r.succeeded) >= okHoldAt && a.pid != 0:
		r.armed, a.held, r.heldEv = false, true, a.event
	case !r.failedYet[a.event] && !r.succeeded[a.event] && mrand.Float64() < okFail:
		r.failedYet[a.event] = true
		a.status = 500
	default:
		a.status = 200
	}
	r.log = append(r.log, a)
	r.mu.Unlock()

	if a.held {
		r.heldBy <- a.pid
		// Until the sender is dead: its connection closes, or the test,
		// having reaped it, releases the hold.
		select {
		case <-req.Context().Done():
		case <-r.gate:
		case <-time.After(okHoldMax):
		}
		w.WriteHeader(200) // to no one
	} else {
		w.WriteHeader(a.status)
	}

	r.mu.Lock()
	r.open--
	if a.status == 200 {
		r.succeeded[a.event] = true
	}
	r.mu.Unlock()
	if a.status == 200 {
		select {
		case r.progress <- struct{}{}:
		default:
		}
	}
}

// release ends the hold (once the held delivery's sender is dead).
func (r *okReceiver) release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.gate:
	default:
		close(r.gate)
	}
}

func (r *okReceiver) heldEvent() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.heldEv
}

func (r *okReceiver) successes() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.succeeded)
}

func (r *okReceiver) mostOpen() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.most
}

func (r *okReceiver) snapshot() []okArrival {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.log)
}
