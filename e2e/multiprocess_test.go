//go:build linux

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/amsdev/ams/internal/testing/wait"
	"github.com/amsdev/ams/webhook"
	"github.com/jackc/pgx/v5"
)

// The multi-process test of issue 5. Its identifiers start with mp so that
// they cannot collide with other files of the package.
const (
	mpProcs    = 3    // ams serve processes on one PostgreSQL schema
	mpVictim   = 2    // index of the process killed with -9
	mpMessages = 1000 // POST /v1/messages: 2 message.created events each
	mpHooks    = 2    // webhooks subscribed to message.created
	mpSenders  = 6    // concurrent clients sending the messages
	mpConc     = 16   // --webhook-concurrency of every process
	mpPerHook  = 8    // --webhook-concurrency-per-webhook
	mpLease    = 6 * time.Second
	// mpSlack is how much later than the kill a request the killed process
	// wrote before it died may still be seen starting at the receiver (the
	// receiver runs in this test binary, under -race, on a loaded machine).
	mpSlack = 2 * time.Second
	// mpRecordMargin is how long after its answer (or its 5 s timeout) an
	// attempt may take to be recorded on a loaded machine.
	mpRecordMargin = 2 * time.Second
	mpSecret       = "mp-webhook-secret-0123456789"
	// mpHoldMax bounds how long the receiver holds a delivery of the
	// victim waiting for the kill (below the 5 s delivery timeout).
	mpHoldMax = 4 * time.Second
)

