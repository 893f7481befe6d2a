package ssrf

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"
)

// TestClientBounds: the answers of a Client are bounded in header bytes,
// body bytes (after decompression) and time, with errors that say so.
func TestClientBounds(t *testing.T) {
	big := strings.Repeat("a", 100<<10)
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	zw.Write(bytes.Repeat([]byte("b"), 4<<20))
	zw.Close()
	release := make(chan struct{})
	defer close(release)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/headers":
			w.Header().Set("X-Big", big)
		case "/body":
			w.Write([]byte(big))
		case "/gzip":
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(bomb.Bytes())
		case "/small":
			w.Write([]byte("ok"))
		case "/slow":
			w.Write([]byte("a"))
			w.(http.Flusher).Flush()
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
	}))
	defer srv.Close()
	c := (&Guard{AllowPrivate: true}).Client(Limits{Timeout: 200 * time.Millisecond, MaxHeaderBytes: 16 << 10, MaxBodyBytes: 64 << 10})
	defer c.CloseIdleConnections()
	get := func(path string) ([]byte, error) {
		resp, err := c.Get(srv.URL + path)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		return io.ReadAll(resp.Body)
	}

	_, err := get("/headers")
	var tl *TooLargeError
	if !errors.Is(err, ErrTooLarge) || !errors.As(err, &tl) || tl.Part != "headers" || tl.Limit != 16<<10 {
		t.Fatalf("huge headers: %v", err)
	}
	if !strings.Contains(err.Error(), "headers exceed the limit of 16 KiB") {
		t.Errorf("message %q", err)
	}
	for _, path := range []string{"/body", "/gzip"} {
		b, err := get(path)
		if !errors.As(err, &tl) || tl.Part != "body" || len(b) != 64<<10 {
			t.Fatalf("%s: %d bytes, %v", path, len(b), err)
		}
		if !strings.Contains(err.Error(), "body exceeds the limit of 64 KiB") {
			t.Errorf("message %q", err)
		}
	}
	if b, err := get("/small"); err != nil || string(b) != "ok" {
		t.Fatalf("small answer: %q %v", b, err)
	}
	// A body that never ends is cut by the exchange's deadline, after
	// the headers came.
	_, err = get("/slow")
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("slow body: %v, want a timeout", err)
	}
}

// TestClientDefaults: a zero Limits gets the defaults, and the client
// refuses internal addresses unless the Guard allows them.
func TestClientDefaults(t *testing.T) {
	c := (&Guard{}).Client(Limits{})
	bt := c.Transport.(*boundedTransport)
	if c.Timeout != DefaultTimeout || bt.t.MaxResponseHeaderBytes != DefaultMaxHeaderBytes || bt.limits.MaxBodyBytes != DefaultMaxBodyBytes || bt.t.Proxy != nil {
		t.Fatalf("defaults: timeout %s, headers %d, body %d", c.Timeout, bt.t.MaxResponseHeaderBytes, bt.limits.MaxBodyBytes)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	if _, err := c.Get(srv.URL); !errors.Is(err, ErrBlocked) {
		t.Fatalf("loopback: %v, want ErrBlocked", err)
	}
	if !Operator().AllowPrivate {
		t.Fatal("Operator refuses internal addresses")
	}
}

// TestDialBounded: a connection of DialBounded reads at most MaxReadBytes
// and lives at most Timeout, whatever deadline its user sets.
func TestDialBounded(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := bytes.Repeat([]byte("x"), 4096)
				for {
					if _, err := c.Write(buf); err != nil {
						return
					}
					if _, err := c.Read(buf[:1]); err != nil { // one byte sent per block read: the pace is the client's
						return
					}
				}
			}()
		}
	}()
	dial := Operator().DialBounded(ConnLimits{Timeout: 300 * time.Millisecond, MaxReadBytes: 10000})
	conn, err := dial(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	read := 0
	buf := make([]byte, 4096)
	for {
		conn.Write([]byte{1})
		n, err := conn.Read(buf)
		read += n
		if err != nil {
			if !errors.Is(err, ErrTooLarge) || read != 10000 {
				t.Fatalf("read %d bytes, then %v; want 10000, then ErrTooLarge", read, err)
			}
			break
		}
	}

	conn2, err := dial(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close()
	conn2.SetDeadline(time.Now().Add(time.Hour))
	io.ReadFull(conn2, buf)  // the first block
	_, err = conn2.Read(buf) // nothing more comes: the server waits for a byte
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read after the connection's time: %v, want a timeout", err)
	}
}

// TestWithoutKeepAlives: the copy of a bounded client dials a new
// connection for every request, keeps its bounds, and leaves the
// original's pool as it was.
func TestWithoutKeepAlives(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			w.Write(bytes.Repeat([]byte("x"), 2048))
		}
	}))
	t.Cleanup(srv.Close)
	orig := (&Guard{AllowPrivate: true}).Client(Limits{MaxBodyBytes: 1024})
	fresh := WithoutKeepAlives(orig)
	get := func(c *http.Client, path string) (reused bool, err error) {
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
			GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused },
		}))
		resp, err := c.Do(req)
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		_, err = io.ReadAll(resp.Body)
		return reused, err
	}
	for i := range 3 {
		reused, err := get(fresh, "/big")
		if reused {
			t.Fatalf("request %d of the copy reused a connection", i)
		}
		if !errors.Is(err, ErrTooLarge) {
			t.Fatalf("request %d of the copy: %v, want the body bound", i, err)
		}
	}
	get(orig, "/")
	if reused, _ := get(orig, "/"); !reused {
		t.Fatal("the original client no longer keeps connections alive")
	}
}
