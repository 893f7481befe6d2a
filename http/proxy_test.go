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
	"github.com/amsdev/ams/internal/amstest"
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
// connections idle for 20 s, while the model takes 40 s over two tool
// rounds (25 s before its first tool call, 15 s before its second), thanks
// to the keep-alive comments sent every 15 s. Time is scaled down 100
// times (idle timeout 200 ms, keep-alive 150 ms, model 250 ms + 150 ms)
// so that the test takes well under a second. The control, with
// keep-alives off, is cut by the proxy.
func TestStreamSurvivesIdleProxy(t *testing.T) {
	const scale = 100
	idle, keepAlive := 20*time.Second/scale, 15*time.Second/scale
	for _, withKeepAlive := range []bool{true, false} {
		name := "keep-alive"
		if !withKeepAlive {
			name = "control without keep-alive"
		}
		t.Run(name, func(t *testing.T) {
			llm := openaitest.New(t)
			eng, err := openai.New(openai.Config{BaseURL: llm.URL, MaxRetries: -1, Timeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			slow := func(d time.Duration, step openaitest.Step) openaitest.Step {
				return func(w http.ResponseWriter, r *http.Request, req *openaitest.Request) {
					time.Sleep(d)
					step(w, r, req)
				}
			}
			llm.Push(
				slow(25*time.Second/scale, openaitest.ToolCalls(openaitest.Call{ID: "c1", Name: "create_task", Arguments: `{"title":"Call Bob"}`})),
				slow(15*time.Second/scale, openaitest.ToolCalls(openaitest.Call{ID: "c2", Name: "list_tasks", Arguments: `{}`})),
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
			br := bufio.NewReader(resp.Body)
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
				if readErr != nil || proxy.cuts.Load() != 0 ||
					got != "turn.started tool_call tool_result tool_call tool_result message.delta message.completed" {
					t.Fatalf("through the proxy: %s (%v, %d cuts)", got, readErr, proxy.cuts.Load())
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
	if err != nil || len(evs) == 0 || evs[len(evs)-1].name != "message.completed" || !strings.Contains(string(body), ": keep-alive") {
		t.Fatalf("stream past the write timeout: %v\n%s", err, body)
	}
}