// TestMultiProcessKillNine runs three `ams serve` processes on one
// PostgreSQL schema, sends 1,000 messages (2,000 message.created events)
// spread over them to two webhooks (4,000 (event, webhook) pairs), and
// kills one process with SIGKILL when about half of the deliveries have
// arrived. It then checks that every pair is delivered at least once, and
// that the only duplicates are deliveries that were in flight in the killed
// process.
//
// "In flight at the kill" means precisely: the killed process had leased
// the delivery's job (its ClaimJobs transaction committed) and had not yet
// committed the attempt's record (RecordAttempt) when it died. Such an
// attempt may not have reached the receiver yet (nothing to duplicate), may
// have been in the receiver's handler, or may have been answered 200 with
// the answer not yet recorded. Its job stays pending with the dead process's
// lease; when the lease (--webhook-lease 6s) runs out, a surviving process
// claims and delivers it again, so a pair whose attempt had reached the
// receiver arrives twice. That is the at-least-once promise, and the only
// duplicate allowed. Every recorded attempt is listed, under the id it was
// sent with as X-Service-Delivery, by GET /v1/webhooks/{id}/deliveries; an
// in-flight attempt is therefore observable as an arrival whose delivery id
// is not in the delivery log once everything has settled. Besides, the
// receiver finds which process sent each request (the owner of the
// connection's client socket, through /proc), so the test also checks that
// every unrecorded arrival came from the killed process.
//
// To be sure that something is in flight at the kill, the kill happens
// once the receivers hold (do not answer yet) a delivery of the victim:
// when half of the deliveries have arrived, the receivers start holding
// every request from the victim, the victim gets no more messages (none is
// cut by the kill), and it is killed as soon as one of its deliveries is
// held (its worker claims its own last messages' jobs at once). Its other
// attempts in flight at that moment are whatever they happen to be.
//
// With T0 the moment just before SIGKILL and T1 the moment the process had
// been reaped, the test requires:
//
//  1. every one of the 4,000 pairs arrives, with a valid signature, and no
//     other event;
//  2. the delivery log holds exactly one attempt per pair, successful
//     (200, attempt 1), whose delivery id did arrive: survivors never
//     deliver a pair twice among themselves;
//  3. every arrival missing from the log (in flight at the kill) came from
//     the killed process, between T0 − (5 s delivery timeout + 2 s to
//     record) and T1 + 2 s, and its pair's logged delivery arrived after
//     it and after T0;
//  4. at most 16 such arrivals (--webhook-concurrency of the killed
//     process, which with 2 webhooks × 8 per webhook is also its cap);
//  5. every delivery held until the kill is among them, and was delivered
//     again.
//
// So a pair is duplicated only if it was in flight at the kill: none whose
// first arrival came after the kill, none first delivered long before it,
// and at most as many as the killed process could have had in flight.
//
// It needs AMS_TEST_DATABASE_URL (CI sets it) and runs in a schema of its
// own, dropped at the end. It takes about 15–50 s (the more the busier the
// machine), 6 s of it the lease of the killed process's deliveries.
func TestMultiProcessKillNine(t *testing.T) {
	dbURL := os.Getenv("AMS_TEST_DATABASE_URL")
	if dbURL == "" {
		t.Skip("AMS_TEST_DATABASE_URL is not set: the multi-process PostgreSQL test is skipped (CI sets it, e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable)")
	}
	began := time.Now()
	bin := amsBinary(t)
	env := mpEnv(mpSchema(t, dbURL), mpSecretKey())

	// An account with limits far above the load, a key and an assistant,
	// made with the CLI.
	key, asst := mpAccount(t, bin, env, "multi@example.com")

	rec := newMPReceiver(t)
	// Every process runs with --dev: without it the SSRF guard refuses the
	// loopback receivers. On a store that already has the dev account --dev
	// only renews the dev key and password, which this test does not use.
	// They start one after the other so that only the first creates the dev
	// account.
	procs := make([]*mpProc, mpProcs)
	for i := range procs {
		procs[i] = mpStart(t, bin, env, i, "--webhook-lease", mpLease.String(),
			"--webhook-concurrency", strconv.Itoa(mpConc), "--webhook-concurrency-per-webhook", strconv.Itoa(mpPerHook))
	}
	pids := make([]int, mpProcs)
	for i, p := range procs {
		pids[i] = p.cmd.Process.Pid
	}
	rec.owners.setPIDs(pids)
	api := &mpAPI{key: key, c: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: mpSenders}}}
	t.Cleanup(api.c.CloseIdleConnections)

	hookIDs := make([]string, mpHooks)
	for h := range hookIDs {
		body := fmt.Sprintf(`{"url":%q,"events":["message.created"],"secret":%q}`, rec.urls[h], mpSecret)
		var wh struct{ ID string }
		if err := api.do("POST", procs[h%mpProcs].base+"/v1/webhooks", body, 201, &wh); err != nil {
			t.Fatal(err)
		}
		hookIDs[h] = wh.ID
	}
	rec.setHookIDs(hookIDs)
	setupDone := time.Now()

	// Send the messages round-robin over the three processes until the
	// kill sequence closes the victim, then over the two survivors. No
	// request is cut by the kill: the victim is closed, and its requests in
	// flight are answered, before it is killed (a cut request would leave
	// it unknown whether its message was stored).
	var victimMu sync.Mutex
	victimOpen := true
	var victimBusy, victimSent atomic.Int64
	pick := func(i int) int {
		victimMu.Lock()
		defer victimMu.Unlock()
		if victimOpen {
			p := i % mpProcs
			if p == mpVictim {
				victimBusy.Add(1)
			}
			return p
		}
		return i % (mpProcs - 1) // 0 or 1: never mpVictim
	}
	msgBody := fmt.Sprintf(`{"assistant_id":%q,"message":"Hello! What can you do?"}`, asst)
	var next atomic.Int64
	var sendFailed atomic.Bool
	var sendErrOnce sync.Once
	var sendErr error
	var senders sync.WaitGroup
	for range mpSenders {
		senders.Add(1)
		go func() {
			defer senders.Done()
			for !sendFailed.Load() {
				i := int(next.Add(1) - 1)
				if i >= mpMessages {
					return
				}
				p := pick(i)
				err := api.do("POST", procs[p].base+"/v1/messages", msgBody, 201, nil)
				if p == mpVictim {
					if err == nil {
						victimSent.Add(1)
					}
					victimBusy.Add(-1)
				}
				if err != nil {
					sendErrOnce.Do(func() { sendErr = fmt.Errorf("message %d to process %d: %w", i, p, err) })
					sendFailed.Store(true)
					return
				}
			}
		}()
	}
	sendsDone := make(chan struct{})
	go func() { senders.Wait(); close(sendsDone) }()
	failIfSendFailed := func() {
		if sendFailed.Load() {
			<-sendsDone
			t.Fatalf("sending failed: %v", sendErr)
		}
	}

	// Once half of the deliveries have arrived: the receivers hold every
	// request the victim sends from now on (until the kill, at most
	// mpHoldMax), the victim gets no more messages, and as soon as one of
	// its deliveries is held (its own last messages' jobs are claimed by
	// its own worker at once) it is killed. So at least one delivery is
	// certainly in flight at the kill, besides those that happen to be.
	total := mpMessages * 2 * mpHooks
	killDeadline := time.Now().Add(60 * time.Second)
	for rec.count() < total/2 {
		failIfSendFailed()
		if time.Now().After(killDeadline) {
			t.Fatalf("after 60 s: %d of %d deliveries arrived\n%s", rec.count(), total, mpLogs(procs))
		}
		time.Sleep(2 * time.Millisecond)
	}
	release := rec.holdFrom(pids[mpVictim])
	victimMu.Lock()
	victimOpen = false
	victimMu.Unlock()
	for victimBusy.Load() > 0 {
		failIfSendFailed()
		if time.Now().After(killDeadline) {
			t.Fatal("the victim's last requests were not answered within 60 s")
		}
		time.Sleep(time.Millisecond)
	}
	holdDeadline := time.Now().Add(3 * time.Second)
	for rec.heldCount() == 0 && time.Now().Before(holdDeadline) {
		time.Sleep(time.Millisecond)
	}
	heldAtKill := rec.heldCount()
	victim := procs[mpVictim]
	t0 := time.Now()
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-victim.done
	t1 := time.Now()
	release()
	arrivedAtKill := rec.count()
	t.Logf("killed process %d (pid %d) with %d of its deliveries held at the receiver, after %d of %d deliveries arrived, %d of %d messages sent (%d by the victim); T1-T0 %s",
		mpVictim, victim.cmd.Process.Pid, heldAtKill, arrivedAtKill, total, next.Load(), mpMessages, victimSent.Load(), t1.Sub(t0).Round(time.Millisecond))
	if heldAtKill == 0 {
		t.Logf("no delivery of the victim was held in 3 s: the kill tests only the deliveries that happened to be in flight")
	}

	<-sendsDone
	if sendErr != nil {
		t.Fatalf("sending failed: %v", sendErr)
	}
	sentAt := time.Now()

	// The events that exist, read through a survivor, following the
	// list as a catch-up reader does: an event is listed once no older
	// transaction runs, so the reader goes on until it has them all.
	events := map[string]bool{}
	after := ""
	for listDeadline := time.Now().Add(30 * time.Second); ; {
		var page struct {
			Data    []struct{ ID string }
			HasMore bool `json:"has_more"`
		}
		u := procs[0].base + "/v1/events?type=message.created&order=asc&limit=100" + after
		if err := api.do("GET", u, "", 200, &page); err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Data {
			events[e.ID] = true
		}
		if len(page.Data) > 0 {
			after = "&after=" + page.Data[len(page.Data)-1].ID
		}
		if !page.HasMore && (len(events) >= 2*mpMessages || time.Now().After(listDeadline)) {
			break
		}
		if !page.HasMore {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if len(events) != 2*mpMessages {
		t.Fatalf("%d message.created events listed, want %d", len(events), 2*mpMessages)
	}

	// Wait until every pair has arrived (the killed process's leases must
	// run out first), then until no job is pending any more: then every
	// attempt has been recorded and nothing more can be delivered.
	waitDeadline := t1.Add(mpLease + 30*time.Second)
	for rec.pairs() < total {
		if time.Now().After(waitDeadline) {
			missing := rec.missing(events)
			t.Fatalf("%d of %d (event, webhook) pairs never arrived, %s after the kill (first: %v)\n%s", len(missing), total,
				time.Since(t1).Round(time.Millisecond), missing[:min(5, len(missing))], mpLogs(procs))
		}
		time.Sleep(20 * time.Millisecond)
	}
	allArrived := time.Now()
	for {
		depth, err := mpQueueDepth(api.c, procs[0].base)
		if err == nil && depth == 0 {
			break
		}
		if time.Now().After(waitDeadline) {
			t.Fatalf("queue depth still %v (%v) %s after the kill\n%s", depth, err, time.Since(t1).Round(time.Millisecond), mpLogs(procs))
		}
		time.Sleep(50 * time.Millisecond)
	}
	settled := time.Now()

	// The delivery log of each webhook, read through the other survivor.
	type logged struct {
		ID, EventID string
		Attempt     int
		Success     bool
		StatusCode  *int
	}
	logs := map[string]logged{}         // delivery id -> record
	perPair := map[[2]string][]logged{} // (event, webhook id) -> records
	for _, hid := range hookIDs {
		after := ""
		for {
			var page struct {
				Data    []json.RawMessage
				HasMore bool `json:"has_more"`
			}
			u := procs[1].base + "/v1/webhooks/" + hid + "/deliveries?order=asc&limit=100" + after
			if err := api.do("GET", u, "", 200, &page); err != nil {
				t.Fatal(err)
			}
			var last string
			for _, raw := range page.Data {
				var d struct {
					ID         string `json:"id"`
					EventID    string `json:"event_id"`
					Attempt    int    `json:"attempt"`
					Success    bool   `json:"success"`
					StatusCode *int   `json:"status_code"`
				}
				if err := json.Unmarshal(raw, &d); err != nil {
					t.Fatal(err)
				}
				r := logged{ID: d.ID, EventID: d.EventID, Attempt: d.Attempt, Success: d.Success, StatusCode: d.StatusCode}
				logs[d.ID] = r
				perPair[[2]string{d.EventID, hid}] = append(perPair[[2]string{d.EventID, hid}], r)
				last = d.ID
			}
			if !page.HasMore || last == "" {
				break
			}
			after = "&after=" + last
		}
	}

	// ---- the checks
	arr := rec.snapshot()
	byPair := map[[2]string][]mpArrival{}
	known := 0
	for _, a := range arr {
		if !a.sigOK {
			t.Errorf("delivery %s of %s to webhook %s: bad signature", a.delivery, a.event, a.hook)
		}
		if !events[a.event] {
			t.Errorf("delivery %s: unknown event id %q", a.delivery, a.event)
		}
		if a.pid != 0 {
			known++
		}
		k := [2]string{a.event, a.hook}
		byPair[k] = append(byPair[k], a)
	}
	// Attribution is a cross-check; it must work for (nearly) every request.
	attributed := known*10 >= len(arr)*9
	if !attributed {
		t.Logf("only %d of %d arrivals could be attributed to a process (/proc not readable?): the per-process checks are skipped", known, len(arr))
	}
	pidIndex := map[int]int{}
	for i, pid := range pids {
		pidIndex[pid] = i
	}

	// 1. every pair arrived.
	for e := range events {
		for _, hid := range hookIDs {
			if len(byPair[[2]string{e, hid}]) == 0 {
				t.Errorf("event %s never arrived at webhook %s", e, hid)
			}
		}
	}
	// 2. one successful record per pair, and it did arrive.
	arrivedIDs := map[string]mpArrival{}
	for _, a := range arr {
		arrivedIDs[a.delivery] = a
	}
	for e := range events {
		for _, hid := range hookIDs {
			recs := perPair[[2]string{e, hid}]
			if len(recs) != 1 {
				t.Errorf("event %s, webhook %s: %d attempts recorded, want 1 (%+v; arrivals %s)", e, hid, len(recs), recs,
					mpDescribe(byPair[[2]string{e, hid}], t0, pidIndex))
				continue
			}
			r := recs[0]
			if !r.Success || r.StatusCode == nil || *r.StatusCode != 200 || r.Attempt != 1 {
				t.Errorf("event %s, webhook %s: recorded attempt %+v, want a first attempt answered 200", e, hid, r)
			}
			if _, ok := arrivedIDs[r.ID]; !ok {
				t.Errorf("event %s, webhook %s: recorded delivery %s never reached the receiver", e, hid, r.ID)
			}
		}
	}
	if len(logs) != total {
		t.Errorf("%d attempts in the delivery logs, want %d", len(logs), total)
	}
	// 3. and 4. the unrecorded arrivals: in flight in the victim at the kill.
	var inFlight []mpArrival
	earliest, latest := t0.Add(-webhook.Timeout-mpRecordMargin), t1.Add(mpSlack)
	for _, a := range arr {
		if _, ok := logs[a.delivery]; ok {
			continue
		}
		inFlight = append(inFlight, a)
		k := [2]string{a.event, a.hook}
		// (A connection the victim opened just before it died may be
		// unattributed: it was gone when the receiver looked it up.)
		if a.pid != 0 && a.pid != pids[mpVictim] {
			t.Errorf("unrecorded delivery %s of %s to %s came from %s, not from the killed process", a.delivery, a.event, a.hook, mpWho(a.pid, pidIndex))
		}
		if a.at.Before(earliest) || a.at.After(latest) {
			t.Errorf("unrecorded delivery %s of %s to %s arrived at kill%+v: outside [%s, +%s] around the kill, so not in flight at it",
				a.delivery, a.event, a.hook, a.at.Sub(t0).Round(time.Millisecond), -(webhook.Timeout + mpRecordMargin), t1.Sub(t0)+mpSlack)
		}
		for _, b := range byPair[k] {
			if _, ok := logs[b.delivery]; ok && (b.at.Before(a.at) || b.at.Before(t0)) {
				t.Errorf("event %s, webhook %s: the recorded delivery arrived at kill%+v, before the unrecorded one at kill%+v or before the kill",
					a.event, a.hook, b.at.Sub(t0).Round(time.Millisecond), a.at.Sub(t0).Round(time.Millisecond))
			}
			if _, ok := logs[b.delivery]; ok && attributed && b.pid == pids[mpVictim] {
				t.Errorf("event %s, webhook %s: redelivered by the killed process", a.event, a.hook)
			}
		}
	}
	// A delivery held at the receiver until the kill never got its answer:
	// it cannot have been recorded, and must have been delivered again.
	heldUntilKill := 0
	for _, a := range arr {
		if !a.heldKill {
			continue
		}
		heldUntilKill++
		if _, ok := logs[a.delivery]; ok {
			t.Errorf("delivery %s of %s to %s was held at the receiver until the kill, yet is recorded", a.delivery, a.event, a.hook)
		}
		if len(byPair[[2]string{a.event, a.hook}]) < 2 {
			t.Errorf("delivery %s of %s to %s was held until the kill and not delivered again", a.delivery, a.event, a.hook)
		}
	}
	if heldAtKill > 0 && heldUntilKill == 0 {
		t.Errorf("%d deliveries were held when the victim was killed, none until the kill", heldAtKill)
	}
	if len(inFlight) > mpConc {
		t.Errorf("%d deliveries were in flight in the killed process, more than its --webhook-concurrency %d", len(inFlight), mpConc)
	}
	// The same, stated on first arrivals as issue 5 words it.
	dups, byVictim, aborted := 0, 0, 0
	for k, as := range byPair {
		if len(as) < 2 {
			continue
		}
		dups++
		first := slices.MinFunc(as, func(a, b mpArrival) int { return a.at.Compare(b.at) })
		if first.at.Before(earliest) || first.at.After(latest) {
			t.Errorf("event %s, webhook %s arrived %d times, first at kill%+v: not in flight at the kill", k[0], k[1], len(as), first.at.Sub(t0).Round(time.Millisecond))
		}
		if len(as) != 2 {
			t.Errorf("event %s, webhook %s arrived %d times: %s", k[0], k[1], len(as), mpDescribe(as, t0, pidIndex))
		}
	}
	for _, a := range arr {
		if a.pid == pids[mpVictim] {
			byVictim++
		}
	}
	for _, a := range inFlight {
		if a.aborted {
			aborted++
		}
	}
	if dups > mpConc {
		t.Errorf("%d pairs duplicated, more than the %d deliveries the killed process could have in flight", dups, mpConc)
	}
	if attributed && byVictim == 0 {
		t.Errorf("the killed process delivered nothing before the kill: the test did not exercise the lease")
	}
	var inFlightAt []string
	for _, a := range inFlight {
		inFlightAt = append(inFlightAt, fmt.Sprintf("%+dms", a.at.Sub(t0).Milliseconds()))
	}
	t.Logf("%d arrivals for %d pairs; %d by the killed process; %d attributed; %d in flight at the kill (arrived at %v relative to T0; %d held until the kill; the receiver saw the sender vanish before answering %d); %d pairs duplicated",
		len(arr), total, byVictim, known, len(inFlight), inFlightAt, heldUntilKill, aborted, dups)

	// The survivors stop cleanly and logged no error.
	for i, p := range procs {
		if i == mpVictim {
			continue
		}
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
			if p.err != nil {
				t.Errorf("process %d exited with %v\n%s", i, p.err, p.logs.String())
			}
		case <-time.After(20 * time.Second):
			t.Errorf("process %d did not stop within 20 s of SIGTERM", i)
		}
		for _, l := range strings.Split(p.logs.String(), "\n") {
			if strings.Contains(l, `"level":"ERROR"`) {
				t.Errorf("process %d logged an error: %s", i, l)
			}
		}
	}
	t.Logf("timings: setup %s, sending %s, kill at +%s, all pairs arrived kill+%s, settled kill+%s, total %s",
		setupDone.Sub(began).Round(time.Millisecond), sentAt.Sub(setupDone).Round(time.Millisecond), t0.Sub(setupDone).Round(time.Millisecond),
		allArrived.Sub(t0).Round(time.Millisecond), settled.Sub(t0).Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
}

// ---------------------------------------------------------------- receiver

// mpArrival is one request the receivers got.
type mpArrival struct {
	hook     string    // webhook id
	event    string    // the envelope's id (also the Webhook-Id header)
	delivery string    // X-Service-Delivery: the attempt's id
	pid      int       // process that sent it (owner of the client socket); 0 if unknown
	at       time.Time // the handler started
	aborted  bool      // the sender's connection closed before the answer was written
	answered bool      // the handler wrote its 200 answer
	sigOK    bool
	held     bool // held for the kill
	heldKill bool // held until the kill (not released by mpHoldMax)
}

// mpReceiver is two loopback receivers, one per webhook, recording every
// arrival. Each answers 200 after 5–30 ms, so that deliveries are in
// flight when the victim dies.
type mpReceiver struct {
	urls   []string
	owners *mpOwners

	mu      sync.Mutex
	hooks   []string // webhook id by receiver index
	log     []mpArrival
	seen    map[[2]string]bool
	arrive  atomic.Int64
	holdPID int           // requests from this process are held until gate closes
	gate    chan struct{} // closed by the release
	held    int
}

func newMPReceiver(t *testing.T) *mpReceiver {
	r := &mpReceiver{owners: &mpOwners{}, seen: map[[2]string]bool{}}
	for i := range mpHooks {
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { r.serve(i, w, req) }))
		srv.Config.ConnContext = r.owners.connContext
		srv.Start()
		t.Cleanup(srv.Close)
		r.urls = append(r.urls, srv.URL+"/hook")
	}
	return r
}

