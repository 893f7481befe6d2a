// Package hostile plays the peers ams talks to as an attacker (or a broken
// server) would: huge and endless headers and bodies, answers that trickle
// a byte at a time, gzip bombs, malformed protocol and hangs. Its tests
// (hostile_test.go and the files beside it) drive real ams code paths
// against each behaviour — a webhook delivery through the store, a CalDAV
// sync, a turn with the openai engine, an e-mail sent through the mail
// queue — and assert that memory stays bounded (the allocation growth of
// the run, see Measure) and that the failure is recorded where the user
// sees it.
//
// Peers listen on 127.0.0.1 only. An endless peer stops when the client
// goes away (its writes fail) or at Ceiling bytes, so that a client
// without bounds ends too (and a test shows it read everything); a
// trickle's pace is the test's, so that time bounds injected into the
// code under test can be small.
//
// Adding a peer: an HTTP peer (such as an MCP server, which speaks
// JSON-RPC over HTTP) is an HTTP with a Script choosing an Act per request
// (the Acts here serve any HTTP protocol); a peer of another protocol
// follows Line, a raw TCP server that runs a function per connection.
package hostile

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Ceiling is where an "endless" peer stops sending, 32 MiB: four times
// the largest answer ams reads (a model provider's, 8 MiB), so that a
// client that reads it all is told apart, and small enough that a client
// without bounds does not take the test machine down.
const Ceiling = 32 << 20

// Conn is one accepted connection of a peer. Writes count the bytes sent.
type Conn struct {
	net.Conn
	peer *peer
	R    *bufio.Reader
}

// Write sends p and counts it.
func (c *Conn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.peer.sent.Add(int64(n))
	return n, err
}

// peer is what HTTP and Line share: a listener, its connections and the
// bytes sent.
type peer struct {
	ln    net.Listener
	sent  atomic.Int64
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[net.Conn]bool
	// gone is signalled (without blocking) each time a connection's
	// handler returns: the client went away or the peer finished.
	gone chan struct{}
}

func listen(t testing.TB, serve func(c *Conn)) *peer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &peer{ln: ln, conns: map[net.Conn]bool{}, gone: make(chan struct{}, 64)}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			p.conns[c] = true
			p.mu.Unlock()
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				defer func() {
					c.Close()
					p.mu.Lock()
					delete(p.conns, c)
					p.mu.Unlock()
					select {
					case p.gone <- struct{}{}:
					default:
					}
				}()
				serve(&Conn{Conn: c, peer: p, R: bufio.NewReader(c)})
			}()
		}
	}()
	t.Cleanup(p.close)
	return p
}

func (p *peer) close() {
	p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// Sent returns the bytes the peer has sent so far.
func (p *peer) Sent() int64 { return p.sent.Load() }

// Gone is signalled each time one of the peer's connections ends.
func (p *peer) Gone() <-chan struct{} { return p.gone }

// Addr is the peer's address, 127.0.0.1:port.
func (p *peer) Addr() string { return p.ln.Addr().String() }

// Act answers one HTTP request by writing raw bytes on the connection;
// it returns false to close the connection.
type Act func(c *Conn, req *http.Request) bool

// HTTP is a hostile HTTP/1.1 server: each request read is answered by the
// Act its script chooses.
type HTTP struct {
	*peer
	// URL is http://127.0.0.1:port.
	URL string
}

// NewHTTP starts an HTTP peer; script chooses the Act of each request
// (its body has been read into memory, at most 1 MiB).
func NewHTTP(t testing.TB, script func(req *http.Request) Act) *HTTP {
	h := &HTTP{}
	h.peer = listen(t, func(c *Conn) {
		for {
			req, err := http.ReadRequest(c.R)
			if err != nil {
				return
			}
			body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
			req.Body = io.NopCloser(bytes.NewReader(body))
			if !script(req)(c, req) {
				return
			}
		}
	})
	h.URL = "http://" + h.Addr()
	return h
}

// Always is a script answering every request with act.
func Always(act Act) func(*http.Request) Act { return func(*http.Request) Act { return act } }

// head writes a status line and headers (and the blank line after them
// when end).
func head(c *Conn, status int, header []string, end bool) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", status, http.StatusText(status))
	for _, h := range header {
		b.WriteString(h + "\r\n")
	}
	if end {
		b.WriteString("\r\n")
	}
	_, err := c.Write(b.Bytes())
	return err
}

