package messaging

import (
	"bytes"
	"encoding/json"
	"regexp"

	"github.com/amsdev/ams"
)

// MaxClientTools is how many client tools one turn may have.
const MaxClientTools = 64

// toolName is the form of a client tool's name (DESIGN.md).
var toolName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// CheckOptions checks a send's per-turn options (ams.TurnOptions) for
// assistant a, before anything is stored: a 400 naming the parameter
// otherwise. nil options are fine. It checks the form of each option;
// what an engine cannot honour is its own check (ams.EngineChecker).
func CheckOptions(o *ams.TurnOptions, a *ams.Assistant) error {
	if o == nil {
		return nil
	}
	if o.Instructions != nil {
		if err := CheckContent(*o.Instructions, "instructions"); err != nil {
			return err
		}
	}
	if len(o.Tools) > MaxClientTools {
		return ams.ParamError("parameter_invalid", "tools", "At most %d tools may be given, not %d.", MaxClientTools, len(o.Tools))
	}
	names := map[string]bool{}
	for i, t := range o.Tools {
		if t == nil || t.Type != "function" {
			return ams.ParamError("parameter_invalid", "tools", "tools[%d].type must be 'function'.", i)
		}
		if !toolName.MatchString(t.Name) {
			return ams.ParamError("parameter_invalid", "tools", "tools[%d].name must be 1 to 64 letters, digits, '_' or '-'.", i)
		}
		if names[t.Name] {
			return ams.ParamError("parameter_invalid", "tools", "Tool '%s' is given twice.", t.Name)
		}
		names[t.Name] = true
		if len(t.Parameters) > 0 && !isObject(t.Parameters) {
			return ams.ParamError("parameter_invalid", "tools", "tools[%d].parameters must be a JSON Schema object.", i)
		}
	}
	if c := o.ToolChoice; c != nil {
		switch c.Mode {
		case "auto", "none", "required":
		case "function":
			if !names[c.Name] {
				return ams.ParamError("parameter_invalid", "tool_choice", "tool_choice names '%s', which is not among the tools.", c.Name)
			}
		default:
			return ams.ParamError("parameter_invalid", "tool_choice", "tool_choice must be 'auto', 'none', 'required' or {\"type\": \"function\", \"name\": ...}.")
		}
	}
	if o.MaxOutputTokens < 0 {
		return ams.ParamError("parameter_invalid", "max_output_tokens", "max_output_tokens must be 1 or more.")
	}
	if f := o.ResponseFormat; f != nil {
		switch f.Type {
		case "text":
		case "json_schema":
			if f.JSONSchema == nil || f.JSONSchema.Name == "" || !isObject(f.JSONSchema.Schema) {
				return ams.ParamError("parameter_invalid", "response_format", "response_format json_schema needs a name and a schema object.")
			}
		default:
			return ams.ParamError("parameter_invalid", "response_format", "response_format.type must be 'text' or 'json_schema'.")
		}
	}
	return nil
}

// isObject reports whether b is a JSON object.
func isObject(b json.RawMessage) bool {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return false
	}
	var m map[string]json.RawMessage
	return json.Unmarshal(b, &m) == nil
}

// CheckStrategy checks a multitask strategy ("" is the default,
// enqueue) and returns it, or a 400 naming multitask_strategy.
func CheckStrategy(s string) (string, error) {
	switch s {
	case "":
		return ams.MultitaskEnqueue, nil
	case ams.MultitaskEnqueue, ams.MultitaskReject, ams.MultitaskInterrupt:
		return s, nil
	}
	return "", ams.ParamError("parameter_invalid", "multitask_strategy", "multitask_strategy must be 'enqueue', 'reject' or 'interrupt', not '%s'.", ams.Clip(s))
}