func (r *mpReceiver) setHookIDs(ids []string) {
	r.mu.Lock()
	r.hooks = ids
	r.mu.Unlock()
}

func (r *mpReceiver) serve(i int, w http.ResponseWriter, req *http.Request) {
	a := mpArrival{at: time.Now(), delivery: req.Header.Get("X-Service-Delivery"), pid: r.owners.owner(req)}
	body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	var env struct{ ID string }
	json.Unmarshal(body, &env)
	a.event = env.ID
	mac := hmac.New(sha256.New, []byte(mpSecret))
	mac.Write(body)
	a.sigOK = hmac.Equal([]byte(req.Header.Get("X-Service-Signature")), []byte("sha256="+hex.EncodeToString(mac.Sum(nil)))) &&
		req.Header.Get("Webhook-Id") == env.ID
	r.mu.Lock()
	if i < len(r.hooks) {
		a.hook = r.hooks[i]
	}
	var gate chan struct{}
	if r.holdPID != 0 && a.pid == r.holdPID {
		gate, a.held = r.gate, true
		r.held++
	}
	idx := len(r.log)
	r.log = append(r.log, a)
	r.seen[[2]string{a.event, a.hook}] = true
	r.mu.Unlock()
	r.arrive.Add(1)

	heldKill := false
	if gate != nil {
		select {
		case <-gate:
			heldKill = true
		case <-time.After(mpHoldMax - time.Since(a.at)):
		}
	} else {
		select {
		case <-time.After(time.Duration(5+mrand.IntN(26)) * time.Millisecond):
		case <-req.Context().Done():
		}
	}
	aborted := req.Context().Err() != nil
	w.WriteHeader(200)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	r.mu.Lock()
	r.log[idx].aborted, r.log[idx].answered, r.log[idx].heldKill = aborted, true, heldKill
	r.mu.Unlock()
}

