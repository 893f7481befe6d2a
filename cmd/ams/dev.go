package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"io"
	"math/big"
	"strings"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/password"
)

const (
	devEmail         = "dev@example.com"
	devKeyName       = "dev"
	devAssistantName = "Dev Assistant"
)

// devSecret derives a secret of n base62 characters from the process's
// token key (shared by every process on the store: --secret-key, or the
// key file of the SQLite data directory) and what it is for.
func devSecret(tokenKey []byte, what string, n int) string {
	m := hmac.New(sha256.New, tokenKey)
	m.Write([]byte("ams dev " + what + " v1"))
	s := new(big.Int).SetBytes(m.Sum(nil)).Text(62)
	if len(s) < n {
		s = strings.Repeat("0", n-len(s)) + s
	}
	return s[:n]
}

// devBootstrap makes sure the dev user, its API key and its assistant
// exist, and prints them with a first request. The key and the password
// are derived from the token key that every process on the store shares,
// so every start prints the same ones and a second dev process on a
// shared database does not cut off the first: the key is created at the
// first start and reused after (dev keys of older versions, random, are
// revoked).
func devBootstrap(ctx context.Context, store ams.Store, tokenKey []byte, base string, w io.Writer) error {
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
	pw := devSecret(tokenKey, "password "+u.ID, 16)
	if !password.Check(u.PasswordHash, pw) {
		hash, err := password.Hash(pw)
		if err != nil {
			return err
		}
		if _, err := store.UpdateUser(ctx, u.ID, ams.UserUpdate{PasswordHash: &hash}, now); err != nil {
			return err
		}
	}
	secret := ams.PrefixSecretKey + devSecret(tokenKey, "api key "+u.ID, 40)
	keys, err := store.ListKeys(ctx, u.ID)
	if err != nil {
		return err
	}
	perms := ams.Permissions{ams.PermRead, ams.PermWrite, ams.PermMessages, ams.PermIntegrations}
	var key *ams.APIKey
	for _, k := range keys {
		if k.Name != devKeyName || k.RevokedAt != nil {
			continue
		}
		if ams.SecretsEqual(k.Hash, ams.HashSecret(secret)) {
			key = k
		} else if _, err := store.RevokeKey(ctx, u.ID, k.ID, now); err != nil {
			return err
		}
	}
	if key == nil {
		key = &ams.APIKey{ID: ams.NewID(ams.PrefixAPIKey), Object: "api_key", UserID: u.ID, Name: devKeyName,
			Hint: ams.KeyHint(secret), Hash: ams.HashSecret(secret), Permissions: perms, CreatedAt: now}
		if err := store.CreateKey(ctx, key); err != nil {
			return err
		}
	}
	perms = key.Permissions
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
             (%s: %s; the same key at every start on this store)
  assistant  %s (%s)

Send your first message:

  curl -s %s/v1/messages \
    -H "Authorization: Bearer %s" \
    -H "Content-Type: application/json" \
    -d '{"assistant_id": "%s", "message": "Hello! What can you do?"}'

`, base, u.Email, u.ID, u.Plan, pw, base, secret, key.ID, perms.String(), asst.ID, asst.Name, base, secret, asst.ID)
	return nil
}
