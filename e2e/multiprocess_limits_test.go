//go:build linux

package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/amsdev/ams/internal/testing/wait"
)

// mlSetup starts n `ams serve` processes (with the extra flags of each) on
// one fresh PostgreSQL schema, with an account of high rate limits, and
// returns them with the account's API client and assistant id.
func mlSetup(t *testing.T, flags ...[]string) ([]*mpProc, *mpAPI, string) {
	t.Helper()
	dbURL := os.Getenv("AMS_TEST_DATABASE_URL")
	if dbURL == "" {
		t.Skip("AMS_TEST_DATABASE_URL is not set: the multi-process PostgreSQL test is skipped (CI sets it, e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable)")
	}
	bin := amsBinary(t)
	env := mpEnv(mpSchema(t, dbURL), mpSecretKey())
	key, asst := mpAccount(t, bin, env, "limits@example.com")
	procs := make([]*mpProc, len(flags))
	for i, f := range flags {
		procs[i] = mpStart(t, bin, env, i, f...)
	}
	api := &mpAPI{key: key, c: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 8}}}
	t.Cleanup(api.c.CloseIdleConnections)
	return procs, api, asst
}

// mlWebhook creates a webhook for message.created at url through p.
func mlWebhook(t *testing.T, api *mpAPI, p *mpProc, url string) string {
	t.Helper()
	var wh struct{ ID string }
	body := fmt.Sprintf(`{"url":%q,"events":["message.created"],"secret":%q}`, url, mpSecret)
	if err := api.do("POST", p.base+"/v1/webhooks", body, 201, &wh); err != nil {
		t.Fatal(err)
	}
	return wh.ID
}

// TestMultiProcessPerWebhookCap: three processes, each allowed 16
// deliveries in flight and 8 per webhook, deliver 300 events to one slow
// receiver (200 ms per answer): the receiver never has more than 8
// requests open at once — the cap holds across the processes, not per
// process (which would allow 24).
func TestMultiProcessPerWebhookCap(t *testing.T) {
	const procsN, perHook, messages = 3, 8, 150
	var open, peak, arrived atomic.Int64
	rec := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := open.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		io.Copy(io.Discard, r.Body)
		time.Sleep(200 * time.Millisecond)
		open.Add(-1)
		arrived.Add(1)
	}))
	t.Cleanup(rec.Close)
	flags := make([][]string, procsN)
	for i := range flags {
		// The messages are sent all at once: more than the cap on an
		// account's turns in progress, which is not what this test is about.
		flags[i] = []string{"--webhook-concurrency", "16", "--webhook-concurrency-per-webhook", strconv.Itoa(perHook),
			"--max-concurrent-turns-per-account", strconv.Itoa(messages)}
	}
	procs, api, asst := mlSetup(t, flags...)
	mlWebhook(t, api, procs[0], rec.URL)
	body := fmt.Sprintf(`{"assistant_id":%q,"message":"Hello! What can you do?"}`, asst)
	var wg sync.WaitGroup
	errs := make(chan error, messages)
	for i := range messages {
		wg.Go(func() {
			if err := api.do("POST", procs[i%procsN].base+"/v1/messages", body, 201, nil); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if !wait.Until(func() bool { return arrived.Load() >= 2*messages }) {
		t.Fatalf("%d of %d deliveries arrived\n%s", arrived.Load(), 2*messages, mpLogs(procs))
	}
	if p := peak.Load(); p > perHook {
		t.Fatalf("the receiver had %d requests open at once; the per-webhook cap is %d across all processes", p, perHook)
	} else if p < perHook/2 {
		t.Fatalf("at most %d requests open at once: the test did not load the receiver", p)
	}
	t.Logf("peak %d requests open at once (cap %d, %d processes)", peak.Load(), perHook, procsN)
}

// TestMultiProcessWakeUp: an event committed by a process that sends no
// deliveries (--webhook-concurrency 0) is delivered by another process
// whose worker polls once an hour (--webhook-poll-interval 1h): only the
// wake-up that the commit sends across processes (LISTEN/NOTIFY) can start
// its delivery within the test. Each ping is sent after the previous one
// arrived, once the worker is (about to be) idle again: without the
// notifications the process stalls at the first ping that no claim of its
// own happened to catch (in practice the first), and the test fails. How fast the wake-up is, is measured by the benchmark
// (docs/benchmarks.md, "webhook p99, commit → first attempt"), not here.
func TestMultiProcessWakeUp(t *testing.T) {
	const pings = 20
	arrived := make(chan string, pings)
	rec := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		arrived <- r.Header.Get("Webhook-Id")
	}))
	t.Cleanup(rec.Close)
	procs, api, _ := mlSetup(t, []string{"--webhook-concurrency", "0"},
		[]string{"--webhook-concurrency", "16", "--webhook-poll-interval", "1h"})
	hook := mlWebhook(t, api, procs[0], rec.URL)
	for i := range pings {
		var ev struct{ ID string }
		if err := api.do("POST", procs[0].base+"/v1/webhooks/"+hook+"/ping", "", 202, &ev); err != nil {
			t.Fatal(err)
		}
		select {
		case id := <-arrived:
			if id != ev.ID {
				t.Fatalf("ping %d: delivered %s, want %s", i, id, ev.ID)
			}
		case <-time.After(60 * time.Second): // far beyond any wake-up; far below the poll
			t.Fatalf("ping %d of %d was not delivered by the process that polls hourly: its commit did not wake it\n%s", i+1, pings, mpLogs(procs))
		}
	}
}