// holdFrom makes the receivers hold every request from pid until release
// is called (or mpHoldMax has passed).
func (r *mpReceiver) holdFrom(pid int) (release func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.holdPID, r.gate = pid, make(chan struct{})
	g := r.gate
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.holdPID = 0
		close(g)
	}
}

func (r *mpReceiver) heldCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.held
}

func (r *mpReceiver) count() int { return int(r.arrive.Load()) }

func (r *mpReceiver) pairs() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}

func (r *mpReceiver) snapshot() []mpArrival {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.log)
}

func (r *mpReceiver) missing(events map[string]bool) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for e := range events {
		for _, h := range r.hooks {
			if !r.seen[[2]string{e, h}] {
				out = append(out, e+"@"+h)
			}
		}
	}
	slices.Sort(out)
	return out
}

// mpOwners finds which process opened each connection to the receivers:
// when a connection is accepted, the client socket (local port = the
// connection's remote port) is looked up in /proc/net/tcp and its inode
// among the file descriptors of the ams processes. The owner is kept in
// the connection's context. (Keyed by the client's address instead, it
// was sometimes wrong: Linux gives two connections to the two receivers
// the same local port, and the second overwrote the first's owner.)
type mpOwners struct {
	mu   sync.Mutex
	pids []int
}

func (o *mpOwners) setPIDs(p []int) {
	o.mu.Lock()
	o.pids = p
	o.mu.Unlock()
}

