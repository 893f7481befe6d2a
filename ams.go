// Package ams holds the domain of the Assistant Messaging Service: its
// records (users, API keys, assistants, conversations, messages, events),
// the interfaces of the parts that store and process them, and the error
// type that every layer returns. It imports nothing else of the project;
// storage engines, the HTTP server, assistant engines and the CLI are
// subpackages that depend on it.
package ams

import "time"

// Version is the service version, reported in User-Agent headers and the
// OpenAPI document.
const Version = "0.1.0"

// Clock returns the current time. Production code uses time.Now; tests
// inject a clock they control so that time-dependent logic (rate-limit
// windows, retry schedules, expiry) is tested without sleeping.
type Clock func() time.Time

// Now returns the clock's current time in UTC, truncated to milliseconds,
// the precision every stored timestamp has.
func (c Clock) Now() time.Time {
	if c == nil {
		return time.Now().UTC().Truncate(time.Millisecond)
	}
	return c().UTC().Truncate(time.Millisecond)
}

// Auth is the authenticated caller of a request: the account, and the
// credential with the permissions it holds.
type Auth struct {
	User     *User
	KeyID    string // key_ id of the API key, when authenticated by one
	ClientID string // cli_ id of the OAuth client, when authenticated by an access token
	// GrantID is the access token's grant (its request id, shared by the
	// grant's tokens across refreshes), when authenticated by one.
	GrantID     string
	Permissions Permissions
	// ExpiresAt is when the credential stops working (nil: never, or not
	// known to the authenticator). OAuth access tokens set it; the
	// management API reads an API key's own expiry from the store.
	ExpiresAt *time.Time
}
