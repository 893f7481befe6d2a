package world

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/amsdev/ams"
)

// Limits of an assistant's fields.
const (
	MaxAssistantName         = 200       // characters
	MaxAssistantDescription  = 10_000    // bytes
	MaxAssistantInstructions = 32 * 1024 // bytes
)

// Optional is a field of an input that tells absent from null from a
// value: Set is false when absent, Null when it was null. It decodes
// from JSON.
type Optional[T any] struct {
	Set   bool
	Null  bool
	Value T
}

// UnmarshalJSON implements json.Unmarshaler; encoding/json calls it for
// null too.
func (f *Optional[T]) UnmarshalJSON(b []byte) error {
	f.Set = true
	if string(bytes.TrimSpace(b)) == "null" {
		f.Null = true
		return nil
	}
	return json.Unmarshal(b, &f.Value)
}

// AssistantInput holds the fields of an assistant to create or change
// (the body of POST and PATCH /v1/assistants).
type AssistantInput struct {
	Name         Optional[string] `json:"name"`
	Description  Optional[string] `json:"description"`
	Instructions Optional[string] `json:"instructions"`
	Model        Optional[string] `json:"model"`
	// Tools, RequireApproval and MultitaskStrategy are the assistant's
	// turn defaults (null resets them: [], [] and "enqueue").
	Tools             Optional[[]*ams.ClientTool] `json:"tools"`
	RequireApproval   Optional[[]string]          `json:"require_approval"`
	MultitaskStrategy Optional[string]            `json:"multitask_strategy"`
	// Metadata is merged into the assistant's (ams.MetadataPatch).
	Metadata ams.MetadataPatch `json:"metadata"`
}

// checkText refuses NUL characters and text longer than max (bytes, or
// characters when chars is set).
func checkText(param, s string, max int, chars bool) error {
	if strings.ContainsRune(s, 0) || !utf8.ValidString(s) {
		return ams.ParamError("parameter_invalid", param, "'%s' must be valid UTF-8 text without NUL characters.", param)
	}
	if chars && utf8.RuneCountInString(s) > max {
		return ams.ParamError("parameter_invalid", param, "'%s' is longer than %d characters.", param, max)
	}
	if !chars && len(s) > max {
		return ams.ParamError("parameter_invalid", param, "'%s' is longer than %d bytes.", param, max)
	}
	return nil
}

// checkModel validates a model name: a plausible identifier. Whether the
// server runs it is decided when a message is sent (model_not_supported).
func checkModel(m string) error {
	if !ams.ValidModelName(m) {
		return ams.ParamError("parameter_invalid", "model",
			"'model' must be 1 to %d characters of letters, digits and . _ : / - (such as \"builtin\").", ams.MaxModelName)
	}
	return nil
}

// apply validates the input's fields and sets those given on a. On
// create (create true) name is required and null means the default.
func (in *AssistantInput) apply(a *ams.Assistant, create bool) error {
	switch {
	case in.Name.Set && !in.Name.Null:
		name := strings.TrimSpace(in.Name.Value)
		if name == "" {
			return ams.ParamError("parameter_invalid", "name", "'name' must not be empty.")
		}
		if err := checkText("name", name, MaxAssistantName, true); err != nil {
			return err
		}
		a.Name = name
	case create:
		return ams.ParamError("parameter_missing", "name", "Missing required parameter 'name'.")
	case in.Name.Null:
		return ams.ParamError("parameter_invalid", "name", "'name' must be a string, not null.")
	}
	if in.Description.Set {
		if err := checkText("description", in.Description.Value, MaxAssistantDescription, false); err != nil {
			return err
		}
		a.Description = in.Description.Value // null clears it
	}
	if in.Instructions.Set {
		if err := checkText("instructions", in.Instructions.Value, MaxAssistantInstructions, false); err != nil {
			return err
		}
		a.Instructions = in.Instructions.Value
	}
	switch {
	case in.Model.Set && !in.Model.Null:
		if err := checkModel(in.Model.Value); err != nil {
			return err
		}
		a.Model = in.Model.Value
	case in.Model.Null || create:
		a.Model = ams.ModelBuiltin
	}
	if err := in.applyTurnFields(a, create); err != nil {
		return err
	}
	m, err := in.Metadata.Merge(a.Metadata, "metadata")
	if err != nil {
		return err
	}
	a.Metadata = m
	return nil
}

// assistantEqual reports whether a and b hold the same fields.
func assistantEqual(a, b *ams.Assistant) bool {
	return a.Name == b.Name && a.Description == b.Description && a.Instructions == b.Instructions && a.Model == b.Model &&
		a.Metadata.Equal(b.Metadata) && turnFieldsEqual(a, b)
}

// CreateAssistant validates in (name is required; model defaults to
// builtin) and creates an assistant of userID.
func (s *Service) CreateAssistant(ctx context.Context, userID string, in AssistantInput) (*ams.Assistant, error) {
	now := s.Clock.Now()
	a := &ams.Assistant{ID: ams.NewID(ams.PrefixAssistant), Object: "assistant", UserID: userID, CreatedAt: now, UpdatedAt: now}
	if err := in.apply(a, true); err != nil {
		return nil, err
	}
	if err := s.Store.Update(ctx, func(tx ams.Tx) error {
		ams.KeepAnswer(ctx, a)
		if err := tx.CreateAssistant(ctx, a); err != nil {
			return err
		}
		return tx.Emit(ctx, ams.AssistantEvent(ams.EventAssistantCreated, a, now))
	}); err != nil {
		return nil, err
	}
	return a, nil
}

// UpdateAssistant changes the fields in gives of assistant id. Bad input
// is refused whether the assistant exists or not; an input that changes
// nothing keeps updated_at.
func (s *Service) UpdateAssistant(ctx context.Context, userID, id string, in AssistantInput) (*ams.Assistant, error) {
	if err := in.apply(&ams.Assistant{}, false); err != nil {
		return nil, err
	}
	var out *ams.Assistant
	err := s.Store.Update(ctx, func(tx ams.Tx) error {
		a, err := tx.FindAssistant(ctx, userID, id)
		if err != nil {
			return err
		}
		before := *a
		was := ams.AssistantEvent(ams.EventAssistantUpdated, a, a.UpdatedAt)
		if err := in.apply(a, false); err != nil {
			return err
		}
		out = a
		if assistantEqual(&before, a) {
			return nil // nothing changed: updated_at stays
		}
		a.UpdatedAt = s.Clock.Now()
		if err := tx.UpdateAssistant(ctx, a); err != nil {
			return err
		}
		return tx.Emit(ctx, ams.AssistantEvent(ams.EventAssistantUpdated, a, a.UpdatedAt).Since(was))
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteAssistant deletes assistant id: it leaves lists and lookups; its
// conversations, messages, tasks and events stay readable.
func (s *Service) DeleteAssistant(ctx context.Context, userID, id string) error {
	return s.Store.Update(ctx, func(tx ams.Tx) error {
		a, err := tx.FindAssistant(ctx, userID, id)
		if err != nil {
			return err
		}
		now := s.Clock.Now()
		if err := tx.DeleteAssistant(ctx, userID, id, now); err != nil {
			return err
		}
		return tx.Emit(ctx, ams.AssistantEvent(ams.EventAssistantDeleted, a, now))
	})
}
