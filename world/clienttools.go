package world

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/amsdev/ams"
)

// Limits of client tools (DESIGN.md, "Turns an integrator builds on").
const (
	// MaxClientTools is how many client tools a turn may have, the
	// assistant's and the request's together.
	MaxClientTools = 64
	// MaxToolDescription bounds a client tool's description, in bytes.
	MaxToolDescription = 1024
	// MaxToolSchema bounds a tool's parameters (or a response format's
	// schema), in bytes of JSON.
	MaxToolSchema = 16 * 1024
)

var toolName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// CheckToolName refuses a client tool name that is not 1 to 64 letters,
// digits, _ or -, that is a built-in tool's, or that has the form of an
// integration tool's (<integration>__<tool>: "__" is theirs).
func CheckToolName(param, name string) error {
	if !toolName.MatchString(name) {
		return ams.ParamError("parameter_invalid", param, "'%s' must match ^[A-Za-z0-9_-]{1,64}$.", param)
	}
	if slices.Contains(ToolNames(), name) {
		return ams.ParamError("parameter_invalid", param, "'%s' is the name of a built-in tool; choose another name.", name)
	}
	if strings.Contains(name, "__") {
		return ams.ParamError("parameter_invalid", param, "'%s' has the form of an integration tool's name (<integration>__<tool>); client tool names must not contain \"__\".", name)
	}
	return nil
}

// CheckClientTools validates tools, named param in errors
// ("tools[2].name"), together with others (the assistant's tools, when
// checking a request's): every name valid and used once, type
// "function", description at most MaxToolDescription bytes, parameters a
// JSON Schema object (CheckSchema), at most MaxClientTools in all.
func CheckClientTools(param string, tools, others []*ams.ClientTool) error {
	if len(tools)+len(others) > MaxClientTools {
		return ams.ParamError("parameter_invalid", param, "A turn may have at most %d client tools (the assistant's and the request's), not %d.",
			MaxClientTools, len(tools)+len(others))
	}
	seen := map[string]bool{}
	for _, t := range others {
		if t != nil {
			seen[t.Name] = true
		}
	}
	for i, t := range tools {
		p := fmt.Sprintf("%s[%d]", param, i)
		if t == nil {
			return ams.ParamError("parameter_invalid", p, "'%s' must be a tool object, not null.", p)
		}
		if t.Type != "function" {
			return ams.ParamError("parameter_invalid", p+".type", "'%s.type' must be \"function\".", p)
		}
		if err := CheckToolName(p+".name", t.Name); err != nil {
			return err
		}
		if seen[t.Name] {
			return ams.ParamError("parameter_invalid", p+".name", "Tool '%s' is given twice (names must be unique, the assistant's tools included).", t.Name)
		}
		seen[t.Name] = true
		if err := checkText(p+".description", t.Description, MaxToolDescription, false); err != nil {
			return err
		}
		if len(t.Parameters) > 0 && string(bytes.TrimSpace(t.Parameters)) != "null" {
			if err := CheckSchema(p+".parameters", t.Parameters); err != nil {
				return err
			}
		}
	}
	return nil
}

// CheckSchema refuses raw unless it is a JSON Schema (draft 2020-12 when
// it names none) whose root is an object of "type": "object", at most
// MaxToolSchema bytes, with no reference outside itself. The schema is
// compiled by github.com/santhosh-tekuri/jsonschema/v6, which checks it
// against its draft's meta-schema; no URL is ever loaded.
func CheckSchema(param string, raw json.RawMessage) error {
	if len(raw) > MaxToolSchema {
		return ams.ParamError("parameter_invalid", param, "'%s' is larger than %d bytes.", param, MaxToolSchema)
	}
	var root map[string]json.RawMessage
	if err := json.Unmarshal(raw, &root); err != nil || root == nil {
		return ams.ParamError("parameter_invalid", param, "'%s' must be a JSON Schema object.", param)
	}
	if t, ok := root["type"]; !ok || string(bytes.TrimSpace(t)) != `"object"` {
		return ams.ParamError("parameter_invalid", param, "'%s' must be a JSON Schema of \"type\": \"object\".", param)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return ams.ParamError("parameter_invalid", param, "'%s' must be a JSON Schema object.", param)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	const loc = "urn:ams:schema"
	if err := c.AddResource(loc, doc); err != nil {
		return ams.ParamError("parameter_invalid", param, "'%s' is not a valid JSON Schema.", param)
	}
	if _, err := c.Compile(loc); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return ams.ParamError("parameter_invalid", param, "'%s' is not a valid JSON Schema: %s", param, ams.Clip(firstLine(ve.Error())))
		}
		return ams.ParamError("parameter_invalid", param, "'%s' is not a valid JSON Schema (a reference it makes cannot be resolved, or a pattern does not compile).", param)
	}
	return nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}
