package app

import (
	"context"
	"encoding/json"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/tracing"
	"go.opentelemetry.io/otel/attribute"
)

// The engines and toolboxes of a traced server (tracing on when New
// runs) are wrapped so that each engine call and tool call is a span,
// a child of its turn's; untraced, they are used as they are.

// tracedEngineFor wraps the engines that engineFor chooses.
func tracedEngineFor(engineFor func(*ams.Assistant) (ams.Engine, error)) func(*ams.Assistant) (ams.Engine, error) {
	if !tracing.On() {
		return engineFor
	}
	return func(a *ams.Assistant) (ams.Engine, error) {
		e, err := engineFor(a)
		if err != nil || e == nil {
			return e, err
		}
		return tracedEngine{e}, nil
	}
}

// tracedEngine makes each reply of its engine a span.
type tracedEngine struct{ ams.Engine }

func (e tracedEngine) Reply(ctx context.Context, req *ams.EngineRequest) (*ams.Reply, error) {
	var model string
	if req.Assistant != nil {
		model = req.Assistant.Model
	}
	ctx, span := tracing.Start(ctx, "engine.reply", attribute.String(tracing.KeyModel, model))
	r, err := e.Engine.Reply(ctx, req)
	tracing.End(span, err)
	return r, err
}

// tracedTools wraps the toolboxes that tools returns.
func tracedTools(tools func(string, *ams.Assistant, string) ams.Toolbox) func(string, *ams.Assistant, string) ams.Toolbox {
	if !tracing.On() || tools == nil {
		return tools
	}
	return func(userID string, a *ams.Assistant, conversationID string) ams.Toolbox {
		tb := tools(userID, a, conversationID)
		if tb == nil {
			return nil
		}
		return tracedToolbox{tb, userID}
	}
}

// tracedToolbox makes each tool call of its toolbox a span.
type tracedToolbox struct {
	ams.Toolbox
	userID string
}

// NeedsApproval passes on the toolbox's (world's toolbox: the MCP
// integrations' require_approval).
func (b tracedToolbox) NeedsApproval(name string) bool {
	n, ok := b.Toolbox.(interface{ NeedsApproval(string) bool })
	return ok && n.NeedsApproval(name)
}

func (b tracedToolbox) Run(ctx context.Context, name string, input json.RawMessage) (*ams.Action, error) {
	ctx, span := tracing.Start(ctx, "tool.call", attribute.String(tracing.KeyTool, name),
		tracing.Account(b.userID), tracing.Turn(ams.ToolCallFrom(ctx).TurnID))
	act, err := b.Toolbox.Run(ctx, name, input)
	if err == nil && act != nil && act.Status == ams.ActionFailed {
		span.SetAttributes(attribute.Bool("ams.tool_failed", true))
	}
	tracing.End(span, err)
	return act, err
}
