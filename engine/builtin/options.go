package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/amsdev/ams"
)

// Per-request options (DESIGN.md, "Built-in engine"). The engine is
// deterministic, so what it does with them is too:
//
//   - client tools: it calls the tool tool_choice names; with "required"
//     the first tool; with "auto" (the default) a tool whose name the
//     message contains; with "none" none. The call's arguments are the
//     first JSON object in the message, else {}. Given the call's output
//     (EngineRequest.Calls) it replies "<name> returned: <output>".
//   - tokens are words: usage counts the words of the history (and of
//     the calls' outputs) as input and of the reply as output;
//     max_output_tokens cuts the reply to that many words
//     (stop_reason max_output_tokens).
//   - instructions: accepted; the engine reads no instructions, the
//     assistant's or the request's.
//   - response_format {"type": "json_schema"}: refused (CheckOptions),
//     since the engine cannot write to a schema; {"type": "text"} is
//     what it does anyway.
//
// Approval: a call of a Toolbox tool that EngineRequest.NeedsApproval
// names stops the reply with an approve_tool_calls required action
// before anything runs; resumed with the call's outcome in
// EngineRequest.Calls, the engine answers the same message again and
// takes the recorded outcome instead of running the call.

var _ ams.EngineChecker = (*Engine)(nil)

// CheckOptions refuses the options the engine cannot honour, with a 400
// unsupported_parameter naming the parameter: response_format
// json_schema; tool_choice "required" without client tools; tool_choice
// naming a tool that is not one of the request's client tools.
func (e *Engine) CheckOptions(o *ams.TurnOptions) error {
	if o == nil {
		return nil
	}
	if o.ResponseFormat != nil && o.ResponseFormat.Type != "" && o.ResponseFormat.Type != "text" {
		return unsupported("response_format", "The built-in engine cannot write a reply to a JSON schema; use an assistant with a model, or response_format {\"type\": \"text\"}.")
	}
	if c := o.ToolChoice; c != nil {
		switch c.Mode {
		case "required":
			if len(o.Tools) == 0 {
				return unsupported("tool_choice", "The built-in engine can only be required to call a client tool, and the request has none.")
			}
		case "function":
			if clientTool(o, c.Name) == nil {
				return unsupported("tool_choice", "The built-in engine can only be made to call one of the request's client tools, not '%s'.", ams.Clip(c.Name))
			}
		}
	}
	return nil
}

func unsupported(param, format string, args ...any) error {
	return ams.ParamError("unsupported_parameter", param, format, args...)
}

func clientTool(o *ams.TurnOptions, name string) *ams.ClientTool {
	if o == nil {
		return nil
	}
	for _, t := range o.Tools {
		if t != nil && t.Name == name {
			return t
		}
	}
	return nil
}

// clientCall returns the client tool call the message asks for, or nil.
func clientCall(o *ams.TurnOptions, message string) *ams.ToolCallRequest {
	if o == nil || len(o.Tools) == 0 {
		return nil
	}
	var tool *ams.ClientTool
	mode, name := "auto", ""
	if o.ToolChoice != nil && o.ToolChoice.Mode != "" {
		mode, name = o.ToolChoice.Mode, o.ToolChoice.Name
	}
	switch mode {
	case "none":
		return nil
	case "function":
		tool = clientTool(o, name)
	case "required":
		tool = o.Tools[0]
	default:
		lower := strings.ToLower(message)
		for _, t := range o.Tools {
			if t != nil && strings.Contains(lower, strings.ToLower(t.Name)) {
				tool = t
				break
			}
		}
	}
	if tool == nil {
		return nil
	}
	return &ams.ToolCallRequest{ID: ams.NewID(ams.PrefixCall), Name: tool.Name, Arguments: firstObject(message)}
}

// firstObject returns the first JSON object in s, compacted, or {}.
func firstObject(s string) json.RawMessage {
	for i := strings.IndexByte(s, '{'); i >= 0; {
		var v json.RawMessage
		dec := json.NewDecoder(strings.NewReader(s[i:]))
		if dec.Decode(&v) == nil && len(v) > 0 && v[0] == '{' {
			var b bytes.Buffer
			if json.Compact(&b, v) == nil {
				return b.Bytes()
			}
		}
		j := strings.IndexByte(s[i+1:], '{')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return json.RawMessage("{}")
}

// countWords counts s's words (the engine's tokens): those of strings.Fields,
// without making them.
func countWords(s string) int64 {
	n, in := int64(0), false
	for _, r := range s {
		switch {
		case unicode.IsSpace(r):
			in = false
		case !in:
			in, n = true, n+1
		}
	}
	return n
}

// cutWords returns s cut to its first n words (n ≥ 1), and whether it
// was cut.
func cutWords(s string, n int) (string, bool) {
	pieces := words(s)
	if n <= 0 || len(pieces) <= n {
		return s, false
	}
	return strings.TrimRight(strings.Join(pieces[:n], ""), " \t\r\n"), true
}

// errPause stops the intents at a call that needs approval.
var errPause = errors.New("builtin: a tool call needs approval")

// calls is the Toolbox the intents run through: it replays the calls of
// EngineRequest.Calls in order (the outcomes of an earlier attempt, or
// of approved and rejected calls) instead of running them again, stops
// at a call that needs approval, and records every call.
type calls struct {
	inner   ams.Toolbox
	needs   func(string) bool
	earlier []*ams.ToolCallRecord
	next    int
	all     []*ams.ToolCallRecord
	pending []*ams.ToolCallRequest
}

func (c *calls) Specs() []ams.ToolSpec { return c.inner.Specs() }

// Run implements ams.Toolbox.
func (c *calls) Run(ctx context.Context, name string, input json.RawMessage) (*ams.Action, error) {
	if c.next < len(c.earlier) && c.earlier[c.next].Name == name {
		rec := c.earlier[c.next]
		c.next++
		return rec.Action(), nil
	}
	if c.needs != nil && c.needs(name) {
		c.pending = append(c.pending, &ams.ToolCallRequest{ID: ams.NewID(ams.PrefixCall), Name: name, Arguments: input})
		return nil, errPause
	}
	act, err := c.inner.Run(ctx, name, input)
	if err != nil || act == nil {
		return act, err
	}
	c.all = append(c.all, &ams.ToolCallRecord{ID: ams.NewID(ams.PrefixCall), Name: name, Arguments: input,
		Output: ams.CallOutput(act), ActionID: act.ID})
	return act, nil
}

// lastClientCall returns the last of the earlier calls when it is a call
// of one of the request's client tools.
func lastClientCall(o *ams.TurnOptions, earlier []*ams.ToolCallRecord) *ams.ToolCallRecord {
	if len(earlier) == 0 {
		return nil
	}
	last := earlier[len(earlier)-1]
	if clientTool(o, last.Name) == nil {
		return nil
	}
	return last
}

// inputTokens counts the words the engine reads: the history and the
// outputs of the turn's calls.
func inputTokens(req *ams.EngineRequest) int64 {
	var n int64
	for _, m := range req.History {
		if m != nil {
			n += countWords(m.Content)
		}
	}
	for _, c := range req.Calls {
		n += countWords(c.Output)
	}
	return n
}

func clientReturned(c *ams.ToolCallRecord) string {
	return fmt.Sprintf("%s returned: %s", c.Name, c.Output)
}
