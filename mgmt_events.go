package ams

import (
	"slices"
	"strings"
)

// ManagementEventTypes are the audit events of the management of an
// account (its API keys, OAuth clients and settings). Their data (key
// names and permissions, client names and redirect URIs, the account's
// e-mail) is what only `admin` may manage, so only `admin` may read them
// (issue 26, L8): GET /v1/events leaves them out for a credential
// without admin (and answers 403 when asked for one by type or id), and
// a webhook receives them only when the last credential that created or
// changed it held admin (Webhook.ManagementEvents), whether it names
// them or subscribes to "*".
var ManagementEventTypes = []string{EventAPIKeyCreated, EventAPIKeyRevoked,
	EventOAuthClientCreated, EventOAuthClientSecretRotated, EventOAuthClientDeleted, EventAccountUpdated}

// IsManagementEvent reports whether typ is one of ManagementEventTypes.
func IsManagementEvent(typ string) bool { return slices.Contains(ManagementEventTypes, typ) }

// ManagementEventList is ManagementEventTypes as an SQL list of string
// literals ('api_key.created', ...), for the stores' queries.
func ManagementEventList() string {
	return "'" + strings.Join(ManagementEventTypes, "', '") + "'"
}

// ErrManagementEventsNeedAdmin is the error of reading a management event,
// or of subscribing a webhook to one by name, with a credential without
// admin: EFORBIDDEN (403) insufficient_scope, naming param.
func ErrManagementEventsNeedAdmin(param, typ string) error {
	e := Errorf(EFORBIDDEN, "insufficient_scope",
		"Events of type %s are management audit events: reading them or subscribing to them needs the admin permission.", Clip(typ))
	e.Param = param
	return e
}
