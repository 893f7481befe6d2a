package http_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/amsdev/ams/clientaddr"
	"github.com/amsdev/ams/internal/testing/amstest"
)

// lockedBuffer is a log destination safe for concurrent writes: the
// tests read the server's log lines from it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Split(strings.TrimSpace(l.b.String()), "\n")
}

// errors returns the lines logged at level ERROR.
func (l *lockedBuffer) errors() []string {
	var out []string
	for _, line := range l.lines() {
		if strings.Contains(line, "level=ERROR") {
			out = append(out, line)
		}
	}
	return out
}

// TestRequestLogClient: the request log line names the client address:
// the connecting one, or behind a trusted proxy the one it reports.
func TestRequestLogClient(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		proxies clientaddr.Proxies
		want    string
	}{
		{"no trusted proxies", nil, "127.0.0.1"},
		{"behind a trusted proxy", clientaddr.Proxies{netip.MustParsePrefix("127.0.0.1/32")}, "203.0.113.9"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var logs lockedBuffer
			f := &fixture{amstest.New(t, amstest.WithTrustedProxies(c.proxies), amstest.WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))}
			r := f.do("GET", "/v1/assistants", "", "X-Forwarded-For", "198.51.100.1, 203.0.113.9")
			if r.status != 200 {
				t.Fatalf("GET /v1/assistants: %d", r.status)
			}
			found := false
			for _, line := range logs.lines() {
				var m map[string]any
				if json.Unmarshal([]byte(line), &m) != nil || m["msg"] != "request" || m["path"] != "/v1/assistants" {
					continue
				}
				found = true
				if m["client"] != c.want {
					t.Errorf("log line client %v, want %s: %s", m["client"], c.want, line)
				}
			}
			if !found {
				t.Errorf("no request log line:\n%s", strings.Join(logs.lines(), "\n"))
			}
		})
	}
}

// TestMixedClientAddressHeaders (issue 26, M1): from a trusted proxy, a
// request that has both Forwarded and X-Forwarded-For while no
// --client-address-header is named is refused with the documented error
// (400 client_address_ambiguous), logged under the proxy's address, with
// one warning for the operator however many are refused; a POST refused
// so stores nothing. With the header named, only it is read.
func TestMixedClientAddressHeaders(t *testing.T) {
	t.Parallel()
	loopback := clientaddr.Proxies{netip.MustParsePrefix("127.0.0.1/32")}
	var logs lockedBuffer
	f := &fixture{amstest.New(t, amstest.WithTrustedProxies(loopback), amstest.WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))}
	mixed := []string{"Forwarded", "for=198.51.100.77", "X-Forwarded-For", "203.0.113.9"}
	for range 3 {
		wantError(t, f.do("GET", "/v1/assistants", "", mixed...), 400, "invalid_request_error", "client_address_ambiguous", "")
	}
	before := f.counts()
	wantError(t, f.do("POST", "/v1/conversations", `{}`, mixed...), 400, "invalid_request_error", "client_address_ambiguous", "")
	if after := f.counts(); after != before {
		t.Errorf("a refused POST stored something: %v, then %v", before, after)
	}
	warnings, clients := 0, map[any]int{}
	for _, line := range logs.lines() {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil {
			continue
		}
		if m["level"] == "WARN" && strings.Contains(m["msg"].(string), "--client-address-header") {
			warnings++
		}
		if m["msg"] == "request" {
			clients[m["client"]]++
		}
	}
	if warnings != 1 {
		t.Errorf("%d warnings, want 1:\n%s", warnings, strings.Join(logs.lines(), "\n"))
	}
	if clients["127.0.0.1"] != 4 || len(clients) != 1 {
		t.Errorf("request log clients %v, want the proxy's address 4 times", clients)
	}
	// Either header alone is read as before.
	for _, h := range [][]string{{"Forwarded", "for=203.0.113.9"}, {"X-Forwarded-For", "203.0.113.9"}} {
		if r := f.do("GET", "/v1/assistants", "", h...); r.status != 200 {
			t.Errorf("%s alone: %d %s", h[0], r.status, r.body)
		}
	}

	named := &fixture{amstest.New(t, amstest.WithTrustedProxies(loopback), amstest.WithClientAddressHeader("X-Forwarded-For"),
		amstest.WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))}
	if r := named.do("GET", "/v1/tasks", "", mixed...); r.status != 200 {
		t.Fatalf("with --client-address-header: %d %s", r.status, r.body)
	}
	found := false
	for _, line := range logs.lines() {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == "request" && m["path"] == "/v1/tasks" {
			found = true
			if m["client"] != "203.0.113.9" {
				t.Errorf("with --client-address-header X-Forwarded-For, client %v, want 203.0.113.9", m["client"])
			}
		}
	}
	if !found {
		t.Error("no request log line for /v1/tasks")
	}
}
