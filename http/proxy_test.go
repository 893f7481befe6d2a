package http_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/engine/openai"
	"github.com/amsdev/ams/engine/openai/openaitest"
	"github.com/amsdev/ams/internal/testing/amstest"
)

// idleProxy is a TCP proxy that cuts a connection when no byte has
// crossed it, either way, for idle: what a load balancer with an idle
// timeout does.
type idleProxy struct {
	ln   net.Listener
	cuts atomic.Int32
	wg   sync.WaitGroup
}

func newIdleProxy(t *testing.T, backend string, idle time.Duration) *idleProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &idleProxy{ln: ln}
	t.Cleanup(func() { ln.Close(); p.wg.Wait() })
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b, err := net.Dial("tcp", backend)
			if err != nil {
				c.Close()
				continue
			}
			p.wg.Add(1)
			go func() { defer p.wg.Done(); p.pipe(c, b, idle) }()
		}
	}()
	return p
}

func (p *idleProxy) pipe(c, b net.Conn, idle time.Duration) {
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	done := make(chan struct{})
	var once sync.Once
	closeAll := func() { once.Do(func() { c.Close(); b.Close(); close(done) }) }
	copyDir := func(dst, src net.Conn) {
		buf := make([]byte, 32<<10)
		for {
			src.SetReadDeadline(time.Now().Add(idle / 20))
			n, err := src.Read(buf)
			if n > 0 {
				last.Store(time.Now().UnixNano())
				if _, werr := dst.Write(buf[:n]); werr != nil {
					closeAll()
					return
				}
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				if time.Since(time.Unix(0, last.Load())) > idle {
					p.cuts.Add(1)
					closeAll()
					return
				}
				continue
			}
			if err != nil {
				closeAll()
				return
			}
		}
	}
	go copyDir(b, c)
	go copyDir(c, b)
	<-done
}

