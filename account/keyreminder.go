package account

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/format"
)

// DefaultKeyReminderInterval is how often KeyReminders looks for keys due
// a reminder.
const DefaultKeyReminderInterval = time.Hour

// keyReminderBatch is how many due reminders KeyReminders reads at a time.
const keyReminderBatch = 100

// KeyReminders e-mails the owner of an active API key once when the key
// expires within ams.KeyReminderLead (14 days), and once when it turns
// ams.KeyRotationAge (90 days, the recommended rotation) old within it. The
// e-mail is queued in the database with the mark that the key was
// reminded for that reason, in one transaction that only one process can
// make (ams.KeyReminderStore.RemindKey), and the mail worker (mail.Worker)
// sends it. Every process runs it; restarts and other processes never
// send one twice.
type KeyReminders struct {
	Store ams.KeyReminderStore
	Clock ams.Clock
	// Logger receives the logs (nil: slog.Default()).
	Logger *slog.Logger
	// BaseURL is the service's public URL, without a trailing slash: the
	// e-mails link to its keys page.
	BaseURL string
	// Interval is how often Run looks (0: DefaultKeyReminderInterval).
	Interval time.Duration
}

// Run queues the due reminders at start and every Interval until ctx is
// done.
func (r *KeyReminders) Run(ctx context.Context) error {
	every := r.Interval
	if every <= 0 {
		every = DefaultKeyReminderInterval
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if n, err := r.RunOnce(ctx); err != nil && ctx.Err() == nil {
			r.logger().Error("queue API key reminders", "err", err)
		} else if n > 0 {
			r.logger().Info("queued API key reminders", "emails", n)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// RunOnce queues the e-mails of the reminders due now and returns how many
// it queued (those another process queued first are not counted).
func (r *KeyReminders) RunOnce(ctx context.Context) (int, error) {
	now := r.Clock.Now()
	queued := 0
	for {
		due, err := r.Store.DueKeyReminders(ctx, now, keyReminderBatch)
		if err != nil {
			return queued, err
		}
		progress := false
		for _, d := range due {
			ok, err := r.Store.RemindKey(ctx, d.Key.ID, d.Reason, r.Email(d, now), now)
			if err != nil {
				return queued, err
			}
			// Either way the reminder is no longer due: RemindKey made it,
			// or another process did, or the key was revoked meanwhile.
			progress = true
			if ok {
				queued++
				r.logger().Info("API key reminder queued", "key", d.Key.ID, "user", d.User.ID, "reason", string(d.Reason))
			}
		}
		if len(due) < keyReminderBatch || !progress {
			return queued, nil
		}
	}
}

func (r *KeyReminders) logger() *slog.Logger {
	if r.Logger == nil {
		return slog.Default()
	}
	return r.Logger
}

// Email returns the e-mail of reminder d at now: it names the key (its
// name and hint, never the secret), the date in the owner's time zone,
// what happens then, and how to rotate the key on the keys page.
func (r *KeyReminders) Email(d *ams.KeyReminder, now time.Time) *ams.Email {
	loc, err := time.LoadLocation(d.User.Timezone)
	if err != nil || d.User.Timezone == "" {
		loc = time.UTC
	}
	k := d.Key
	name := printable(k.Name)
	created := format.Date(k.CreatedAt, loc)
	rotate := fmt.Sprintf(`To rotate it without interruption: on the API keys page of your account,

  %s/account/keys

create a new key with the same permissions (%s), put it where
this one is used, then revoke this one there.`, r.BaseURL, k.Permissions)
	var subject, what string
	switch d.Reason {
	case ams.KeyReminderExpiry:
		when := format.Time(d.At, loc)
		subject = fmt.Sprintf("Your ams API key %q expires on %s", name, format.Date(d.At, loc))
		what = fmt.Sprintf(`your API key %q (%s, created %s) expires on
%s. From then on every request made with it is refused
(401 api_key_expired).`, name, k.Hint, created, when)
	default: // ams.KeyReminderAge
		when := format.Date(d.At, loc)
		turns, subjectTurns := "turns", "turns 90 days old on "+when
		if !d.At.After(now) {
			turns, subjectTurns = "turned", "is over 90 days old"
		}
		until := "It keeps working until you revoke it"
		if k.ExpiresAt != nil {
			until = "It keeps working until it expires on " + format.Time(*k.ExpiresAt, loc) + " or you revoke it"
		}
		subject = fmt.Sprintf("Your ams API key %q %s: time to rotate it", name, subjectTurns)
		what = fmt.Sprintf(`your API key %q (%s, created %s) %s 90 days
old on %s. We recommend rotating API keys every 90 days, so that
a key that leaked without your knowing stops working.
%s: nothing happens to it by itself.`, name, k.Hint, created, turns, when, until)
	}
	text := "Hello,\n\n" + what + "\n\n" + rotate + "\n\nYou get this reminder once for this key.\n\n-- ams\n"
	return &ams.Email{ID: ams.NewID("eml_"), Kind: ams.EmailKeyReminder, To: d.User.Email, Subject: subject, Text: text}
}

// printable returns s with control characters (a line break in a key's
// name would break the subject header) made spaces.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}