type mpOwnerKey struct{}

// connContext is the receivers' http.Server.ConnContext.
func (o *mpOwners) connContext(ctx context.Context, c net.Conn) context.Context {
	remote, ok1 := c.RemoteAddr().(*net.TCPAddr)
	local, ok2 := c.LocalAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return ctx
	}
	o.mu.Lock()
	pids := o.pids
	o.mu.Unlock()
	return context.WithValue(ctx, mpOwnerKey{}, mpSocketOwner(remote.Port, local.Port, pids))
}

// owner returns the pid of the process that sent req; 0 if unknown.
func (o *mpOwners) owner(req *http.Request) int {
	pid, _ := req.Context().Value(mpOwnerKey{}).(int)
	return pid
}

// mpSocketOwner returns the pid among pids holding the TCP socket from
// local port lport to remote port rport on 127.0.0.1; 0 if none.
func mpSocketOwner(lport, rport int, pids []int) int {
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return 0
	}
	want := fmt.Sprintf("0100007F:%04X", lport)
	peer := fmt.Sprintf("0100007F:%04X", rport)
	inode := ""
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) > 9 && f[1] == want && f[2] == peer && f[9] != "0" {
			inode = f[9]
			break
		}
	}
	if inode == "" {
		return 0
	}
	link := "socket:[" + inode + "]"
	for _, pid := range pids {
		dir := fmt.Sprintf("/proc/%d/fd", pid)
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if l, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && l == link {
				return pid
			}
		}
	}
	return 0
}

