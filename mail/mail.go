// Package mail sends the service's plain-text e-mails, such as the notice
// to a webhook's owner that the webhook was disabled after failing.
//
// Two senders implement Sender: SMTP relays each message to an SMTP server
// given by an smtp:// or smtps:// URL (the --smtp-url flag), and Outbox
// writes each message as an RFC 5322 .eml file into a folder, so that a
// single-machine installation needs no mail server. FromConfig picks one.
//
// E-mails are rare (one per failing webhook), so neither sender queues or
// pools connections: each Send does its work and returns. Queuing is the
// database's: e-mails are queued in the transaction that causes them, and a
// Worker sends them through a Sender, retrying failures.
package mail

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/mail"
	"path/filepath"
	"strings"
)

// DefaultFrom is the sender address used when none is configured.
const DefaultFrom = "ams <no-reply@localhost>"

// ErrHeaderInjection is returned (wrapped) by Send when the recipient or the
// subject of a message holds a line break, which could smuggle extra headers
// into the e-mail.
var ErrHeaderInjection = errors.New("line break in mail header")

// Message is a plain-text e-mail. The sender address is the Sender's.
type Message struct {
	To      string // recipient, "addr@example.com" or "Name <addr@example.com>"
	Subject string // any UTF-8 text without line breaks
	Text    string // plain-text body, UTF-8
}

// Sender delivers e-mails.
type Sender interface {
	// Send delivers m, or returns why it could not. It does not retry.
	Send(ctx context.Context, m *Message) error
}

// FromConfig returns the sender the configuration asks for: an SMTP sender
// when smtpURL is set, else an Outbox writing into <dataDir>/outbox. An
// empty from means DefaultFrom.
func FromConfig(smtpURL, dataDir, from string) (Sender, error) {
	if smtpURL != "" {
		s, err := NewSMTP(smtpURL, from)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	if dataDir == "" {
		return nil, errors.New("configure mail: neither an SMTP URL nor a data directory is set")
	}
	if _, err := parseFrom(from); err != nil {
		return nil, err
	}
	return NewOutbox(filepath.Join(dataDir, "outbox"), from), nil
}

// parseFrom parses the sender address, DefaultFrom when from is empty.
func parseFrom(from string) (*mail.Address, error) {
	if from == "" {
		from = DefaultFrom
	}
	if strings.ContainsAny(from, "\r\n") {
		return nil, fmt.Errorf("parse sender address: %w", ErrHeaderInjection)
	}
	addr, err := mail.ParseAddress(from)
	if err != nil {
		return nil, fmt.Errorf("parse sender address %q: %w", from, err)
	}
	return addr, nil
}

// checkMessage validates m and returns its parsed recipient.
func checkMessage(m *Message) (*mail.Address, error) {
	if m == nil {
		return nil, errors.New("check message: message is nil")
	}
	if strings.ContainsAny(m.To, "\r\n") {
		return nil, fmt.Errorf("check recipient: %w", ErrHeaderInjection)
	}
	if strings.ContainsAny(m.Subject, "\r\n") {
		return nil, fmt.Errorf("check subject: %w", ErrHeaderInjection)
	}
	if strings.TrimSpace(m.To) == "" {
		return nil, errors.New("check recipient: recipient is empty")
	}
	to, err := mail.ParseAddress(m.To)
	if err != nil {
		return nil, fmt.Errorf("parse recipient %q: %w", m.To, err)
	}
	return to, nil
}

// newMessageID returns a unique Message-ID value, without angle brackets,
// in the domain of the sender address.
func newMessageID(from *mail.Address) string {
	domain := "localhost"
	if i := strings.LastIndexByte(from.Address, '@'); i >= 0 && i+1 < len(from.Address) {
		domain = from.Address[i+1:]
	}
	return randomHex(16) + "@" + domain
}

// randomHex returns n random bytes, hex-encoded.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never returns an error
	return hex.EncodeToString(b)
}
