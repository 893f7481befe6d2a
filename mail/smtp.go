package mail

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"net/url"
	"strconv"
	"time"

	"github.com/amsdev/ams/ssrf"
	gomail "github.com/wneessen/go-mail"
)

// dialTimeout bounds connecting to the SMTP server (through AUTH), and
// again transferring the message.
const dialTimeout = 10 * time.Second

// MaxServerBytes bounds what ams reads from the SMTP server in one
// session (its greeting, its replies, a TLS handshake): a server that
// sends more, such as an endless reply line, fails the send.
const MaxServerBytes = 1 << 20

// TLS modes of an smtp:// URL, chosen by its tls query parameter.
const (
	tlsNone      = "none"      // plain text, never STARTTLS
	tlsStartTLS  = "starttls"  // STARTTLS when the server offers it (the default)
	tlsMandatory = "mandatory" // STARTTLS, failing when the server does not offer it
	tlsImplicit  = "implicit"  // TLS from the first byte: the smtps:// scheme
)

// SMTP sends e-mails through an SMTP server. It opens one connection per
// Send and closes it afterwards. It is safe for concurrent use.
type SMTP struct {
	host     string
	port     int
	tlsMode  string
	username string
	password string
	hasAuth  bool
	from     *mail.Address
	redacted string

	// Timeout bounds connecting (greeting, STARTTLS, AUTH), and again
	// transferring the message; the whole session gets at most twice
	// Timeout, whatever the server does. 0 means 10 s; tests make it
	// short.
	Timeout time.Duration

	rootCAs *x509.CertPool // tests only: trusted roots instead of the system's
}

// NewSMTP returns a sender relaying through the SMTP server at rawURL, with
// from as the sender address (DefaultFrom when empty).
//
// The URL is smtp://[user:pass@]host[:port][?tls=none|starttls|mandatory]
// or smtps://[user:pass@]host[:port]. smtp:// defaults to port 25 and to
// opportunistic STARTTLS (tls=starttls): the connection is encrypted when
// the server offers STARTTLS and stays plain otherwise. tls=mandatory fails
// when the server does not offer STARTTLS; tls=none never encrypts, for
// local test servers. smtps:// (port 465 by default) uses TLS from the
// first byte and takes no tls parameter. Server certificates are verified
// against the system's roots.
//
// When the URL has user info, Send authenticates with AUTH PLAIN. PLAIN
// sends the password in the clear, so the SMTP library refuses it on an
// unencrypted connection unless the host is literally localhost, 127.0.0.1
// or ::1: tls=none (or opportunistic STARTTLS against a server without it)
// with credentials only works for such hosts. This is deliberate.
func NewSMTP(rawURL, from string) (*SMTP, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		// url.Error repeats the whole URL, password included: drop it.
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return nil, fmt.Errorf("parse SMTP URL: %w", err)
	}
	s := &SMTP{redacted: u.Redacted()}
	switch u.Scheme {
	case "smtp":
		s.port = 25
	case "smtps":
		s.port = 465
		s.tlsMode = tlsImplicit
	default:
		return nil, fmt.Errorf("parse SMTP URL %s: scheme must be smtp or smtps, not %q", s.redacted, u.Scheme)
	}
	if u.Opaque != "" {
		return nil, fmt.Errorf("parse SMTP URL %s: want %s://host[:port]", s.redacted, u.Scheme)
	}
	s.host = u.Hostname()
	if s.host == "" {
		return nil, fmt.Errorf("parse SMTP URL %s: host is missing", s.redacted)
	}
	if p := u.Port(); p != "" {
		s.port, err = strconv.Atoi(p)
		if err != nil || s.port < 1 || s.port > 65535 {
			return nil, fmt.Errorf("parse SMTP URL %s: invalid port %q", s.redacted, p)
		}
	}
	if u.Path != "" && u.Path != "/" {
		return nil, fmt.Errorf("parse SMTP URL %s: unexpected path %q", s.redacted, u.Path)
	}
	if u.Fragment != "" {
		return nil, fmt.Errorf("parse SMTP URL %s: unexpected fragment", s.redacted)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, fmt.Errorf("parse SMTP URL %s query: %w", s.redacted, err)
	}
	for k := range q {
		if k != "tls" {
			return nil, fmt.Errorf("parse SMTP URL %s: unknown parameter %q (only tls is known)", s.redacted, k)
		}
	}
	if q.Has("tls") {
		if s.tlsMode == tlsImplicit {
			return nil, fmt.Errorf("parse SMTP URL %s: smtps:// always uses TLS and takes no tls parameter", s.redacted)
		}
		switch mode := q.Get("tls"); mode {
		case tlsNone, tlsStartTLS, tlsMandatory:
			s.tlsMode = mode
		default:
			return nil, fmt.Errorf("parse SMTP URL %s: tls must be none, starttls or mandatory, not %q", s.redacted, mode)
		}
	} else if s.tlsMode == "" {
		s.tlsMode = tlsStartTLS
	}
	if u.User != nil {
		s.hasAuth = true
		s.username = u.User.Username()
		s.password, _ = u.User.Password()
		if s.username == "" {
			return nil, fmt.Errorf("parse SMTP URL %s: user name is empty", s.redacted)
		}
	}
	s.from, err = parseFrom(from)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// String returns the server URL with the password redacted, for logs.