func mpWho(pid int, index map[int]int) string {
	if i, ok := index[pid]; ok {
		return fmt.Sprintf("process %d (pid %d)", i, pid)
	}
	return "an unknown process"
}

func mpDescribe(as []mpArrival, t0 time.Time, index map[int]int) string {
	var parts []string
	for _, a := range as {
		parts = append(parts, fmt.Sprintf("%s at kill%+dms from %s (answered %v, aborted %v, held %v, until the kill %v)", a.delivery,
			a.at.Sub(t0).Milliseconds(), mpWho(a.pid, index), a.answered, a.aborted, a.held, a.heldKill))
	}
	return strings.Join(parts, "; ")
}

// ---------------------------------------------------------------- processes

// mpLog is a buffer written by a child process's output copier and read
// by the test.
type mpLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *mpLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *mpLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type mpProc struct {
	cmd  *exec.Cmd
	base string
	logs *mpLog
	done chan struct{}
	err  error // set before done is closed
}

var mpBaseRE = regexp.MustCompile(`ams is running in dev mode at (http://\S+)`)

// mpStart starts `ams serve --dev` on a free port with env and waits until
// it has printed its dev walkthrough (it then listens). Its data directory
// is env's AMS_DATA_DIR if env has one (a SQLite store), a fresh one
// otherwise.
func mpStart(t *testing.T, bin string, env []string, n int, extra ...string) *mpProc {
	t.Helper()
	args := append([]string{"serve", "--dev", "--addr", "127.0.0.1:0", "--shutdown-timeout", "10s"}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Env = slices.Clone(env)
	if !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "AMS_DATA_DIR=") }) {
		cmd.Env = append(cmd.Env, "AMS_DATA_DIR="+t.TempDir())
	}
	out, logs := &mpLog{}, &mpLog{}
	cmd.Stdout, cmd.Stderr = out, logs
	// The server dies with the test binary even if that is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &mpProc{cmd: cmd, logs: logs, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	if !wait.Until(func() bool {
		select {
		case <-p.done:
			t.Fatalf("process %d exited at start: %v\n%s\n%s", n, p.err, out.String(), logs.String())
		default:
		}
		return strings.Contains(out.String(), `"message": "Hello! What can you do?"`)
	}) {
		t.Fatalf("process %d not ready\n%s", n, logs.String())
	}
	m := mpBaseRE.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("process %d: no base URL in:\n%s", n, out.String())
	}
	p.base = m[1]
	return p
}

