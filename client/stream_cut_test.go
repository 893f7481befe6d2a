package client_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amsdev/ams/client"
	"github.com/amsdev/ams/internal/testing/amstest"
)

// cut says where a cuttingProxy cuts a stream: an offset into the
// stream's body (chunk framing included), or -1 while it cannot tell yet.
type cut func(body []byte) int

func nth(body []byte, pattern string, n int) int {
	i := -1
	for range n {
		j := bytes.Index(body[i+1:], []byte(pattern))
		if j < 0 {
			return -1
		}
		i += 1 + j
	}
	return i
}

// cutInsideChunk cuts one byte into the text of the n-th message.delta:
// inside an HTTP chunk, mid-line (the server writes each event as one
// chunk).
func cutInsideChunk(n int) cut {
	return func(body []byte) int {
		i := nth(body, `"delta":"`, n)
		if pos := i + len(`"delta":"`) + 1; i >= 0 && pos <= len(body) {
			return pos
		}
		return -1
	}
}

// cutBetweenEvents cuts after the n-th event and its chunk: between two
// events, on a chunk boundary.
func cutBetweenEvents(n int) cut {
	return func(body []byte) int {
		if i := nth(body, "\n\n\r\n", n); i >= 0 {
			return i + 4
		}
		return -1
	}
}

// cutMidEvent cuts after the event line of the n-th message.delta: its id
// and name arrived, its data did not.
func cutMidEvent(n int) cut {
	const p = "\nevent: message.delta\n"
	return func(body []byte) int {
		if i := nth(body, p, n); i >= 0 {
			return i + len(p)
		}
		return -1
	}
}

// dropAnswer, returned by a cut, closes the connection before any byte of
// the answer: the request was sent, its answer never came.
const dropAnswer = -2

func dropTheAnswer([]byte) int { return dropAnswer }

// cuttingProxy is a TCP proxy on 127.0.0.1 in front of a server. Each
// answer that is an event stream takes the next cut: its bytes (status
// line, headers, chunk framing and all) are forwarded up to the offset in
// its body that the cut names, then both connections are closed, as a
// dropped network would. Once the cuts are used up, streams pass whole.
type cuttingProxy struct {
	URL      string
	upstream string
	ln       net.Listener
	mu       sync.Mutex
	cuts     []cut
	done     int
	open     map[net.Conn]bool // closed at the end of the test
	closed   bool
	wg       sync.WaitGroup
}

func newCuttingProxy(t *testing.T, upstream string, cuts ...cut) *cuttingProxy {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cuttingProxy{URL: "http://" + ln.Addr().String(), upstream: u.Host, ln: ln, cuts: cuts, open: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		// The client keeps idle connections: close them.
		p.mu.Lock()
		p.closed = true
		for c := range p.open {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *cuttingProxy) cutsDone() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

func (p *cuttingProxy) next() cut {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.cuts) == 0 {
		return nil
	}
	c := p.cuts[0]
	p.cuts = p.cuts[1:]
	return c
}

func (p *cuttingProxy) accept() {
	defer p.wg.Done()
	var conns sync.WaitGroup
	defer conns.Wait()
	for {
		conn, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.upstream)
		if err != nil {
			conn.Close()
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			conn.Close()
			up.Close()
			return
		}
		p.open[conn], p.open[up] = true, true
		p.mu.Unlock()
		conns.Add(2)
		go func() {
			defer conns.Done()
			io.Copy(up, conn)
			up.(*net.TCPConn).CloseWrite()
		}()
		go func() {
			defer conns.Done()
			p.answers(conn, up)
			conn.Close()
			up.Close()
		}()
	}
}

// answers forwards what the server sends on one connection, cutting the
// event stream it carries if a cut is left.
func (p *cuttingProxy) answers(conn, up net.Conn) {
	var buf []byte
	sent, start := 0, -1
	var c cut
	chunk := make([]byte, 32<<10)
	for {
		n, err := up.Read(chunk)
		buf = append(buf, chunk[:n]...)
		if start < 0 {
			if i := bytes.Index(bytes.ToLower(buf), []byte("content-type: text/event-stream")); i >= 0 {
				if j := bytes.Index(buf[i:], []byte("\r\n\r\n")); j >= 0 {
					start = i + j + 4
					c = p.next()
				}
			}
		}
		if c != nil && start >= 0 {
			if pos := c(buf[start:]); pos >= 0 || pos == dropAnswer {
				if pos >= 0 {
					conn.Write(buf[sent : start+pos])
				}
				p.mu.Lock()
				p.done++
				p.mu.Unlock()
				return
			}
		}
		if _, werr := conn.Write(buf[sent:]); werr != nil {
			return
		}
		sent = len(buf)
		if err != nil {
			return
		}
	}
}

var cutKinds = []struct {
	name string
	cut  func(n int) cut
}{
	{"inside a chunk", cutInsideChunk},
	{"between events", cutBetweenEvents},
	{"mid-event", cutMidEvent},
}