// Answer is a well-formed answer with a body.
func Answer(status int, contentType string, body []byte) Act {
	return func(c *Conn, _ *http.Request) bool {
		if head(c, status, []string{"Content-Type: " + contentType, "Content-Length: " + strconv.Itoa(len(body))}, true) != nil {
			return false
		}
		_, err := c.Write(body)
		return err == nil
	}
}

// repeat writes unit again and again until limit bytes are sent or the
// client goes away.
func repeat(w io.Writer, unit []byte, limit int64) {
	buf := bytes.Repeat(unit, max(1, (32<<10)/len(unit)))
	for sent := int64(0); sent < limit; {
		n, err := w.Write(buf)
		sent += int64(n)
		if err != nil {
			return
		}
	}
}

// HugeHeaders answers with header lines (of about 1 KiB each) without
// end: up to Ceiling bytes, far beyond Go's default limit of 10 MB.
func HugeHeaders(status int) Act {
	line := append([]byte("X-Padding: "), bytes.Repeat([]byte("a"), 1010)...)
	line = append(line, "\r\n"...)
	return func(c *Conn, _ *http.Request) bool {
		if head(c, status, []string{"Content-Type: text/plain"}, false) != nil {
			return false
		}
		repeat(c, line, Ceiling)
		return false
	}
}

// EndlessBody answers with headers, then prefix, then unit again and
// again: up to Ceiling bytes, without Content-Length.
func EndlessBody(status int, contentType string, prefix, unit []byte) Act {
	return func(c *Conn, _ *http.Request) bool {
		if head(c, status, []string{"Content-Type: " + contentType, "Connection: close"}, true) != nil {
			return false
		}
		if _, err := c.Write(prefix); err != nil {
			return false
		}
		repeat(c, unit, Ceiling)
		return false
	}
}

// Bomb is a gzip bomb: a small gzip stream that decompresses to prefix
// followed by unit repeated, 128 MiB in all.
type Bomb struct {
	Compressed []byte
	Size       int64 // decompressed
}

var bombs sync.Map // string(prefix+unit) -> *Bomb

// NewBomb returns the bomb of prefix and unit. It compresses 1 MiB once
// and repeats that gzip member: a gzip stream may hold several, and
// readers (Go's among them) decompress them one after the other.
func NewBomb(prefix, unit []byte) *Bomb {
	key := string(prefix) + "\x00" + string(unit)
	if b, ok := bombs.Load(key); ok {
		return b.(*Bomb)
	}
	member := func(write func(io.Writer)) []byte {
		var out bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&out, gzip.BestCompression)
		write(zw)
		zw.Close()
		return out.Bytes()
	}
	const chunks = 128
	b := &Bomb{Compressed: member(func(w io.Writer) { w.Write(prefix) }), Size: int64(len(prefix))}
	var n counter
	m := member(func(w io.Writer) { repeat(io.MultiWriter(w, &n), unit, 1<<20) })
	for range chunks {
		b.Compressed = append(b.Compressed, m...)
	}
	b.Size += chunks * int64(n)
	bombs.Store(key, b)
	return b
}

// counter counts the bytes written to it.
type counter int64

func (c *counter) Write(p []byte) (int, error) { *c += counter(len(p)); return len(p), nil }

// GzipBomb answers with bomb as a gzip-encoded body.
func GzipBomb(status int, contentType string, bomb *Bomb) Act {
	return func(c *Conn, _ *http.Request) bool {
		if head(c, status, []string{"Content-Type: " + contentType, "Content-Encoding: gzip",
			"Content-Length: " + strconv.Itoa(len(bomb.Compressed))}, true) != nil {
			return false
		}
		_, err := c.Write(bomb.Compressed)
		return err == nil
	}
}

