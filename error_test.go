package ams_test

import (
	"fmt"
	"testing"

	"github.com/amsdev/ams"
)

// TestErrorVocabulary: each kind's API type, WithParam naming only a
// not-found error, and ActionErrorOf showing only an *ams.Error.
func TestErrorVocabulary(t *testing.T) {
	types := map[ams.ErrorKind]string{
		ams.EINTERNAL: "api_error", ams.EINVALID: "invalid_request_error", ams.EUNAUTHENTICATED: "authentication_error",
		ams.EFORBIDDEN: "permission_error", ams.ENOTFOUND: "invalid_request_error", ams.EMETHOD: "invalid_request_error",
		ams.ECONFLICT: "invalid_request_error", ams.ETOOLARGE: "invalid_request_error", ams.EUNSUPPORTED: "invalid_request_error",
		ams.ERATELIMIT: "rate_limit_error", ams.EUPSTREAM: "api_error", ams.EUNAVAILABLE: "api_error",
	}
	for k, want := range types {
		if got := k.Type(); got != want {
			t.Errorf("kind %d: type %q, want %q", k, got, want)
		}
	}

	nf := ams.NotFound("task", "task_x")
	got := ams.WithParam(fmt.Errorf("find: %w", nf), "task_id")
	if e, ok := got.(*ams.Error); !ok || e.Param != "task_id" || e.Code != "resource_missing" {
		t.Errorf("WithParam(not found) = %#v", got)
	}
	if nf.Param != "" {
		t.Error("WithParam changed the error it was given")
	}
	bad := ams.ParamError("parameter_invalid", "title", "x")
	if got := ams.WithParam(bad, "task_id"); got != error(bad) {
		t.Errorf("WithParam(invalid) = %v, want it unchanged", got)
	}

	if ae := ams.ActionErrorOf(fmt.Errorf("wrapped: %w", bad)); ae == nil ||
		*ae != (ams.ActionError{Type: "invalid_request_error", Code: "parameter_invalid", Message: "x", Param: "title"}) {
		t.Errorf("ActionErrorOf(invalid) = %#v", ae)
	}
	if ae := ams.ActionErrorOf(fmt.Errorf("disk on fire")); ae != nil {
		t.Errorf("ActionErrorOf(internal) = %#v, want nil", ae)
	}
}
