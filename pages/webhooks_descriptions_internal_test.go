package pages

import (
	"testing"

	"github.com/amsdev/ams"
)

// TestEveryWebhookEventDescribed: the webhook form describes every event
// type a webhook may subscribe to, so a type added to ams.EventTypes
// cannot show up on the page without a word.
func TestEveryWebhookEventDescribed(t *testing.T) {
	for _, typ := range ams.EventTypes {
		if webhookEventDescriptions[typ] == "" {
			t.Errorf("event type %s has no description on the webhook pages", typ)
		}
	}
}
