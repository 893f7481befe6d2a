package oauth

import (
	"context"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/amsdev/ams"
)

// PrefixClientSecret starts every client secret, so that leak scanners can
// find them.
const PrefixClientSecret = "ams_cs_"

// MaxRedirectURIs is how many redirect URIs a client may register.
const MaxRedirectURIs = 10

// ClientParams describe a client to register.
type ClientParams struct {
	UserID       string   // the account that registers it
	Name         string   // shown on the consent page
	RedirectURIs []string // matched exactly
	Public       bool     // no secret; must use PKCE
}

// NewClient validates p and returns the client record to store and its
// secret, to be shown once ("" for a public client). The record holds only
// the secret's hash. Invalid parameters are EINVALID errors naming the
// parameter (name, redirect_uris).
func NewClient(p ClientParams, now time.Time) (*ams.OAuthClient, string, error) {
	name := strings.TrimSpace(p.Name)
	if name == "" || utf8.RuneCountInString(name) > 100 || !utf8.ValidString(name) {
		return nil, "", ams.ParamError("parameter_invalid", "name", "The client name must be 1 to 100 characters.")
	}
	if len(p.RedirectURIs) == 0 || len(p.RedirectURIs) > MaxRedirectURIs {
		return nil, "", ams.ParamError("parameter_invalid", "redirect_uris", "Give 1 to %d redirect URIs.", MaxRedirectURIs)
	}
	var uris []string
	for _, u := range p.RedirectURIs {
		if err := ValidateRedirectURI(u); err != nil {
			return nil, "", err
		}
		if !slices.Contains(uris, u) {
			uris = append(uris, u)
		}
	}
	c := &ams.OAuthClient{
		ID: ams.NewID(ams.PrefixClient), Object: "oauth_client", UserID: p.UserID, Name: name,
		RedirectURIs: uris, Public: p.Public, CreatedAt: now, UpdatedAt: now,
	}
	var secret string
	if !p.Public {
		secret = ams.NewSecret(PrefixClientSecret)
		c.SecretHash = ams.HashSecret(secret)
	}
	return c, secret, nil
}

// ClientStore is what registering and managing clients needs: the OAuth
// store, and transactions, in which each change is written with its audit
// event (oauth_client.created, oauth_client.secret_rotated,
// oauth_client.deleted). ams.Store satisfies it.
type ClientStore interface {
	ams.OAuthStore
	Update(ctx context.Context, fn func(tx ams.Tx) error) error
}

// CreateClient registers a client made by NewClient in store and returns it
// with its secret ("" for a public client); oauth_client.created is
// emitted in the same transaction. The account pages, `ams oauth-clients
// create` and POST /v1/oauth/clients all call it. An account that has
// ams.MaxOAuthClients clients gets ams.ErrOAuthClientLimit (ECONFLICT
// oauth_client_limit_reached), counted in the creating transaction.
func CreateClient(ctx context.Context, store ClientStore, p ClientParams, now time.Time) (*ams.OAuthClient, string, error) {
	c, secret, err := NewClient(p, now)
	if err != nil {
		return nil, "", err
	}
	err = store.Update(ctx, func(tx ams.Tx) error {
		n, err := tx.CountOAuthClients(ctx, c.UserID) // locks the account's row
		if err != nil {
			return err
		}
		if n >= ams.MaxOAuthClients {
			return ams.ErrOAuthClientLimit(ams.MaxOAuthClients)
		}
		if err := tx.CreateOAuthClient(ctx, c); err != nil {
			return err
		}
		ams.KeepAnswer(ctx, &ams.SecretAnswer{Record: c, Secret: secret})
		return tx.Emit(ctx, ams.OAuthClientEvent(ams.EventOAuthClientCreated, c, now))
	})
	if err != nil {
		return nil, "", err
	}
	return c, secret, nil
}

// The management of a registered client by its owner (the account
// pages' OAuth apps, the management API): each function takes the
// owner's id, and a client of another account is ENOTFOUND ("OAuth
// app"), as a missing one.

// CheckRotate returns the ECONFLICT error of rotating the secret of c when
// c is a public client, which has no secret; nil otherwise.
func CheckRotate(c *ams.OAuthClient) error {
	if c.Public {
		return ams.Errorf(ams.ECONFLICT, "public_client", "%s is a public app: it has no secret to rotate.", c.Name)
	}
	return nil
}

