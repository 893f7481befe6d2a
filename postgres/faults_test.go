package postgres_test

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"

	"github.com/amsdev/ams/internal/testing/pgtest"
	"github.com/amsdev/ams/storetest"
)

// TestFaults: the shared fault tests, with the server gone played by a
// TCP proxy in front of it that the test cuts (connections closed, new
// ones closed at once) and restores; the shared server stays up.
func TestFaults(t *testing.T) {
	raw := databaseURL(t)
	storetest.RunFaults(t, func(t *testing.T) storetest.Faulty {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		p := newGate(t, u.Host)
		u.Host = p.ln.Addr().String()
		db := pgtest.OpenSchema(t, u.String(), freshSchema(t, raw))
		t.Cleanup(func() { p.set(true) }) // before the store closes
		return storetest.Faulty{Store: db, Break: func(*testing.T) { p.set(false) }, Mend: func(*testing.T) { p.set(true) }}
	})
}

// gate is a TCP proxy that is open (forwards) or shut (closes every
// connection, and each new one at once).
type gate struct {
	ln      net.Listener
	backend string
	mu      sync.Mutex
	open    bool
	conns   map[net.Conn]bool
	wg      sync.WaitGroup
}

func newGate(t *testing.T, backend string) *gate {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{ln: ln, backend: backend, open: true, conns: map[net.Conn]bool{}}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			g.mu.Lock()
			open := g.open
			g.mu.Unlock()
			if !open {
				c.Close()
				continue
			}
			b, err := net.Dial("tcp", backend)
			if err != nil {
				c.Close()
				continue
			}
			g.mu.Lock()
			g.conns[c], g.conns[b] = true, true
			g.mu.Unlock()
			g.wg.Add(2)
			go func() { defer g.wg.Done(); io.Copy(b, c); b.Close() }()
			go func() { defer g.wg.Done(); io.Copy(c, b); c.Close() }()
		}
	}()
	t.Cleanup(func() { g.set(false); ln.Close(); g.wg.Wait() })
	return g
}

// set opens or shuts the gate; shutting it closes every connection.
func (g *gate) set(open bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.open = open
	if !open {
		for c := range g.conns {
			c.Close()
		}
		clear(g.conns)
	}
}
