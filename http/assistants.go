package http

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/amsdev/ams"
)

// Limits of an assistant's fields.
const (
	maxAssistantName        = 200       // characters
	maxAssistantDescription = 10_000    // bytes
	maxAssistantInstruction = 32 * 1024 // bytes
)

// field is a JSON field of a request body that tells absent from null
// from a value: Set is false when absent, Null when it was null.
type field[T any] struct {
	Set   bool
	Null  bool
	Value T
}

// UnmarshalJSON implements json.Unmarshaler; encoding/json calls it for
// null too.
func (f *field[T]) UnmarshalJSON(b []byte) error {
	f.Set = true
	if string(bytes.TrimSpace(b)) == "null" {
		f.Null = true
		return nil
	}
	return json.Unmarshal(b, &f.Value)
}

// assistantRequest is the body of POST and PATCH /v1/assistants.
type assistantRequest struct {
	Name         field[string] `json:"name"`
	Description  field[string] `json:"description"`
	Instructions field[string] `json:"instructions"`
	Model        field[string] `json:"model"`
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

// apply validates the request's fields and sets those given on a. On
// create (create true) name is required and null means the default.
func (req *assistantRequest) apply(a *ams.Assistant, create bool) error {
	switch {
	case req.Name.Set && !req.Name.Null:
		name := strings.TrimSpace(req.Name.Value)
		if name == "" {
			return ams.ParamError("parameter_invalid", "name", "'name' must not be empty.")
		}
		if err := checkText("name", name, maxAssistantName, true); err != nil {
			return err
		}
		a.Name = name
	case create:
		return ams.ParamError("parameter_missing", "name", "Missing required parameter 'name'.")
	case req.Name.Null:
		return ams.ParamError("parameter_invalid", "name", "'name' must be a string, not null.")
	}
	if req.Description.Set {
		if err := checkText("description", req.Description.Value, maxAssistantDescription, false); err != nil {
			return err
		}
		a.Description = req.Description.Value // null clears it
	}
	if req.Instructions.Set {
		if err := checkText("instructions", req.Instructions.Value, maxAssistantInstruction, false); err != nil {
			return err
		}
		a.Instructions = req.Instructions.Value
	}
	switch {
	case req.Model.Set && !req.Model.Null:
		if err := checkModel(req.Model.Value); err != nil {
			return err
		}
		a.Model = req.Model.Value
	case req.Model.Null || create:
		a.Model = ams.ModelBuiltin
	}
	return nil
}

func (s *Server) createAssistant(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r.URL.Query(), false); err != nil {
		return err
	}
	var req assistantRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	now := s.now()
	a := &ams.Assistant{ID: ams.NewID(ams.PrefixAssistant), Object: "assistant", UserID: auth(r).User.ID, CreatedAt: now, UpdatedAt: now}
	if err := req.apply(a, true); err != nil {
		return err
	}
	ctx := r.Context()
	if err := s.World.Store.Update(ctx, func(tx ams.Tx) error { return tx.CreateAssistant(ctx, a) }); err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/assistants/"+a.ID)
	return writeJSON(w, http.StatusCreated, a)
}

func (s *Server) updateAssistant(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "assistant", ams.PrefixAssistant)
	if err != nil {
		return err
	}
	if err := checkQuery(r.URL.Query(), false); err != nil {
		return err
	}
	var req assistantRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	// Validate before looking the assistant up, so that bad input is 400
	// whatever the id.
	if err := req.apply(&ams.Assistant{}, false); err != nil {
		return err
	}
	userID, ctx := auth(r).User.ID, r.Context()
	var out *ams.Assistant
	err = s.World.Store.Update(ctx, func(tx ams.Tx) error {
		a, err := tx.FindAssistant(ctx, userID, id)
		if err != nil {
			return err
		}
		before := *a
		if err := req.apply(a, false); err != nil {
			return err
		}
		out = a
		if before == *a {
			return nil // nothing changed: updated_at stays
		}
		a.UpdatedAt = s.now()
		return tx.UpdateAssistant(ctx, a)
	})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, out)
}

func (s *Server) deleteAssistant(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "assistant", ams.PrefixAssistant)
	if err != nil {
		return err
	}
	if err := checkQuery(r.URL.Query(), false); err != nil {
		return err
	}
	userID, ctx := auth(r).User.ID, r.Context()
	err = s.World.Store.Update(ctx, func(tx ams.Tx) error {
		if _, err := tx.FindAssistant(ctx, userID, id); err != nil {
			return err
		}
		return tx.DeleteAssistant(ctx, userID, id, s.now())
	})
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
