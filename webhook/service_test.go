package webhook_test

import (
	"context"
	"errors"
	"testing"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/amstest"
	"github.com/amsdev/ams/webhook"
)

func ptr[T any](v T) *T { return &v }

// TestServiceFieldErrors: every wrong field is reported, in the API's
// order, and the first is what errors.As finds (the API's answer);
// nothing is stored.
func TestServiceFieldErrors(t *testing.T) {
	f := amstest.New(t)
	svc, ctx := f.Webhooks, context.Background()
	_, err := svc.Create(ctx, f.User.ID, webhook.Input{URL: ptr("ftp://x"), Events: &[]string{"nope"}, Secret: ptr("short")})
	var all ams.FieldErrors
	if !errors.As(err, &all) || len(all) != 3 || all[0].Param != "events" || all[1].Param != "secret" || all[2].Param != "url" {
		t.Fatalf("errors: %v", err)
	}
	var first *ams.Error
	if !errors.As(err, &first) || first.Param != "events" || first.Code != "parameter_invalid" {
		t.Fatalf("first error: %+v", first)
	}
	_, err = svc.Create(ctx, f.User.ID, webhook.Input{Events: &[]string{"nope"}})
	if !errors.As(err, &first) || first.Param != "url" || first.Code != "parameter_missing" {
		t.Fatalf("missing url: %+v", first)
	}
	// Update: bad events are 400 whatever the id; a missing webhook with
	// good input is 404.
	if _, err := svc.Update(ctx, f.User.ID, "wh_missing", webhook.Input{Events: &[]string{}}); ams.ErrorKindOf(err) != ams.EINVALID {
		t.Fatalf("update of a missing webhook with bad events: %v", err)
	}
	if _, err := svc.Update(ctx, f.User.ID, "wh_missing", webhook.Input{URL: ptr("ftp://x")}); ams.ErrorKindOf(err) != ams.ENOTFOUND {
		t.Fatalf("update of a missing webhook: %v", err)
	}
	page, err := f.Store.ListWebhooks(ctx, f.User.ID, ams.ListParams{Limit: 10})
	if err != nil || len(page.Data) != 0 {
		t.Fatalf("stored: %v %v", page, err)
	}
	wh, err := svc.Create(ctx, f.User.ID, webhook.Input{URL: ptr("http://127.0.0.1:9/hook"), Events: &[]string{ams.EventMessageCreated, ams.EventMessageCreated}, Secret: ptr(secret)})
	if err != nil || len(wh.Events) != 1 || !wh.Active {
		t.Fatalf("create: %+v %v", wh, err)
	}
	if wh, err = svc.Disable(ctx, f.User.ID, wh.ID); err != nil || wh.Active {
		t.Fatalf("disable: %+v %v", wh, err)
	}
	if _, err := svc.Ping(ctx, f.User.ID, wh.ID); ams.ErrorKindOf(err) != ams.ECONFLICT {
		t.Fatalf("ping of a disabled webhook: %v", err)
	}
}
