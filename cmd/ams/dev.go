package main

import (
	"context"
	"fmt"
	"io"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/password"
)

const (
	devEmail         = "dev@example.com"
	devKeyName       = "dev"
	devAssistantName = "Dev Assistant"
)

// devBootstrap makes sure the dev user and its assistant exist, replaces
// the previous dev key and password with new ones (secrets are shown only
// once, so each start prints fresh ones), and prints them with a first
// request.
func devBootstrap(ctx context.Context, store ams.Store, base string, w io.Writer) error {
	now := ams.Clock(nil).Now()
	u, err := store.FindUserByEmail(ctx, devEmail)
	if ams.IsNotFound(err) {
		u = &ams.User{ID: ams.NewID(ams.PrefixUser), Email: devEmail, Plan: ams.PlanStandard, Timezone: "UTC", CreatedAt: now, UpdatedAt: now, ApprovedAt: &now}
		err = store.CreateUser(ctx, u)
	}
	if err != nil {
		return err
	}
	// A password, so that the login and OAuth consent pages can be tried.
	pw := ams.NewSecret("")[:16]
	hash, err := password.Hash(pw)
	if err != nil {
		return err
	}
	if _, err := store.UpdateUser(ctx, u.ID, ams.UserUpdate{PasswordHash: &hash}, now); err != nil {
		return err
	}
	keys, err := store.ListKeys(ctx, u.ID)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if k.Name == devKeyName && k.RevokedAt == nil {
			if _, err := store.RevokeKey(ctx, u.ID, k.ID, now); err != nil {
				return err
			}
		}
	}
	perms := ams.Permissions{ams.PermRead, ams.PermWrite, ams.PermMessages, ams.PermIntegrations}
	secret, key := ams.NewAPIKey(u.ID, devKeyName, perms, now, nil)
	if err := store.CreateKey(ctx, key); err != nil {
		return err
	}
	var asst *ams.Assistant
	page, err := store.ListAssistants(ctx, u.ID, ams.ListParams{Limit: 100, Order: ams.OrderAsc})
	if err != nil {
		return err
	}
	for _, a := range page.Data {
		if a.Name == devAssistantName {
			asst = a
			break
		}
	}
	if asst == nil {
		asst = newAssistant(u.ID, devAssistantName, "The assistant of the dev account.", "", ams.ModelBuiltin)
		if err := store.CreateAssistant(ctx, asst); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, `ams is running in dev mode at %s

  user       %s (%s, plan %s)
  password   %s (sign in at %s/login)
  API key    %s
             (%s: %s; a new key is printed at each start)
  assistant  %s (%s)

Send your first message:

  curl -s %s/v1/messages \
    -H "Authorization: Bearer %s" \
    -H "Content-Type: application/json" \
    -d '{"assistant_id": "%s", "message": "Hello! What can you do?"}'

`, base, u.Email, u.ID, u.Plan, pw, base, secret, key.ID, perms.String(), asst.ID, asst.Name, base, secret, asst.ID)
	return nil
}