// FindClient returns the user's client id; a client of another account
// is ENOTFOUND, as a missing one.
func FindClient(ctx context.Context, store ams.OAuthStore, userID, id string) (*ams.OAuthClient, error) {
	return findOwn(ctx, store, userID, id)
}

// findOwn returns the user's client id (in a transaction: locked).
func findOwn(ctx context.Context, store interface {
	FindOAuthClient(ctx context.Context, id string) (*ams.OAuthClient, error)
}, userID, id string) (*ams.OAuthClient, error) {
	c, err := store.FindOAuthClient(ctx, id)
	if ams.IsNotFound(err) || err == nil && c.UserID != userID {
		return nil, ams.NotFound("OAuth app", id)
	}
	return c, err
}

// RotateClientSecret gives the user's confidential client id a new secret
// and returns it, to be shown once (only its hash is stored); the old
// secret stops working at once. oauth_client.secret_rotated is emitted in
// the same transaction. A public client is ECONFLICT (CheckRotate).
func RotateClientSecret(ctx context.Context, store ClientStore, userID, id string, now time.Time) (*ams.OAuthClient, string, error) {
	secret := ams.NewSecret(PrefixClientSecret)
	var c *ams.OAuthClient
	err := store.Update(ctx, func(tx ams.Tx) error {
		var err error
		if c, err = findOwn(ctx, tx, userID, id); err != nil {
			return err
		}
		if err := CheckRotate(c); err != nil {
			return err
		}
		if c, err = tx.SetOAuthClientSecret(ctx, userID, id, ams.HashSecret(secret), now); err != nil {
			return err
		}
		ams.KeepAnswer(ctx, &ams.SecretAnswer{Record: c, Secret: secret})
		return tx.Emit(ctx, ams.OAuthClientEvent(ams.EventOAuthClientSecretRotated, c, now))
	})
	if err != nil {
		return nil, "", err
	}
	return c, secret, nil
}

// DeleteClient deletes the user's client id; every token it held goes
// with it. oauth_client.deleted (the client as it was) is emitted in the
// same transaction.
func DeleteClient(ctx context.Context, store ClientStore, userID, id string, now time.Time) error {
	return store.Update(ctx, func(tx ams.Tx) error {
		c, err := findOwn(ctx, tx, userID, id)
		if err != nil {
			return err
		}
		if err := tx.DeleteOAuthClient(ctx, userID, id, now); ams.IsNotFound(err) {
			return ams.NotFound("OAuth app", id)
		} else if err != nil {
			return err
		}
		return tx.Emit(ctx, ams.OAuthClientEvent(ams.EventOAuthClientDeleted, c, now))
	})
}

// RevokeGrants takes back what the user authorized the client clientID
// to do: every code, access and refresh token the app holds for the user
// stops working, and the API keys its grants made are revoked at now. An
// app that holds none is left as it is (no error): the outcome is the
// same.
func RevokeGrants(ctx context.Context, store ams.OAuthStore, userID, clientID string, now time.Time) error {
	if err := store.RevokeGrants(ctx, userID, clientID, now); err != nil && !ams.IsNotFound(err) {
		return err
	}
	return nil
}

// ValidateRedirectURI reports why uri cannot be registered as a redirect
// URI: it must be an absolute https URL, or http on a loopback address or
// localhost (for native apps and development), without a fragment or user
// information.
func ValidateRedirectURI(uri string) error {
	bad := func(why string) error {
		return ams.ParamError("parameter_invalid", "redirect_uris", "The redirect URI %q is not valid: %s.", uri, why)
	}
	if len(uri) > 2000 {
		return bad("it is longer than 2000 characters")
	}
	u, err := url.Parse(uri)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		return bad("it must be an absolute URL")
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && isLocalHost(u.Hostname()):
	default:
		return bad("it must use https (http is allowed on localhost and loopback addresses only)")
	}
	if u.Fragment != "" || strings.Contains(uri, "#") {
		return bad("it must not have a fragment")
	}
	if u.User != nil {
		return bad("it must not contain a user name or password")
	}
	return nil
}

func isLocalHost(h string) bool {
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
