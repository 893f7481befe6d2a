package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amsdev/ams/client"
	"github.com/amsdev/ams/client/webhook"
	"github.com/amsdev/ams/internal/testing/amstest"
)

// cutProxy forwards TCP connections to target until cut closes every
// connection open (as a proxy or a network that drops them would); new
// connections are forwarded again.
type cutProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target}
	t.Cleanup(func() { ln.Close(); p.cut() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { io.Copy(up, c); up.Close() }()
			go func() { io.Copy(c, up); c.Close() }()
		}
	}()
	return p
}

func (p *cutProxy) URL() string { return "http://" + p.ln.Addr().String() }

func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// syncWriter is a writer safe for concurrent use that signals each write.
type syncWriter struct {
	mu    sync.Mutex
	s     strings.Builder
	wrote chan struct{}
}

func newSyncWriter() *syncWriter { return &syncWriter{wrote: make(chan struct{}, 1)} }

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.s.Write(p)
	w.mu.Unlock()
	select {
	case w.wrote <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.s.String()
}

// waitFor waits until the text written matches re and returns the match.
func (w *syncWriter) waitFor(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	timeout := time.After(time.Minute) // a bound for failure only
	for {
		if m := re.FindStringSubmatch(w.String()); m != nil {
			return m
		}
		select {
		case <-w.wrote:
		case <-timeout:
			t.Fatalf("no %s in:\n%s", re, w.String())
		}
	}
}

// TestListenForwardsAndResumes: ams listen forwards each event of the
// account, signed with the secret it prints (verified as a receiver
// verifies webhook deliveries), to a local receiver; when the stream is
// cut it resumes after the last event forwarded, so the events emitted
// meanwhile come once each, in order. ams trigger emits them.
func TestListenForwardsAndResumes(t *testing.T) {
	f := amstest.New(t)
	proxy := newCutProxy(t, f.Server.Listener.Addr().String())

	var mu sync.Mutex
	var secret string
	received := make(chan client.Event, 10)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		s := secret
		mu.Unlock()
		// Both signatures, as a delivery carries them.
		if err := webhook.VerifySignature(body, r.Header.Get("X-Service-Signature"), s); err != nil {
			t.Errorf("X-Service-Signature: %v", err)
		}
		ev, err := webhook.ConstructEvent(body, r.Header, s)
		if err != nil {
			t.Errorf("webhook-signature: %v (%v)", err, r.Header)
			http.Error(w, "bad signature", 400)
			return
		}
		if r.Header.Get("X-Service-Event") != ev.Type {
			t.Errorf("X-Service-Event %q for %s", r.Header.Get("X-Service-Event"), ev.Type)
		}
		received <- *ev
	}))
	defer recv.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdout, stderr := newSyncWriter(), newSyncWriter()
	listenDone := make(chan error, 1)
	go func() {
		root := newRoot()
		root.SetArgs([]string{"listen", "--forward-to", recv.URL, "--base-url", proxy.URL(), "--api-key", f.Key})
		root.SetOut(stdout)
		root.SetErr(stderr)
		listenDone <- root.ExecuteContext(ctx)
	}()
	m := stderr.waitFor(t, regexp.MustCompile(`signing secret is (whsec_[A-Za-z0-9+/=]+)`))
	mu.Lock()
	secret = m[1]
	mu.Unlock()
	if secret != listenSecret(f.Key) {
		t.Fatalf("printed secret %s", secret)
	}
	stderr.waitFor(t, regexp.MustCompile(`ready, forwarding events to`))

	trigger := func(typ string) string {
		t.Helper()
		root := newRoot()
		out := newSyncWriter()
		root.SetArgs([]string{"trigger", typ, "--base-url", f.Server.URL, "--api-key", f.Key})
		root.SetOut(out)
		if err := root.Execute(); err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(out.String())
	}
	first := trigger("task.created")
	if ev := <-received; ev.ID != first || ev.Type != "task.created" || !ev.Test {
		t.Fatalf("first forwarded: %+v, want %s", ev, first)
	}
	proxy.cut()
	var want []string
	for _, typ := range []string{"task.updated", "message.created"} {
		want = append(want, trigger(typ))
	}
	for _, id := range want {
		if ev := <-received; ev.ID != id {
			t.Fatalf("forwarded %s, want %s (in order, once each)", ev.ID, id)
		}
	}
	stderr.waitFor(t, regexp.MustCompile(`stream resumed after `+first))
	stdout.waitFor(t, regexp.MustCompile(want[1]+`  -> 200`))
	cancel()
	if err := <-listenDone; err != nil {
		t.Fatalf("listen ended with %v", err)
	}
	select {
	case ev := <-received:
		t.Fatalf("an event forwarded twice or unasked: %+v", ev)
	default:
	}
}

// TestRemoteFlags: listen and trigger name the flag at fault.
func TestRemoteFlags(t *testing.T) {
	t.Setenv("AMS_API_KEY", "")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"trigger", "task.created", "--base-url", "notaurl", "--api-key", "k"}, "--base-url must be an http:// or https:// URL"},
		{[]string{"trigger", "task.created", "--base-url", "http://127.0.0.1:1"}, "--api-key (or AMS_API_KEY) is required"},
		{[]string{"trigger", "nope", "--api-key", "k"}, `TYPE "nope" is no event type`},
		{[]string{"listen", "--api-key", "k"}, "--forward-to is required"},
		{[]string{"listen", "--api-key", "k", "--forward-to", "127.0.0.1:9000"}, "--forward-to must be an http:// or https:// URL"},
		{[]string{"listen", "--api-key", "k", "--forward-to", "http://127.0.0.1:9000", "--type", "x"}, `--type "x" is no event type`},
	} {
		root := newRoot()
		root.SetArgs(tt.args)
		root.SetOut(io.Discard)
		root.SetErr(io.Discard)
		cmd, err := root.ExecuteC()
		if err == nil || !strings.Contains(describe(cmd, err), tt.want) {
			t.Errorf("%v: %v, want %q", tt.args, err, tt.want)
		}
	}
}

// TestShutdownEndsEventStreams: a graceful shutdown ends the open event
// streams (their clients resume elsewhere) instead of waiting for them
// until --shutdown-timeout.
func TestShutdownEndsEventStreams(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o700)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdout := newSyncWriter()
	done := make(chan error, 1)
	go func() {
		root := newRoot()
		root.SetArgs([]string{"serve", "--dev", "--addr", "127.0.0.1:0", "--data-dir", dir, "--shutdown-timeout", "1h", "--log-level", "error"})
		root.SetOut(stdout)
		root.SetErr(io.Discard)
		done <- root.ExecuteContext(ctx)
	}()
	m := stdout.waitFor(t, regexp.MustCompile(`(?s)dev mode at (http://\S+).*API key\s+(ams_sk_\w+)`))
	req, _ := http.NewRequest("GET", m[1]+"/v1/events/stream", nil)
	req.Header.Set("Authorization", "Bearer "+m[2])
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("stream: %v %v", resp, err)
	}
	defer resp.Body.Close()
	cancel() // as SIGTERM does
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
	if _, err := io.ReadAll(resp.Body); err != nil {
		t.Fatalf("the stream did not end cleanly: %v", err)
	}
}
