package mail

import (
	"context"
	"log/slog"
	"time"

	"github.com/amsdev/ams"
)

// Backoff is the wait after each failed attempt; after the last, the
// e-mail is given up.
var Backoff = []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 6 * time.Hour, 24 * time.Hour}

// Queue is what the Worker needs of the storage engine: the e-mails
// queued (ams.DeliveryQueue's e-mail methods; ams.Store gives them).
type Queue interface {
	// ClaimEmails leases up to limit e-mails due at now.
	ClaimEmails(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]*ams.Email, error)
	// FinishEmail marks an e-mail sent, or schedules its retry at retryAt
	// (zero: give up).
	FinishEmail(ctx context.Context, id string, sent bool, errText string, retryAt time.Time, now time.Time) error
}

// Worker sends the e-mails queued in the database (for example the notice
// that a webhook is failing). E-mails are queued in the transaction that
// causes them; the Worker leases them, sends them through its Sender, and
// retries failures, so a crash loses none.
type Worker struct {
	Queue        Queue
	Sender       Sender
	Clock        ams.Clock
	Logger       *slog.Logger
	PollInterval time.Duration // default 1 s
}

// Run sends due e-mails until ctx is done.
func (w *Worker) Run(ctx context.Context) error {
	every := w.PollInterval
	if every <= 0 {
		every = time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if _, err := w.RunOnce(ctx); err != nil && ctx.Err() == nil {
			w.Logger.Error("send queued e-mails", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// RunOnce sends the e-mails due now and returns how many were sent.
func (w *Worker) RunOnce(ctx context.Context) (int, error) {
	sent := 0
	for {
		emails, err := w.Queue.ClaimEmails(ctx, w.Clock.Now(), 2*time.Minute, 10)
		if err != nil || len(emails) == 0 {
			return sent, err
		}
		for _, e := range emails {
			err := w.Sender.Send(ctx, &Message{To: e.To, Subject: e.Subject, Text: e.Text})
			now := w.Clock.Now()
			var retry time.Time
			errText := ""
			if err != nil {
				errText = err.Error()
				if e.Attempts < len(Backoff) {
					retry = now.Add(Backoff[e.Attempts])
				}
				w.Logger.Warn("send e-mail", "email", e.ID, "attempt", e.Attempts+1, "err", err, "gave_up", retry.IsZero())
			} else {
				sent++
				w.Logger.Info("e-mail sent", "email", e.ID, "kind", string(e.Kind), "subject", e.Subject)
			}
			if ferr := w.Queue.FinishEmail(context.WithoutCancel(ctx), e.ID, err == nil, errText, retry, now); ferr != nil {
				return sent, ferr
			}
		}
	}
}
