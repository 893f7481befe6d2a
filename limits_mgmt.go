package ams

// Caps on the management records of one account (issue 26, L7): an
// account's credentials are bounded, so that one account cannot fill the
// store or make the authentication paths slow. Every way of creating one
// (the management API, the account pages, the CLI) goes through the
// service that owns the write (account.Service.CreateKey,
// oauth.CreateClient), which counts inside the creating transaction with
// the account's row locked (ManagementTx.CountActiveKeys,
// CountOAuthClients): two creations, from any processes, count one after
// the other.
const (
	// MaxAPIKeys is how many API keys an account may have that are neither
	// revoked nor expired. Revoked and expired keys stay listed and do not
	// count.
	MaxAPIKeys = 100
	// MaxOAuthClients is how many OAuth clients (apps) an account may
	// have registered; deleting one frees its place.
	MaxOAuthClients = 50
)

// ErrKeyLimit is the error of creating an API key beyond MaxAPIKeys:
// ECONFLICT (409) api_key_limit_reached.
func ErrKeyLimit(max int) error {
	return Errorf(ECONFLICT, "api_key_limit_reached",
		"This account already has %d API keys in use, the most it may have. Revoke one it no longer needs to create another.", max)
}

// ErrOAuthClientLimit is the error of registering an OAuth client beyond
// MaxOAuthClients: ECONFLICT (409) oauth_client_limit_reached.
func ErrOAuthClientLimit(max int) error {
	return Errorf(ECONFLICT, "oauth_client_limit_reached",
		"This account already has %d OAuth apps, the most it may have. Delete one it no longer needs to register another.", max)
}
