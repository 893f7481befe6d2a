package world

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"

	"github.com/amsdev/ams"
)

// MaxRequireApproval bounds the names in an assistant's require_approval.
const MaxRequireApproval = 64

// integrationTool is the form of an integration tool's name:
// <integration>__<tool>.
var integrationTool = regexp.MustCompile(`^[a-z0-9_-]{1,32}__[A-Za-z0-9_.-]{1,128}$`)

// applyTurnFields validates and sets the assistant's turn defaults
// given in in: tools, require_approval, multitask_strategy.
func (in *AssistantInput) applyTurnFields(a *ams.Assistant, create bool) error {
	if a.Tools == nil {
		a.Tools = []*ams.ClientTool{}
	}
	if a.RequireApproval == nil {
		a.RequireApproval = []string{}
	}
	if in.Tools.Set {
		if err := CheckClientTools("tools", in.Tools.Value, nil); err != nil {
			return err
		}
		a.Tools = slices.Clone(in.Tools.Value)
		if a.Tools == nil {
			a.Tools = []*ams.ClientTool{}
		}
	}
	if in.RequireApproval.Set {
		names := in.RequireApproval.Value
		if err := checkRequireApproval(names); err != nil {
			return err
		}
		a.RequireApproval = slices.Clone(names)
		if a.RequireApproval == nil {
			a.RequireApproval = []string{}
		}
	}
	switch {
	case in.MultitaskStrategy.Set && !in.MultitaskStrategy.Null:
		switch v := in.MultitaskStrategy.Value; v {
		case ams.MultitaskEnqueue, ams.MultitaskReject, ams.MultitaskInterrupt:
			a.MultitaskStrategy = v
		default:
			return ams.ParamError("parameter_invalid", "multitask_strategy", "'multitask_strategy' must be \"enqueue\", \"reject\" or \"interrupt\".")
		}
	case in.MultitaskStrategy.Null || create || a.MultitaskStrategy == "":
		a.MultitaskStrategy = ams.MultitaskEnqueue
	}
	return nil
}

// checkRequireApproval refuses names that are not built-in tools or
// integration tools (<integration>__<tool>), or "*" with others.
func checkRequireApproval(names []string) error {
	if len(names) > MaxRequireApproval {
		return ams.ParamError("parameter_invalid", "require_approval", "'require_approval' may name at most %d tools.", MaxRequireApproval)
	}
	for i, n := range names {
		p := fmt.Sprintf("require_approval[%d]", i)
		switch {
		case n == "*":
			if len(names) != 1 {
				return ams.ParamError("parameter_invalid", p, "'*' (every tool) must be alone in 'require_approval'.")
			}
		case slices.Contains(ToolNames(), n), integrationTool.MatchString(n):
		default:
			return ams.ParamError("parameter_invalid", p, "'%s' is not a built-in tool (%s) or an integration tool (<integration>__<tool>).", ams.Clip(n), joinNames())
		}
	}
	return nil
}

func turnFieldsEqual(a, b *ams.Assistant) bool {
	if a.MultitaskStrategy != b.MultitaskStrategy || !slices.Equal(a.RequireApproval, b.RequireApproval) {
		return false
	}
	x, _ := json.Marshal(a.Tools)
	y, _ := json.Marshal(b.Tools)
	return string(x) == string(y)
}
