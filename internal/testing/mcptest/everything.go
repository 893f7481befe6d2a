// Package mcptest runs the reference MCP server,
// @modelcontextprotocol/server-everything (npm, installed by `npm ci
// --prefix mcp/testdata/everything`), in its streamableHttp mode for
// tests, bound to 127.0.0.1 only by the preload
// mcp/testdata/everything/bind-localhost.cjs.
//
// A test that needs it skips when node or the package is missing, and
// fails instead when AMS_REQUIRE_NODE_TESTS=1 (as in CI, whose .ci/run
// installs them).
package mcptest

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Everything is a running reference server.
type Everything struct {
	// URL is its MCP endpoint, http://127.0.0.1:<port>/mcp.
	URL string

	t    testing.TB
	dir  string
	port int

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// Dir is the folder of the reference server's package.json and lock file.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "mcp", "testdata", "everything")
}

// entry is the server's script.
func entry(dir string) string {
	return filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
}

// Need skips t (fails it when AMS_REQUIRE_NODE_TESTS=1) unless node and
// the reference server's package are installed.
func Need(t testing.TB) {
	t.Helper()
	_, nodeErr := exec.LookPath("node")
	_, modErr := os.Stat(entry(Dir()))
	if nodeErr != nil || modErr != nil {
		msg := "node or @modelcontextprotocol/server-everything is missing: run `npm ci --prefix mcp/testdata/everything`"
		if os.Getenv("AMS_REQUIRE_NODE_TESTS") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
}

// Start runs the reference server on a free loopback port until the test
// ends (Need first).
func Start(t testing.TB) *Everything {
	t.Helper()
	Need(t)
	e := &Everything{t: t, dir: Dir()}
	e.start(0)
	e.URL = "http://127.0.0.1:" + strconv.Itoa(e.port) + "/mcp"
	t.Cleanup(e.Stop)
	return e
}

// Stop ends the server (as a crash would: SIGKILL) and waits for it to
// exit; its port is free again.
func (e *Everything) Stop() {
	e.mu.Lock()
	cmd, done := e.cmd, e.done
	e.cmd = nil
	e.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-done
}

// Restart starts the server again on the port it had.
func (e *Everything) Restart() {
	e.t.Helper()
	e.Stop()
	e.start(e.port)
}

func (e *Everything) start(port int) {
	t := e.t
	t.Helper()
	cmd := exec.Command("node", "--require", filepath.Join(e.dir, "bind-localhost.cjs"), entry(e.dir), "streamableHttp")
	cmd.Dir = e.dir
	// A minimal environment: the server has a tool (get-env) that shows
	// its environment.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "PORT=" + strconv.Itoa(port), "HOME=" + os.TempDir()}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the reference MCP server: %v", err)
	}
	done := make(chan struct{})
	listening := make(chan int, 1)
	var mu sync.Mutex
	var lines []string
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			if p, ok := strings.CutPrefix(line, "AMS_LISTENING "); ok {
				if _, port, ok := strings.Cut(p, " "); ok {
					n, _ := strconv.Atoi(port)
					select {
					case listening <- n:
					default:
					}
				}
				continue
			}
			mu.Lock()
			if len(lines) < 50 {
				lines = append(lines, line)
			}
			mu.Unlock()
		}
		_ = cmd.Wait()
		close(done)
	}()
	select {
	case p := <-listening:
		e.mu.Lock()
		e.port, e.cmd, e.done = p, cmd, done
		e.mu.Unlock()
	case <-done:
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("the reference MCP server exited before listening:\n%s", strings.Join(lines, "\n"))
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatal("the reference MCP server did not listen within 60 s")
	}
}
