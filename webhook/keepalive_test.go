package webhook_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"

	"github.com/amsdev/ams/internal/testing/amstest"
)

// staleReceiver answers the first request of each connection 200 and
// keeps the connection alive, then closes it, unanswered, when a second
// request comes on it: a receiver whose keep-alive timeout ends just as
// a delivery reuses the connection (the race behind issue 27's late
// deliveries, made certain).
type staleReceiver struct {
	URL string
	mu  sync.Mutex
	ids []string // Webhook-Id of each answered request
	// answered receives the path and Webhook-Id of each answered
	// request, "path id" (dropped when full).
	answered chan string
	dropped  int // requests read on a reused connection and not answered
	conns    []net.Conn
	closed   bool
}

func newStaleReceiver(t *testing.T) *staleReceiver {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rc := &staleReceiver{URL: "http://" + ln.Addr().String() + "/hook", answered: make(chan string, 1024)}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		rc.mu.Lock()
		rc.closed = true
		for _, c := range rc.conns { // the worker's client keeps them alive
			c.Close()
		}
		rc.mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			rc.mu.Lock()
			rc.conns = append(rc.conns, c)
			if rc.closed {
				c.Close()
			}
			rc.mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				br := bufio.NewReader(c)
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				rc.mu.Lock()
				rc.ids = append(rc.ids, req.Header.Get("Webhook-Id"))
				rc.mu.Unlock()
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				select {
				case rc.answered <- req.URL.Path + " " + req.Header.Get("Webhook-Id"):
				default:
				}
				if _, err := http.ReadRequest(br); err == nil {
					rc.mu.Lock()
					rc.dropped++
					rc.mu.Unlock()
				}
			}()
		}
	}()
	return rc
}

func (rc *staleReceiver) got() ([]string, int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]string(nil), rc.ids...), rc.dropped
}

// TestDeliveryOnStaleKeepAlive: a delivery that reuses a kept-alive
// connection the receiver has just closed is sent again at once on a new
// connection, within its attempt: the receiver gets every event at the
// first attempt, none waits for a retry.
func TestDeliveryOnStaleKeepAlive(t *testing.T) {
	f := amstest.New(t)
	f.Worker.PerWebhook = 1 // one after the other: the second reuses the first's connection
	rc := newStaleReceiver(t)
	wh := createWebhook(t, f, rc.URL, "message.created")
	sendMessage(t, f, "Hello") // two events: the inbound message and the reply
	if n := runOnce(t, f); n != 2 {
		t.Fatalf("%d deliveries, want 2", n)
	}
	ids, dropped := rc.got()
	if len(ids) != 2 || ids[0] == ids[1] {
		t.Fatalf("the receiver answered %v, want the two events", ids)
	}
	if dropped != 1 {
		t.Fatalf("%d requests on a reused connection, want 1 (the test's receiver did not make the race)", dropped)
	}
	l := f.Do("GET", "/v1/webhooks/"+wh+"/deliveries", f.Key, "").JSON(t)["data"].([]any)
	if len(l) != 2 {
		t.Fatalf("%d attempts logged, want 2: %v", len(l), l)
	}
	for _, d := range l {
		if d := d.(map[string]any); d["success"] != true || d["attempt"] != 1.0 {
			t.Fatalf("attempt: %v", d)
		}
	}
}
