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
	"github.com/amsdev/ams/internal/amstest"
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
