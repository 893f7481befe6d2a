package messaging

import (
	"slices"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/world"
)

// MaxInstructions bounds a request's instructions, in bytes (as an
// assistant's).
const MaxInstructions = world.MaxAssistantInstructions

// CheckOptions validates a send's per-turn options for assistant a, and
// answers a 400 naming the parameter: tools (see world.CheckClientTools:
// names ^[A-Za-z0-9_-]{1,64}$, never a built-in or integration tool's,
// unique with the assistant's tools, at most 64 in all, parameters a
// JSON Schema object); tool_choice "auto", "none", "required" or a
// function of the turn's tools ("required" needs one); max_output_tokens
// at least 1 (0 is unset); response_format {"type": "text"} or
// {"type": "json_schema", "json_schema": {"name", "schema"}}; the
// instructions' size. Whether the engine can honour them is its own
// check (ams.EngineChecker). nil options are valid.
func CheckOptions(o *ams.TurnOptions, a *ams.Assistant) error {
	if o == nil {
		return nil
	}
	var own []*ams.ClientTool
	if a != nil {
		own = a.Tools
	}
	if err := world.CheckClientTools("tools", o.Tools, own); err != nil {
		return err
	}
	if o.Instructions != nil && len(*o.Instructions) > MaxInstructions {
		return ams.ParamError("parameter_invalid", "instructions", "'instructions' is longer than %d bytes.", MaxInstructions)
	}
	if c := o.ToolChoice; c != nil {
		tools := append(slices.Clone(own), o.Tools...)
		switch c.Mode {
		case "auto", "none", "required":
		case "function":
			known := slices.ContainsFunc(tools, func(t *ams.ClientTool) bool { return t != nil && t.Name == c.Name }) ||
				slices.Contains(world.ToolNames(), c.Name)
			if !known {
				return ams.ParamError("parameter_invalid", "tool_choice", "tool_choice names '%s', which is not one of the turn's tools.", ams.Clip(c.Name))
			}
		default:
			return ams.ParamError("parameter_invalid", "tool_choice",
				"'tool_choice' must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", \"name\": ...}.")
		}
	}
	if o.MaxOutputTokens < 0 {
		return ams.ParamError("parameter_invalid", "max_output_tokens", "'max_output_tokens' must be an integer of at least 1.")
	}
	if f := o.ResponseFormat; f != nil {
		switch f.Type {
		case "text":
			if f.JSONSchema != nil {
				return ams.ParamError("parameter_invalid", "response_format.json_schema", "'response_format.json_schema' goes with type \"json_schema\" only.")
			}
		case "json_schema":
			if f.JSONSchema == nil {
				return ams.ParamError("parameter_missing", "response_format.json_schema", "Missing required parameter 'response_format.json_schema'.")
			}
			if !validSchemaName(f.JSONSchema.Name) {
				return ams.ParamError("parameter_invalid", "response_format.json_schema.name", "'response_format.json_schema.name' must match ^[A-Za-z0-9_-]{1,64}$.")
			}
			if len(f.JSONSchema.Schema) == 0 {
				return ams.ParamError("parameter_missing", "response_format.json_schema.schema", "Missing required parameter 'response_format.json_schema.schema'.")
			}
			if err := world.CheckSchema("response_format.json_schema.schema", f.JSONSchema.Schema); err != nil {
				return err
			}
		default:
			return ams.ParamError("parameter_invalid", "response_format.type", "'response_format.type' must be \"text\" or \"json_schema\".")
		}
	}
	return nil
}

// validSchemaName reports whether a response format's name is 1 to 64
// letters, digits, _ or - (a built-in tool's name is fine there).
func validSchemaName(n string) bool {
	if len(n) == 0 || len(n) > 64 {
		return false
	}
	for _, c := range n {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
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