func mpLogs(procs []*mpProc) string {
	var b strings.Builder
	for i, p := range procs {
		l := p.logs.String()
		// The errors and warnings, and the tail.
		var keep []string
		for _, line := range strings.Split(l, "\n") {
			if strings.Contains(line, `"level":"ERROR"`) || strings.Contains(line, `"level":"WARN"`) {
				keep = append(keep, line)
			}
		}
		if len(keep) > 20 {
			keep = keep[:20]
		}
		if len(l) > 2000 {
			l = l[len(l)-2000:]
		}
		fmt.Fprintf(&b, "--- process %d: warnings/errors:\n%s\n--- tail:\n%s\n", i, strings.Join(keep, "\n"), l)
	}
	return b.String()
}

// mpEnv is the caller's environment without AMS_* settings, with the
// database and the shared secret key.
func mpEnv(dbURL, secretKey string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AMS_") {
			env = append(env, kv)
		}
	}
	return append(env, "AMS_DATABASE_URL="+dbURL, "AMS_SECRET_KEY="+secretKey, "AMS_LOG_LEVEL=info")
}

func mpSecretKey() string {
	k := make([]byte, 32)
	rand.Read(k)
	return base64.StdEncoding.EncodeToString(k)
}

// mpSchema creates a fresh schema, dropped at the end, and returns the
// database URL with it as search_path.
func mpSchema(t *testing.T, base string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	b := make([]byte, 6)
	rand.Read(b)
	schema := "e2e_multi_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Logf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Logf("drop schema %s: %v", schema, err)
		}
	})
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	return base + sep + "search_path=" + url.QueryEscape(schema)
}

