package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

// testMCPIntegrations: an MCP integration keeps its settings and tools
// (its headers sealed), is found by name among the account's
// integrations not disconnected, and its name is unique among those (a
// 400 naming name); disconnected, the name is free again. Actions keep
// their duration.
func testMCPIntegrations(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u, other := mustUser(t, s, "mcp@example.com"), mustUser(t, s, "mcp2@example.com")
	mk := func(user *ams.User, name string) *ams.Integration {
		return &ams.Integration{ID: ams.NewID(ams.PrefixIntegration), Object: "integration", UserID: user.ID, Provider: ams.ProviderMCP,
			Status: ams.IntegrationConnected, Config: map[string]any{"header_names": []any{"Authorization"}}, ConnectedAt: t0, CreatedAt: t0, UpdatedAt: t0,
			MCPSettings: &ams.MCPSettings{Name: name, URL: "https://mcp.example/" + name, AllowedTools: []string{"echo"}, RequireApproval: []string{"*"},
				Tools: []ams.IntegrationTool{{Name: "echo", Description: "Echoes.", InputSchema: json.RawMessage(`{"type":"object"}`)}}}}
	}
	in, theirs := mk(u, "everything"), mk(other, "everything")
	update(t, s, func(tx ams.Tx) error {
		if err := tx.CreateIntegration(ctx, in, map[string]string{"Authorization": "Bearer x"}); err != nil {
			return err
		}
		return tx.CreateIntegration(ctx, theirs, nil) // another account may use the name
	})
	got, err := s.FindIntegrationByName(ctx, u.ID, "everything")
	if err != nil || got.ID != in.ID || got.MCPSettings == nil || got.MCPSettings.Name != "everything" || got.MCPSettings.URL != in.MCPSettings.URL ||
		!slices.Equal(got.MCPSettings.AllowedTools, []string{"echo"}) || !slices.Equal(got.MCPSettings.RequireApproval, []string{"*"}) ||
		len(got.MCPSettings.Tools) != 1 || got.MCPSettings.Tools[0].Name != "echo" || string(got.MCPSettings.Tools[0].InputSchema) != `{"type":"object"}` {
		t.Fatalf("find by name: %+v %v", got, err)
	}
	if sec, err := s.IntegrationSecrets(ctx, u.ID, in.ID); err != nil || sec["Authorization"] != "Bearer x" {
		t.Fatalf("headers: %v %v", sec, err)
	}
	if _, err := s.FindIntegrationByName(ctx, u.ID, "nothing"); !ams.IsNotFound(err) {
		t.Fatalf("unknown name: %v", err)
	}
	if list, err := s.AccountIntegrations(ctx, u.ID, ams.ProviderMCP); err != nil || len(list) != 1 || list[0].ID != in.ID {
		t.Fatalf("account integrations: %v %v", list, err)
	}

	// The name is taken: a 400 naming name, nothing stored.
	dup := mk(u, "everything")
	err = s.Update(ctx, func(tx ams.Tx) error { return tx.CreateIntegration(ctx, dup, nil) })
	var e *ams.Error
	if !errors.As(err, &e) || e.Kind != ams.EINVALID || e.Param != "name" {
		t.Fatalf("a taken name: %v", err)
	}
	if _, err := s.FindIntegration(ctx, u.ID, dup.ID); !ams.IsNotFound(err) {
		t.Fatalf("the refused integration was stored: %v", err)
	}

	// An update keeps the name and changes the tools and status.
	update(t, s, func(tx ams.Tx) error {
		cur, err := tx.FindIntegrationByName(ctx, u.ID, "everything")
		if err != nil {
			return err
		}
		cur.MCPSettings.Tools = append(cur.MCPSettings.Tools, ams.IntegrationTool{Name: "add", InputSchema: json.RawMessage(`{}`)})
		cur.Status, cur.UpdatedAt = ams.IntegrationError, t0.Add(time.Minute)
		return tx.UpdateIntegration(ctx, cur)
	})
	if got, _ := s.FindIntegration(ctx, u.ID, in.ID); got.Status != ams.IntegrationError || len(got.MCPSettings.Tools) != 2 || got.MCPSettings.Name != "everything" {
		t.Fatalf("after update: %+v", got)
	}
	// Disconnected, it is found by name no more, and the name is free.
	update(t, s, func(tx ams.Tx) error {
		cur, err := tx.FindIntegration(ctx, u.ID, in.ID)
		if err != nil {
			return err
		}
		cur.Status = ams.IntegrationDisconnected
		return tx.UpdateIntegration(ctx, cur)
	})
	if _, err := s.FindIntegrationByName(ctx, u.ID, "everything"); !ams.IsNotFound(err) {
		t.Fatalf("a disconnected integration found by name: %v", err)
	}
	if list, _ := s.AccountIntegrations(ctx, u.ID, ams.ProviderMCP); len(list) != 0 {
		t.Fatalf("account integrations after disconnect: %v", list)
	}
	update(t, s, func(tx ams.Tx) error { return tx.CreateIntegration(ctx, dup, nil) })

	// Another provider has no MCP settings.
	cal := &ams.Integration{ID: ams.NewID(ams.PrefixIntegration), Object: "integration", UserID: u.ID, Provider: "caldav", Status: "connected",
		Config: map[string]any{}, ConnectedAt: t0, CreatedAt: t0, UpdatedAt: t0}
	update(t, s, func(tx ams.Tx) error { return tx.CreateIntegration(ctx, cal, nil) })
	if got, _ := s.FindIntegration(ctx, u.ID, cal.ID); got.MCPSettings != nil {
		t.Fatalf("caldav with MCP settings: %+v", got.MCPSettings)
	}

	// An action keeps its duration.
	a := mustAssistant(t, s, u, "a")
	act := &ams.Action{ID: ams.NewID(ams.PrefixAction), Object: "action", UserID: u.ID, AssistantID: a.ID, Type: "everything__echo",
		Input: []byte(`{}`), Status: ams.ActionSucceeded, Result: []byte(`{"content":[],"isError":false}`), DurationMS: 1234, CreatedAt: t0}
	update(t, s, func(tx ams.Tx) error { return tx.CreateAction(ctx, act) })
	if got, err := s.FindAction(ctx, u.ID, act.ID); err != nil || got.DurationMS != 1234 {
		t.Fatalf("action duration: %+v %v", got, err)
	}
}
