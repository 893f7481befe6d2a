package mail

import (
	"fmt"
	"time"

	"github.com/amsdev/ams"
)

// WebhookNotices writes the e-mails that tell an account's owner that a
// webhook is degraded (ams.WebhookDegradedAfter failed attempts in a row)
// or has recovered (ams.WebhookNotices). The store queues them in the
// transaction that records the attempt, with the webhook.degraded or
// webhook.recovered event.
type WebhookNotices struct {
	// BaseURL is the service's public URL, named in the e-mails.
	BaseURL string
}

// HealthEmail returns the e-mail telling u of e, a webhook.degraded or
// webhook.recovered event; nil for any other event.
func (n WebhookNotices) HealthEmail(u *ams.User, e *ams.Event) *ams.Email {
	id, _ := e.Data["webhook_id"].(string)
	url, _ := e.Data["url"].(string)
	failed, _ := e.Data["failed_attempts"].(int)
	at := e.CreatedAt.UTC().Format(time.RFC3339)
	var subject, text string
	switch e.Type {
	case ams.EventWebhookDegraded:
		last := "no answer"
		if code, ok := e.Data["status_code"].(int); ok {
			last = fmt.Sprintf("HTTP %d", code)
		}
		if msg, ok := e.Data["error"].(string); ok && msg != "" {
			last += ": " + msg
		}
		subject = "Your ams webhook is degraded: its deliveries fail"
		text = fmt.Sprintf(`Hello,

the last %d deliveries to your webhook %s
(%s) failed in a row, the last at %s (%s).

The webhook is still on: each failed delivery is retried on its schedule,
and a delivery that fails its last attempt turns the webhook off. Its
failed attempts, with the receiver's answers, are listed at

  GET %s/v1/webhooks/%s/deliveries?success=false

We will write again when a delivery to it succeeds.

-- ams
`, failed, url, id, at, last, n.BaseURL, id)
	case ams.EventWebhookRecovered:
		subject = "Your ams webhook receives deliveries again"
		text = fmt.Sprintf(`Hello,

a delivery to your webhook %s
(%s) succeeded at %s, after %d failed attempts in a row.

Deliveries that were still being retried are delivered on their
schedule; the webhook's attempts are listed at

  GET %s/v1/webhooks/%s/deliveries

-- ams
`, url, id, at, failed, n.BaseURL, id)
	default:
		return nil
	}
	return &ams.Email{ID: ams.NewID("eml_"), Kind: ams.EmailWebhookHealth, To: u.Email, Subject: subject, Text: text}
}