// TestStreamSurvivesIdleProxy: a stream passes a proxy that cuts
// connections idle for a while, though the model stays silent longer than
// that twice (before each of its two tool calls), thanks to the keep-alive
// comments the stream sends meanwhile. The test waits on the mechanism,
// not on time: each silence of the model lasts until the client has read
// enough keep-alive comments to span more than the proxy's idle timeout,
// and the keep-alive interval is a fiftieth of that timeout, so that a
// loaded machine would have to stall the stream for most of it to break
// the test. The control, with keep-alives off and a silence longer than
// the timeout, is cut by the proxy.
func TestStreamSurvivesIdleProxy(t *testing.T) {
	const (
		idle      = time.Second
		keepAlive = idle / 50
		// A silence spans this many keep-alives: longer than idle.
		spans = 60
	)
	for _, withKeepAlive := range []bool{true, false} {
		name := "keep-alive"
		if !withKeepAlive {
			name = "control without keep-alive"
		}
		t.Run(name, func(t *testing.T) {
			llm := openaitest.New(t)
			eng, err := openai.New(openai.Config{BaseURL: llm.URL, MaxRetries: -1, Timeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			seen := &keepAliveCounter{more: make(chan struct{}, 1)}
			// silent holds the model's answer until the client has read
			// spans keep-alives more (or, without keep-alives, for longer
			// than the proxy's idle timeout).
			silent := func(step openaitest.Step) openaitest.Step {
				return func(w http.ResponseWriter, r *http.Request, req *openaitest.Request) {
					if withKeepAlive {
						seen.waitFor(seen.count() + spans)
					} else {
						time.Sleep(idle + idle/4)
					}
					step(w, r, req)
				}
			}
			llm.Push(
				silent(openaitest.ToolCalls(openaitest.Call{ID: "c1", Name: "create_task", Arguments: `{"title":"Call Bob"}`})),
				silent(openaitest.ToolCalls(openaitest.Call{ID: "c2", Name: "list_tasks", Arguments: `{}`})),
				openaitest.Text("Done."))
			f := &fixture{amstest.New(t, amstest.WithEngine(eng))}
			f.API.KeepAlive = keepAlive
			if !withKeepAlive {
				f.API.KeepAlive = time.Hour
			}
			proxy := newIdleProxy(t, f.Server.Listener.Addr().String(), idle)
			req, _ := http.NewRequest("POST", "http://"+proxy.ln.Addr().String()+"/v1/messages", strings.NewReader(f.streamBody("Remind me to call Bob")))
			req.Header.Set("Authorization", "Bearer "+f.Key)
			req.Header.Set("Content-Type", "application/json")
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			resp, err := (&http.Client{Transport: tr}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			seen.r = resp.Body
			br := bufio.NewReader(seen)
			var names []string
			var readErr error
			for {
				ev, err := readEvent(br)
				if err != nil {
					if err != io.EOF {
						readErr = err
					}
					break
				}
				names = append(names, ev.name)
			}
			got := strings.Join(names, " ")
			if withKeepAlive {
				if readErr != nil || proxy.cuts.Load() != 0 || seen.count() < 2*spans ||
					got != "turn.started tool_call tool_result tool_call tool_result message.delta message.completed turn.completed" {
					t.Fatalf("through the proxy: %s (%v, %d cuts, %d keep-alives)", got, readErr, proxy.cuts.Load(), seen.count())
				}
				return
			}
			if proxy.cuts.Load() == 0 || strings.HasSuffix(got, "message.completed") {
				t.Fatalf("the control was not cut: %s (%v)", got, readErr)
			}
			// The turn outlives its stream.
			if turn := f.waitTurn(resp.Header.Get("X-Turn-Id")); turn["status"] != "completed" {
				t.Fatalf("turn of the cut stream: %v", turn)
			}
		})
	}
}

// TestStreamOutlivesWriteTimeout: a stream lasts as long as its turn, past
// the server's WriteTimeout (ams serve sets 120 s; here 200 ms, with a
// turn of 500 ms): each write of a stream has its own deadline.
func TestStreamOutlivesWriteTimeout(t *testing.T) {
	f := &fixture{amstest.New(t, amstest.WithEngine(engineFunc(func(ctx context.Context, req *ams.EngineRequest) (*ams.Reply, error) {
		req.Stream("Slow ")
		time.Sleep(500 * time.Millisecond)
		req.Stream("answer.")
		return &ams.Reply{Content: "Slow answer."}, nil
	})))}
	f.API.KeepAlive = 50 * time.Millisecond
	srv := httptest.NewUnstartedServer(f.App.Handler())
	srv.Config.WriteTimeout = 200 * time.Millisecond
	srv.Start()
	defer srv.Close()
	req, _ := http.NewRequest("POST", srv.URL+"/v1/messages", strings.NewReader(f.streamBody("hi")))
	req.Header.Set("Authorization", "Bearer "+f.Key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	evs := readEvents(t, body)
	if err != nil || len(evs) == 0 || evs[len(evs)-1].name != "turn.completed" || !strings.Contains(string(body), ": keep-alive") {
		t.Fatalf("stream past the write timeout: %v\n%s", err, body)
	}
}

// keepAliveCounter reads a stream through, counting the keep-alive
// comments in it, and lets a goroutine wait for a count.
type keepAliveCounter struct {
	r    io.Reader
	mu   sync.Mutex
	n    int
	tail []byte // the end of the last read, for a comment cut in two
	more chan struct{}
}

const keepAliveComment = ": keep-alive\n"

func (c *keepAliveCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 {
		buf := append(c.tail, p[:n]...)
		k := strings.Count(string(buf), keepAliveComment)
		// Keep what could start a comment the next read completes.
		cut := max(0, len(buf)-len(keepAliveComment)+1)
		if i := strings.LastIndex(string(buf), keepAliveComment); i >= 0 {
			cut = max(cut, i+len(keepAliveComment))
		}
		c.tail = append([]byte(nil), buf[cut:]...)
		if k > 0 {
			c.mu.Lock()
			c.n += k
			c.mu.Unlock()
			select {
			case c.more <- struct{}{}:
			default:
			}
		}
	}
	return n, err
}

func (c *keepAliveCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// waitFor returns once the count reaches n, or after a minute (then the
// test fails on what the stream carried).
func (c *keepAliveCounter) waitFor(n int) {
	deadline := time.After(time.Minute)
	for c.count() < n {
		select {
		case <-c.more:
		case <-deadline:
			return
		}
	}
}