// Trickle answers with status and headers, then prefix, then one byte
// of unit every interval, without end: until the client goes away.
func Trickle(status int, contentType string, prefix, unit []byte, every time.Duration) Act {
	return func(c *Conn, _ *http.Request) bool {
		if head(c, status, []string{"Content-Type: " + contentType, "Connection: close"}, true) != nil {
			return false
		}
		if _, err := c.Write(prefix); err != nil {
			return false
		}
		trickle(c, unit, every)
		return false
	}
}

// TrickleHeaders sends the status line, then header bytes one every
// interval, without end.
func TrickleHeaders(status int, every time.Duration) Act {
	return func(c *Conn, _ *http.Request) bool {
		if head(c, status, nil, false) != nil {
			return false
		}
		trickle(c, []byte("X-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n"), every)
		return false
	}
}

// trickle writes the bytes of unit one at a time, every interval, until
// a write fails (the client went away and the connection was closed).
func trickle(c *Conn, unit []byte, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for i := 0; ; i++ {
		if _, err := c.Write(unit[i%len(unit) : i%len(unit)+1]); err != nil {
			return
		}
		<-t.C
	}
}

// Hang reads the request and answers nothing, until the client goes away.
func Hang() Act {
	return func(c *Conn, _ *http.Request) bool {
		io.Copy(io.Discard, c.R)
		return false
	}
}

// Garbage answers with bytes that are not HTTP.
func Garbage() Act {
	return func(c *Conn, _ *http.Request) bool {
		c.Write([]byte("SSH-2.0-OpenSSH_9.6\r\n\x00\x01\x02 this is not HTTP\r\n\r\n"))
		return false
	}
}

// MCP is the script of an MCP server over Streamable HTTP (JSON
// answers, no session): it answers initialize and notifications as a
// server does, tools/list with list and tools/call with call (nil:
// RPCResult of {"tools": tools} and of an empty result).
func MCP(tools string, list, call Act) func(*http.Request) Act {
	if list == nil {
		list = RPCResult(`{"tools": ` + tools + `}`)
	}
	if call == nil {
		call = RPCResult(`{"content": []}`)
	}
	return func(req *http.Request) Act {
		var msg struct {
			Method string `json:"method"`
		}
		body, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
		_ = json.Unmarshal(body, &msg)
		switch {
		case req.Method != http.MethodPost:
			return Answer(http.StatusMethodNotAllowed, "text/plain", nil)
		case msg.Method == "initialize":
			return RPCResult(`{"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "hostile", "version": "1"}}`)
		case strings.HasPrefix(msg.Method, "notifications/"):
			return Answer(http.StatusAccepted, "application/json", nil)
		case msg.Method == "tools/list":
			return list
		case msg.Method == "tools/call":
			return call
		}
		return RPCResult(`{}`)
	}
}

// RPCResult answers a JSON-RPC request with result (JSON text), under
// the request's id.
func RPCResult(result string) Act {
	return func(c *Conn, req *http.Request) bool {
		var msg struct {
			ID json.RawMessage `json:"id"`
		}
		body, _ := io.ReadAll(req.Body)
		_ = json.Unmarshal(body, &msg)
		return Answer(http.StatusOK, "application/json", []byte(`{"jsonrpc": "2.0", "id": `+string(msg.ID)+`, "result": `+result+`}`))(c, req)
	}
}

// Line is a hostile server of a line protocol (SMTP): it runs serve on
// every connection.
type Line struct{ *peer }

// NewLine starts a line-protocol peer.
func NewLine(t testing.TB, serve func(c *Conn)) *Line {
	return &Line{peer: listen(t, serve)}
}

// Memory is a measurement of the memory allocated while code ran: see
// Measure.
type Memory struct {
	start runtime.MemStats
}

// Measure starts a measurement: it collects garbage, then reads the
// allocation counters.
func Measure() *Memory {
	runtime.GC()
	m := &Memory{}
	runtime.ReadMemStats(&m.start)
	return m
}

// Allocated returns the bytes allocated since Measure, by every goroutine
// (so tests that measure do not run in parallel). It is an upper bound of
// how much the heap grew meanwhile.
func (m *Memory) Allocated() int64 {
	var now runtime.MemStats
	runtime.ReadMemStats(&now)
	return int64(now.TotalAlloc - m.start.TotalAlloc)
}

// MiB formats n bytes in MiB for messages.
func MiB(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