// mpAccount migrates the database and makes, with the CLI, an enterprise
// account with limits far above any load, an API key of it (read, write,
// messages) and an assistant.
func mpAccount(t *testing.T, bin string, env []string, email string) (key, asst string) {
	t.Helper()
	return mpAccountIn(t, bin, env, t.TempDir(), email)
}

// mpAccountIn is mpAccount with the CLI run on data directory dir (the
// SQLite store's, when env names no database).
func mpAccountIn(t *testing.T, bin string, env []string, dir, email string) (key, asst string) {
	t.Helper()
	mpCLI(t, bin, env, dir, "migrate")
	mpCLI(t, bin, env, dir, "users", "create", "--email", email, "--plan", "enterprise")
	mpCLI(t, bin, env, dir, "users", "update", "--email", email, "--rpm", "1000000000", "--rpd", "1000000000")
	key = mpCLI(t, bin, env, dir, "keys", "create", "--email", email, "--name", "multi", "--permissions", "read,write,messages")
	asst = mpCLI(t, bin, env, dir, "assistants", "create", "--email", email, "--name", "Multi")
	return key, asst
}

// mpCLI runs an ams subcommand and returns its trimmed stdout.
func mpCLI(t *testing.T, bin string, env []string, dir string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(slices.Clone(env), "AMS_DATA_DIR="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ams %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// mpAPI calls the API with a key.
type mpAPI struct {
	key string
	c   *http.Client
}

func (a *mpAPI) do(method, u, body string, want int, out any) error {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+a.key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: %d %s", method, u, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

// mpQueueDepth reads ams_webhook_queue_depth (jobs pending in the whole
// database, including those leased and in flight) from /metrics.
func mpQueueDepth(c *http.Client, base string) (float64, error) {
	resp, err := c.Get(base + "/metrics")
	if err != nil {
		return -1, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "ams_webhook_queue_depth "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return -1, fmt.Errorf("no ams_webhook_queue_depth in /metrics (status %d)", resp.StatusCode)
}
