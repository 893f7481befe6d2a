package world

import (
	"encoding/json"
	"testing"

	"github.com/amsdev/ams"
)

// TestValidateInput: an MCP tool's input is checked against its schema;
// the error names the field; a schema that refers outside itself (a file,
// a URL) is refused without reading it.
func TestValidateInput(t *testing.T) {
	sum := json.RawMessage(`{"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}`)
	local := json.RawMessage(`{"type": "object", "properties": {"n": {"$ref": "#/$defs/n"}}, "$defs": {"n": {"type": "integer"}}}`)
	for _, c := range []struct {
		schema, input json.RawMessage
		param         string // "" for valid
	}{
		{sum, json.RawMessage(`{"a": 1, "b": 2}`), ""},
		{sum, json.RawMessage(`{"a": "x", "b": 2}`), "input.a"},
		{sum, json.RawMessage(`{"a": 1}`), "input"},
		{sum, json.RawMessage(`[1, 2]`), "input"},
		{sum, json.RawMessage(`{"a": 1, `), "input"},
		{local, json.RawMessage(`{"n": 3}`), ""},
		{local, json.RawMessage(`{"n": 3.5}`), "input.n"},
		{json.RawMessage(`{"$ref": "file:///etc/passwd"}`), json.RawMessage(`{}`), "type"},
		{json.RawMessage(`{"$ref": "http://169.254.169.254/latest/meta-data"}`), json.RawMessage(`{}`), "type"},
		{json.RawMessage(`{"type": 12}`), json.RawMessage(`{}`), "type"},
	} {
		err := validateInput(c.schema, c.input)
		if c.param == "" {
			if err != nil {
				t.Errorf("%s against %s: %v", c.input, c.schema, err)
			}
			continue
		}
		e, ok := err.(*ams.Error)
		if !ok || e.Param != c.param || e.Kind != ams.EINVALID {
			t.Errorf("%s against %s: %v, want a 400 naming %s", c.input, c.schema, err, c.param)
		}
	}
}
