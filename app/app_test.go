package app_test

import (
	"testing"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/amstest"
	"github.com/amsdev/ams/webhook"
	"github.com/amsdev/ams/world"
)

// TestOneStore: every service, the API and the pages get the one watched
// store; the workers get the plain one.
func TestOneStore(t *testing.T) {
	a := amstest.New(t).App
	if _, ok := a.Store.(interface{ Unwrap() ams.Store }); !ok {
		t.Fatal("the services' store is not the watched one")
	}
	for name, s := range map[string]any{
		"world": a.World.Store, "messaging": a.Messages.Store, "webhooks": a.Webhooks.Store,
		"api": a.API.Store, "pages": a.Pages.Store,
	} {
		if s != any(a.Store) {
			t.Errorf("%s has another store", name)
		}
	}
	var _ world.Store = a.Store
	var _ webhook.Store = a.Store
	if a.Webhook.Queue == a.Store || a.Reminders.Store == world.Store(a.Store) {
		t.Error("a worker runs on the watched store: its own writes would call it back")
	}
}
