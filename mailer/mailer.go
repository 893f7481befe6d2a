// Package mailer sends the e-mails queued in the database (for example the
// notice that a webhook is failing). E-mails are queued in the transaction
// that causes them; the mailer leases them, sends them through a
// mail.Sender, and retries failures, so a crash loses none.
package mailer

import (
	"context"
	"log/slog"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/mail"
)

// Backoff is the wait after each failed attempt; after the last, the
// e-mail is given up.
var Backoff = []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 6 * time.Hour, 24 * time.Hour}

// Mailer drains the e-mail queue.
type Mailer struct {
	Queue        ams.DeliveryQueue
	Sender       mail.Sender
	Clock        ams.Clock
	Logger       *slog.Logger
	PollInterval time.Duration // default 1 s
}

// Run sends due e-mails until ctx is done.
func (m *Mailer) Run(ctx context.Context) error {
	every := m.PollInterval
	if every <= 0 {
		every = time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if _, err := m.RunOnce(ctx); err != nil && ctx.Err() == nil {
			m.Logger.Error("send queued e-mails", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// RunOnce sends the e-mails due now and returns how many were sent.
func (m *Mailer) RunOnce(ctx context.Context) (int, error) {
	sent := 0
	for {
		emails, err := m.Queue.ClaimEmails(ctx, m.Clock.Now(), 2*time.Minute, 10)
		if err != nil || len(emails) == 0 {
			return sent, err
		}
		for _, e := range emails {
			err := m.Sender.Send(ctx, &mail.Message{To: e.To, Subject: e.Subject, Text: e.Text})
			now := m.Clock.Now()
			var retry time.Time
			errText := ""
			if err != nil {
				errText = err.Error()
				if e.Attempts < len(Backoff) {
					retry = now.Add(Backoff[e.Attempts])
				}
				m.Logger.Warn("send e-mail", "email", e.ID, "attempt", e.Attempts+1, "err", err, "gave_up", retry.IsZero())
			} else {
				sent++
				m.Logger.Info("e-mail sent", "email", e.ID, "subject", e.Subject)
			}
			if ferr := m.Queue.FinishEmail(context.WithoutCancel(ctx), e.ID, err == nil, errText, retry, now); ferr != nil {
				return sent, ferr
			}
		}
	}
}
