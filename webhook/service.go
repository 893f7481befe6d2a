package webhook

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/webhook/ssrf"
)

// The rules of a webhook's fields, the same wherever a webhook is created
// or changed (the API's /v1/webhooks and the account pages). Each error is
// an EINVALID *ams.Error naming its parameter (url, events, secret) with a
// sentence meant for the user.

// Webhook secret bounds.
const (
	MinSecretLength = 16  // characters
	MaxSecretLength = 256 // bytes
)

// SecretPrefix starts the secrets NewSecret makes: a secret of the form
// "whsec_<base64>" is what the Standard Webhooks libraries take, and its
// decoded bytes key the webhook-signature header (StandardKey).
const SecretPrefix = "whsec_"

// NewSecret returns a new random webhook secret: "whsec_" and the base64
// of 32 random bytes.
func NewSecret() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand)
	return SecretPrefix + base64.StdEncoding.EncodeToString(b)
}

// CheckURL validates a webhook URL with the SSRF guard g (https, no
// internal addresses, unless g allows them).
func CheckURL(ctx context.Context, g *ssrf.Guard, u string) error {
	if err := g.CheckURL(ctx, u); err != nil {
		var ue *ssrf.URLError
		if errors.As(err, &ue) {
			return ams.ParamError("parameter_invalid", "url", "Invalid webhook URL: %s.", ue.Reason)
		}
		return err
	}
	return nil
}

// CheckEvents validates the event types a webhook subscribes to and
// returns them without duplicates, in their order.
func CheckEvents(events []string) ([]string, error) {
	if len(events) == 0 {
		return nil, ams.ParamError("parameter_invalid", "events", "'events' must list at least one event type.")
	}
	var out []string
	for _, t := range events {
		if !ams.IsEventType(t) {
			return nil, ams.ParamError("parameter_invalid", "events", "Unknown event type '%s'. Known types: %s.", t, strings.Join(ams.EventTypes, ", "))
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out, nil
}

// CheckSecret validates a webhook secret: MinSecretLength characters to
// MaxSecretLength bytes, no control characters.
func CheckSecret(secret string) error {
	if n := utf8.RuneCountInString(secret); n < MinSecretLength || len(secret) > MaxSecretLength {
		return ams.ParamError("parameter_invalid", "secret", "'secret' must be %d to %d characters.", MinSecretLength, MaxSecretLength)
	}
	if strings.IndexFunc(secret, func(c rune) bool { return c < 0x20 || c == 0x7f }) >= 0 {
		return ams.ParamError("parameter_invalid", "secret", "'secret' must not contain control characters.")
	}
	return nil
}

// PingEvent returns the webhook.ping event that tests webhook id of the
// user, to be stored and queued with ams.Store.PingWebhook.
func PingEvent(userID, webhookID string, now time.Time) *ams.Event {
	return &ams.Event{ID: ams.NewID(ams.PrefixEvent), Object: "event", UserID: userID, Type: ams.EventWebhookPing, CreatedAt: now,
		Data: map[string]any{"webhook_id": webhookID}}
}
