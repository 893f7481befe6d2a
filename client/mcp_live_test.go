package client_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/amsdev/ams/client"
	"github.com/amsdev/ams/internal/testing/mcptest"
)

// TestMCPIntegrationLive connects the reference MCP server through the
// client, lists its tools and runs one as an action, on both engines.
func TestMCPIntegrationLive(t *testing.T) {
	srv := mcptest.Start(t)
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			f := liveFixture(t, engine)
			ctx := context.Background()
			c := client.New(f.Server.URL, f.Key)
			in, err := c.CreateIntegration(ctx, client.CreateIntegrationParams{Provider: client.ProviderMCP, Name: "everything", URL: srv.URL,
				Headers: map[string]string{"Authorization": "Bearer t0ken"}, RequireApproval: []string{"echo"}})
			if err != nil || in.Status != client.IntegrationConnected || in.Name == nil || *in.Name != "everything" || in.URL == nil || *in.URL != srv.URL {
				t.Fatalf("CreateIntegration: %+v %v", in, err)
			}
			got, err := c.GetIntegration(ctx, in.ID)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range got.Tools {
				names = append(names, tool.Name)
				if len(tool.InputSchema) == 0 {
					t.Fatalf("tool %s has no schema", tool.Name)
				}
			}
			if !slices.Contains(names, "get-sum") || !slices.Equal(got.RequireApproval, []string{"echo"}) {
				t.Fatalf("tools %v, require_approval %v", names, got.RequireApproval)
			}
			act, err := c.RunAction(ctx, f.Assistant.ID, client.RunActionParams{Type: "everything__get-sum", Input: map[string]any{"a": 40, "b": 2}})
			if err != nil || act.Status != client.ActionSucceeded || !strings.Contains(string(act.Result), "42") {
				t.Fatalf("RunAction: %+v %v", act, err)
			}
			var apiErr *client.Error
			_, err = c.RunAction(ctx, f.Assistant.ID, client.RunActionParams{Type: "everything__get-sum", Input: map[string]any{"a": "x", "b": 2}})
			if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Param != "input.a" {
				t.Fatalf("schema violation: %v", err)
			}
			if in, err = c.SyncIntegration(ctx, in.ID); err != nil || in.Status != client.IntegrationConnected || len(in.Tools) == 0 {
				t.Fatalf("SyncIntegration: %+v %v", in, err)
			}
			if err := c.DeleteIntegration(ctx, in.ID); err != nil {
				t.Fatal(err)
			}
		})
	}
}