func (s *SMTP) String() string { return s.redacted }

// Send delivers m through the SMTP server over a new connection, closed
// before Send returns. Connecting (greeting, STARTTLS, AUTH) is bounded by
// ctx and by a 10-second timeout (Timeout), transferring the message by
// another 10 seconds. The connection is made by ssrf.Operator's
// DialBounded: the session lasts at most twice the timeout and reads at
// most MaxServerBytes from the server, so that a server answering with
// endless lines or trickling them cannot hold ams's memory or time.
func (s *SMTP) Send(ctx context.Context, m *Message) error {
	to, err := checkMessage(m)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("send mail: %w", err)
	}

	msg := gomail.NewMsg(gomail.WithNoDefaultUserAgent())
	msg.FromMailAddress(s.from)
	msg.ToMailAddress(to)
	msg.Subject(m.Subject)
	msg.SetDate()
	msg.SetMessageIDWithValue(newMessageID(s.from))
	msg.SetBodyString(gomail.TypeTextPlain, m.Text)

	client, err := gomail.NewClient(s.host, s.clientOptions()...)
	if err != nil {
		return fmt.Errorf("create SMTP client: %w", err)
	}
	if err := client.DialAndSendWithContext(ctx, msg); err != nil {
		return fmt.Errorf("send mail via %s: %w", s.redacted, err)
	}
	return nil
}

// clientOptions returns the go-mail options for one connection.
func (s *SMTP) clientOptions() []gomail.Option {
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = dialTimeout
	}
	opts := []gomail.Option{
		gomail.WithPort(s.port),
		gomail.WithTimeout(timeout),
		gomail.WithDialContextFunc(s.dialer(timeout)),
	}
	switch s.tlsMode {
	case tlsImplicit:
		// With a dial function of ours, go-mail leaves implicit TLS to
		// it (see dialer).
		opts = append(opts, gomail.WithSSL())
	case tlsMandatory:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSMandatory))
	case tlsStartTLS:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSOpportunistic))
	case tlsNone:
		opts = append(opts, gomail.WithTLSPolicy(gomail.NoTLS))
	}
	if s.rootCAs != nil {
		opts = append(opts, gomail.WithTLSConfig(s.tlsConfig()))
	}
	if s.hasAuth {
		opts = append(opts,
			gomail.WithSMTPAuth(gomail.SMTPAuthPlain),
			gomail.WithUsername(s.username),
			gomail.WithPassword(s.password),
		)
	}
	return opts
}

// tlsConfig is the TLS configuration of the server's connections.
func (s *SMTP) tlsConfig() *tls.Config {
	return &tls.Config{ServerName: s.host, RootCAs: s.rootCAs, MinVersion: tls.VersionTLS12}
}

// dialer returns go-mail's dial function: a connection bounded by
// ssrf.Operator().DialBounded (the relay is the operator's, so no address
// is refused), with TLS from the first byte for smtps://.
func (s *SMTP) dialer(timeout time.Duration) gomail.DialContextFunc {
	dial := ssrf.Operator().DialBounded(ssrf.ConnLimits{Timeout: 2 * timeout, MaxReadBytes: MaxServerBytes})
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil || s.tlsMode != tlsImplicit {
			return conn, err
		}
		tc := tls.Client(conn, s.tlsConfig())
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return nil, err
		}
		return tc, nil
	}
}
