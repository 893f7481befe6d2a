package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/amsdev/ams/internal/testing/mcptest"
	"github.com/amsdev/ams/mcp"
	"github.com/amsdev/ams/ssrf"
)

// TestEverything connects to the reference server, lists its tools and
// calls get-sum and echo.
func TestEverything(t *testing.T) {
	srv := mcptest.Start(t)
	c := mcp.New(mcp.Options{Guard: &ssrf.Guard{AllowPrivate: true}})
	ctx := context.Background()
	tools, err := c.ListTools(ctx, srv.URL, map[string]string{"Authorization": "Bearer x"})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, tool := range tools {
		names[tool.Name] = string(tool.InputSchema)
	}
	for _, want := range []string{"get-sum", "echo"} {
		if _, ok := names[want]; !ok {
			t.Fatalf("no tool %s in %v", want, names)
		}
	}
	if !strings.Contains(names["get-sum"], `"a"`) {
		t.Errorf("get-sum schema: %s", names["get-sum"])
	}
	res, err := c.CallTool(ctx, srv.URL, nil, "get-sum", json.RawMessage(`{"a": 2, "b": 3}`))
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || !strings.Contains(string(res.Content), "5") {
		t.Errorf("get-sum: %+v %s", res, res.Content)
	}
	res, err = c.CallTool(ctx, srv.URL, nil, "echo", json.RawMessage(`{"message": "hello there"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res.Content), "hello there") {
		t.Errorf("echo: %s", res.Content)
	}
}

// TestEverythingStopped: a server that went away is ServerDown, and the
// strict guard refuses a loopback URL before anything is sent.
func TestEverythingStopped(t *testing.T) {
	srv := mcptest.Start(t)
	ctx := context.Background()
	strict := mcp.New(mcp.Options{})
	_, err := strict.ListTools(ctx, srv.URL, nil)
	var me *mcp.Error
	if !errors.As(err, &me) || !strings.Contains(me.Reason, "https") {
		t.Fatalf("strict guard, http: %v", err)
	}
	_, err = strict.ListTools(ctx, strings.Replace(srv.URL, "http:", "https:", 1), nil)
	if !errors.As(err, &me) || !me.Blocked {
		t.Fatalf("strict guard, loopback: %v", err)
	}
	c := mcp.New(mcp.Options{Guard: &ssrf.Guard{AllowPrivate: true}})
	srv.Stop()
	_, err = c.CallTool(ctx, srv.URL, nil, "echo", json.RawMessage(`{"message": "x"}`))
	if !errors.As(err, &me) || !me.ServerDown {
		t.Fatalf("stopped: %v", err)
	}
	t.Log(err)
	srv.Restart()
	if _, err := c.CallTool(ctx, srv.URL, nil, "echo", json.RawMessage(`{"message": "x"}`)); err != nil {
		t.Fatal(err)
	}
}

// TestEverythingCaps: a result larger than MaxResultBytes is cut to its
// first text and marked truncated; an error the server answers is the
// call's failure, not the server's (ServerDown false).
func TestEverythingCaps(t *testing.T) {
	srv := mcptest.Start(t)
	ctx := context.Background()
	c := mcp.New(mcp.Options{Guard: &ssrf.Guard{AllowPrivate: true}, MaxResultBytes: 256})
	long := strings.Repeat("word ", 200)
	res, err := c.CallTool(ctx, srv.URL, nil, "echo", json.RawMessage(`{"message": "`+long+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Truncated || len(res.Content) > 256 || !strings.Contains(string(res.Content), "word word") {
		t.Fatalf("truncated result: %+v %s", res, res.Content)
	}
	// An unknown tool: the server answers a JSON-RPC error (or, as
	// newer servers do, a result with isError).
	res, err = c.CallTool(ctx, srv.URL, nil, "no-such-tool", nil)
	var me *mcp.Error
	switch {
	case err == nil && !res.IsError:
		t.Fatalf("an unknown tool answered %s", res.Content)
	case errors.As(err, &me) && me.ServerDown:
		t.Fatalf("a JSON-RPC error counted as the server down: %v", err)
	}
}
