package hostile_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/dump"
	"github.com/amsdev/ams/internal/testing/hostile"
	"github.com/amsdev/ams/internal/testing/sqlitetest"
	"github.com/amsdev/ams/mail"
)

// smtpSession plays an SMTP server that behaves until step ("greeting",
// "EHLO", "MAIL", "DATA" for the reply after the message) and then does
// act instead of answering.
func smtpSession(step string, act func(c *hostile.Conn)) func(c *hostile.Conn) {
	return func(c *hostile.Conn) {
		if step == "greeting" {
			act(c)
			return
		}
		c.Write([]byte("220 mail.test ESMTP ready\r\n"))
		for {
			line, err := c.R.ReadString('\n')
			if err != nil {
				return
			}
			verb := strings.ToUpper(strings.Fields(line + " x")[0])
			switch {
			case verb == "EHLO" && step == "EHLO", verb == "MAIL" && step == "MAIL":
				act(c)
				return
			case verb == "EHLO":
				c.Write([]byte("250-mail.test\r\n250 8BITMIME\r\n"))
			case verb == "DATA":
				c.Write([]byte("354 go on\r\n"))
				for {
					l, err := c.R.ReadString('\n')
					if err != nil {
						return
					}
					if l == ".\r\n" {
						break
					}
				}
				if step == "DATA" {
					act(c)
					return
				}
				c.Write([]byte("250 queued\r\n"))
			case verb == "QUIT":
				c.Write([]byte("221 bye\r\n"))
				return
			default:
				c.Write([]byte("250 ok\r\n"))
			}
		}
	}
}

// endless sends unit again and again (to Ceiling) after prefix.
func endless(prefix, unit string) func(c *hostile.Conn) {
	return func(c *hostile.Conn) {
		c.Write([]byte(prefix))
		buf := []byte(strings.Repeat(unit, (32<<10)/len(unit)))
		for sent := 0; sent < hostile.Ceiling; sent += len(buf) {
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}
}

// logs keeps the text of the records logged.
type logs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logs) Write(p []byte) (int, error) { l.mu.Lock(); defer l.mu.Unlock(); return l.buf.Write(p) }
func (l *logs) String() string              { l.mu.Lock(); defer l.mu.Unlock(); return l.buf.String() }

// TestSMTPServer sends a queued e-mail (the mail worker, on a real store)
// through SMTP servers that answer as an attacker or a broken relay
// would, and checks that the attempt fails, is recorded on the e-mail
// (its last_error, a retry scheduled) and logged, while the memory of the
// attempt stays bounded: go-mail reads replies with net/textproto, which
// bounds neither a line nor the lines of a reply.
func TestSMTPServer(t *testing.T) {
	cases := []struct {
		name, step string
		act        func(c *hostile.Conn)
		want       string // in the recorded error
		budget     int64
		// timeout is the sender's (mail.SMTP.Timeout): short for the
		// servers that a time bound stops; the others get the
		// production one, which they must not reach.
		timeout time.Duration
	}{
		{name: "endless greeting line", step: "greeting", act: endless("220 ", "a"), budget: 8 << 20,
			want: "answers exceed the limit of 1 MiB"},
		{name: "endless multi-line greeting", step: "greeting", act: endless("", "220-mail.test says hello\r\n"), budget: 8 << 20,
			want: "answers exceed the limit of 1 MiB"},
		{name: "endless EHLO reply", step: "EHLO", act: endless("", "250-X-PADDING aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n"), budget: 8 << 20,
			want: "answers exceed the limit of 1 MiB"},
		{name: "endless reply to the message", step: "DATA", act: endless("250 ", "a"), budget: 8 << 20,
			want: "answers exceed the limit of 1 MiB"},
		{name: "trickled greeting", step: "greeting", act: trickleLine("220 hello there, this is a slow server\r\n", 20*time.Millisecond),
			budget: 4 << 20, want: "timeout", timeout: 300 * time.Millisecond},
		{name: "hang after MAIL", step: "MAIL", act: func(c *hostile.Conn) { c.R.WriteTo(discard{}) }, budget: 4 << 20,
			want: "timeout", timeout: 300 * time.Millisecond},
		{name: "not SMTP", step: "greeting", act: func(c *hostile.Conn) { c.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n")) },
			budget: 4 << 20, want: "short response"},
	}
	ctx := context.Background()
	db := sqlitetest.Open(t)
	// The cases share the store and the time: the e-mails of the cases
	// before are not due again (their retries come a minute later).
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id := ams.NewID("eml_")
			// A recipient per case, so that no per-recipient cap is reached.
			e := &ams.Email{ID: id, Kind: ams.EmailWebhookFailing, To: fmt.Sprintf("ann+%d@example.com", i), Subject: "Hello", Text: "Hello, Ann."}
			if err := db.QueueEmail(ctx, e, now); err != nil {
				t.Fatal(err)
			}
			peer := hostile.NewLine(t, smtpSession(tc.step, tc.act))
			s, err := mail.NewSMTP("smtp://"+peer.Addr()+"?tls=none", "ams@example.com")
			if err != nil {
				t.Fatal(err)
			}
			s.Timeout = tc.timeout // 0: 10 s
			var log logs
			w := &mail.Worker{Queue: db, Sender: s, Clock: func() time.Time { return now }, Logger: slog.New(slog.NewTextHandler(&log, nil))}

			m := hostile.Measure()
			sent, err := w.RunOnce(ctx)
			used := m.Allocated()
			if err != nil || sent != 0 {
				t.Fatalf("RunOnce: %d sent, %v", sent, err)
			}
			t.Logf("the attempt allocated %s; the server sent %s", hostile.MiB(used), hostile.MiB(peer.Sent()))
			if used > tc.budget {
				t.Errorf("the attempt allocated %s, more than %s: the server's replies are not bounded (it sent %s)",
					hostile.MiB(used), hostile.MiB(tc.budget), hostile.MiB(peer.Sent()))
			}

			// Recorded: the e-mail's last_error, and a retry scheduled.
			var lastError string
			var attempts int64
			err = db.Export(ctx, func(tb *dump.Table, vals []any) error {
				if tb.Name != "emails" {
					return nil
				}
				row := map[string]any{}
				for i, c := range tb.Columns {
					row[c.SQL] = vals[i]
				}
				if row["id"] == id {
					lastError, _ = row["last_error"].(string)
					attempts, _ = row["attempts"].(int64)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if attempts != 1 || !strings.Contains(lastError, tc.want) {
				t.Fatalf("e-mail after the attempt: %d attempts, last_error %q; want 1, saying %q", attempts, lastError, tc.want)
			}
			if !strings.Contains(log.String(), "send e-mail") || !strings.Contains(log.String(), tc.want) {
				t.Fatalf("log: %s", log.String())
			}
			again, err := db.ClaimEmails(ctx, now.Add(mail.Backoff[0]), time.Minute, 10)
			if err != nil || len(again) != 1 || again[0].ID != id {
				t.Fatalf("the e-mail is not retried: %v %v", again, err)
			}
		})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// trickleLine sends line a byte every interval, again and again, until
// the client goes away.
func trickleLine(line string, every time.Duration) func(c *hostile.Conn) {
	return func(c *hostile.Conn) {
		t := time.NewTicker(every)
		defer t.Stop()
		for i := 0; ; i++ {
			if _, err := c.Write([]byte{line[i%len(line)]}); err != nil {
				return
			}
			<-t.C
		}
	}
}