const cutPrompt = "Remind me to call Anna tomorrow at 9"

// noWait resumes at once instead of after the backoff.
var noWait = client.WithSleep(func(context.Context, time.Duration) error { return nil })

// TestStreamResumesWhateverTheCut: a TCP proxy cuts the real server's
// stream inside a chunk, between events and mid-event, first the POST's
// and then the first resumed one; SendMessageStream yields every event
// once, in order, and FollowTurn resumes the same way.
func TestStreamResumesWhateverTheCut(t *testing.T) {
	f := amstest.New(t)
	ctx := context.Background()
	for _, k := range cutKinds {
		t.Run(k.name, func(t *testing.T) {
			p := newCuttingProxy(t, f.Server.URL, k.cut(3), k.cut(2))
			c := client.New(p.URL, f.Key, noWait)
			var evs []client.MessageStreamEvent
			for ev, err := range c.SendMessageStream(ctx, client.SendMessageParams{AssistantID: f.Assistant.ID, Message: cutPrompt}) {
				if err != nil {
					t.Fatalf("stream: %v (after %d events)", err, len(evs))
				}
				evs = append(evs, ev)
			}
			if p.cutsDone() != 2 {
				t.Fatalf("%d cuts", p.cutsDone())
			}
			var text strings.Builder
			for i, ev := range evs {
				if ev.ID != strconv.Itoa(i+1) {
					t.Fatalf("event %d has id %q: an event was lost or repeated", i, ev.ID)
				}
				text.WriteString(ev.Delta)
			}
			last := evs[len(evs)-1]
			if len(evs) < 7 || evs[0].Type != client.StreamEventTurnStarted || last.Type != client.StreamEventCompleted || text.String() != last.Message.Content {
				t.Fatalf("%d events, last %+v, text %q", len(evs), last, text.String())
			}

			p2 := newCuttingProxy(t, f.Server.URL, k.cut(1))
			var rest []string
			err := client.New(p2.URL, f.Key, noWait).FollowTurn(ctx, evs[0].TurnID, "1", func(ev client.MessageStreamEvent) error {
				rest = append(rest, ev.ID)
				return nil
			})
			if err != nil || p2.cutsDone() != 1 || len(rest) != len(evs)-1 || rest[0] != "2" || rest[len(rest)-1] != last.ID {
				t.Fatalf("FollowTurn: %v, %d cuts, ids %v", err, p2.cutsDone(), rest)
			}
		})
	}
}

// TestStreamCutTooOften: cut on every connection, the stream ends after
// the client's retries with an error wrapping io.ErrUnexpectedEOF, and
// the events before it came once each.
func TestStreamCutTooOften(t *testing.T) {
	f := amstest.New(t)
	for _, k := range cutKinds {
		t.Run(k.name, func(t *testing.T) {
			cuts := make([]cut, 10)
			for i := range cuts {
				cuts[i] = k.cut(1)
			}
			p := newCuttingProxy(t, f.Server.URL, cuts...)
			c := client.New(p.URL, f.Key, client.WithMaxRetries(2), noWait)
			var ids []string
			var err error
			for ev, e := range c.SendMessageStream(context.Background(), client.SendMessageParams{AssistantID: f.Assistant.ID, Message: cutPrompt}) {
				if e != nil {
					err = e
					break
				}
				ids = append(ids, ev.ID)
			}
			if !errors.Is(err, io.ErrUnexpectedEOF) || !strings.Contains(err.Error(), "the stream ended before the turn did") {
				t.Fatalf("err = %v", err)
			}
			if p.cutsDone() != 3 {
				t.Fatalf("%d cuts, want the POST's and two resumes", p.cutsDone())
			}
			for i, id := range ids {
				if id != strconv.Itoa(i+1) {
					t.Fatalf("ids %v", ids)
				}
			}
		})
	}
}

// TestStreamResumeRetriesAFailedReconnect: the stream is cut, and the
// first resume's answer never comes (the connection closes before it):
// the next resume goes on from the same event, within the retries.
func TestStreamResumeRetriesAFailedReconnect(t *testing.T) {
	f := amstest.New(t)
	p := newCuttingProxy(t, f.Server.URL, cutBetweenEvents(3), dropTheAnswer)
	c := client.New(p.URL, f.Key, noWait, client.WithHTTPClient(&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}))
	var ids []string
	for ev, err := range c.SendMessageStream(context.Background(), client.SendMessageParams{AssistantID: f.Assistant.ID, Message: cutPrompt}) {
		if err != nil {
			t.Fatalf("stream: %v (after %v)", err, ids)
		}
		ids = append(ids, ev.ID)
	}
	if p.cutsDone() != 2 {
		t.Fatalf("%d cuts", p.cutsDone())
	}
	for i, id := range ids {
		if id != strconv.Itoa(i+1) {
			t.Fatalf("ids %v", ids)
		}
	}
}
