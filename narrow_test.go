package ams_test

import (
	"context"
	"testing"

	"github.com/amsdev/ams"
)

// TestNarrowChecksT: Narrow takes a T that a transaction implements, and
// refuses any other where the store is wired (the transactions themselves
// are tested through the services that narrow a real store, such as
// messaging).
func TestNarrowChecksT(t *testing.T) {
	type emitter interface {
		Emit(ctx context.Context, events ...*ams.Event) error
	}
	ams.Narrow[emitter](nil)
	type other interface {
		Emit() error // not ams.Tx's Emit
	}
	for name, narrow := range map[string]func(){
		"other methods": func() { ams.Narrow[other](nil) },
		"not interface": func() { ams.Narrow[int](nil) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Narrow did not panic", name)
				}
			}()
			narrow()
		}()
	}
}
