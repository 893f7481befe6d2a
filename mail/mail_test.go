package mail

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"log"
	"math/big"
	"mime"
	"mime/quotedprintable"
	"net"
	netmail "net/mail"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// received is one message as the test SMTP server saw it.
type received struct {
	from       string
	to         []string
	data       []byte
	authed     bool
	user, pass string
	tls        bool
}

// testBackend is a minimal go-smtp backend that records what it receives.
type testBackend struct {
	rejectRcpt bool // answer 550 to RCPT TO

	mu   sync.Mutex
	msgs []received
	auth []string // "user:pass" of every AUTH attempt
}

func (b *testBackend) NewSession(c *smtp.Conn) (smtp.Session, error) {
	return &testSession{b: b, conn: c}, nil
}

func (b *testBackend) messages() []received {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]received(nil), b.msgs...)
}

func (b *testBackend) auths() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.auth...)
}

// testSession implements smtp.Session and smtp.AuthSession.
type testSession struct {
	b    *testBackend
	conn *smtp.Conn
	cur  received
}

var _ smtp.AuthSession = (*testSession)(nil)

func (s *testSession) AuthMechanisms() []string { return []string{sasl.Plain} }

func (s *testSession) Auth(mech string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(identity, username, password string) error {
		s.b.mu.Lock()
		s.b.auth = append(s.b.auth, username+":"+password)
		s.b.mu.Unlock()
		s.cur.authed, s.cur.user, s.cur.pass = true, username, password
		return nil
	}), nil
}

func (s *testSession) Mail(from string, _ *smtp.MailOptions) error {
	s.cur.from = from
	return nil
}

func (s *testSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	if s.b.rejectRcpt {
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such user here"}
	}
	s.cur.to = append(s.cur.to, to)
	return nil
}

func (s *testSession) Data(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	msg := s.cur
	msg.data = data
	_, msg.tls = s.conn.TLSConnectionState()
	s.b.mu.Lock()
	s.b.msgs = append(s.b.msgs, msg)
	s.b.mu.Unlock()
	return nil
}

func (s *testSession) Reset() {
	s.cur = received{authed: s.cur.authed, user: s.cur.user, pass: s.cur.pass}
}

func (s *testSession) Logout() error { return nil }

// serverOptions configures startServer.
type serverOptions struct {
	host     string      // listen address, 127.0.0.1 by default
	tls      *tls.Config // offer STARTTLS with this configuration
	implicit bool        // TLS from the first byte (smtps)
}

// startServer runs a go-smtp server until the test ends and returns its
// port.
func startServer(t *testing.T, be *testBackend, opts serverOptions) int {
	t.Helper()
	host := opts.host
	if host == "" {
		host = "127.0.0.1"
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	srv := smtp.NewServer(be)
	srv.Domain = "localhost"
	srv.AllowInsecureAuth = true
	srv.ReadTimeout = 10 * time.Second
	srv.WriteTimeout = 10 * time.Second
	srv.ErrorLog = log.New(io.Discard, "", 0)
	srv.TLSConfig = opts.tls
	if opts.implicit {
		l = tls.NewListener(l, opts.tls)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(l)
	}()
	t.Cleanup(func() {
		// Close the listener too: srv.Close only closes the listeners
		// Serve has registered, which it may not have done yet.
		_ = srv.Close()
		_ = l.Close()
		<-done
	})
	return l.Addr().(*net.TCPAddr).Port
}

// testCert returns a server TLS configuration with a self-signed
// certificate for 127.0.0.1 and localhost, and a pool trusting it.
func testCert(t *testing.T) (*tls.Config, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "ams test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	cfg := &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}},
		MinVersion:   tls.VersionTLS12,
	}
	return cfg, pool
}

// decodedBody reads the body of msg, undoing quoted-printable when the
// Content-Transfer-Encoding says so, with line endings normalised to \n.
func decodedBody(t *testing.T, msg *netmail.Message) string {
	t.Helper()
	var r io.Reader = msg.Body
	switch cte := strings.ToLower(msg.Header.Get("Content-Transfer-Encoding")); cte {
	case "quoted-printable":
		r = quotedprintable.NewReader(r)
	case "", "7bit", "8bit":
	default:
		t.Fatalf("unexpected Content-Transfer-Encoding %q", cte)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return strings.ReplaceAll(string(b), "\r\n", "\n")
}

// decodeHeader decodes RFC 2047 encoded words.
func decodeHeader(t *testing.T, s string) string {
	t.Helper()
	dec := new(mime.WordDecoder)
	out, err := dec.DecodeHeader(s)
	if err != nil {
		t.Fatalf("decode header %q: %v", s, err)
	}
	return out
}

// A subject and a body that need encoding: non-ASCII, a long line, an
// "=" sign, trailing spaces.
const (
	testSubject = "Webhook désactivé — ça ne répond plus (échec n° 42) après plusieurs tentatives 🚨"
	testText    = "Hello,\n\nthe webhook https://example.com/hook?a=1&b=2 failed too often and was disabled. " +
		"Ce message contient des caractères accentués: é, ü, ß, 日本語.\n" +
		"Trailing spaces   \nBye.\n"
)

func checkReceived(t *testing.T, got received, wantTo string) {
	t.Helper()
	if got.from != "no-reply@localhost" {
		t.Errorf("MAIL FROM = %q, want no-reply@localhost", got.from)
	}
	if len(got.to) != 1 || got.to[0] != wantTo {
		t.Errorf("RCPT TO = %q, want [%s]", got.to, wantTo)
	}
	msg, err := netmail.ReadMessage(strings.NewReader(string(got.data)))
	if err != nil {
		t.Fatalf("parse message: %v\n%s", err, got.data)
	}
	if s := decodeHeader(t, msg.Header.Get("Subject")); s != testSubject {
		t.Errorf("Subject = %q, want %q", s, testSubject)
	}
	from, err := msg.Header.AddressList("From")
	if err != nil || len(from) != 1 || from[0].Address != "no-reply@localhost" || from[0].Name != "ams" {
		t.Errorf("From = %v (%v), want ams <no-reply@localhost>", from, err)
	}
	to, err := msg.Header.AddressList("To")
	if err != nil || len(to) != 1 || to[0].Address != wantTo {
		t.Errorf("To = %v (%v), want %s", to, err, wantTo)
	}
	if id := msg.Header.Get("Message-ID"); !strings.HasPrefix(id, "<") || !strings.HasSuffix(id, "@localhost>") {
		t.Errorf("Message-ID = %q, want <...@localhost>", id)
	}
	if _, err := msg.Header.Date(); err != nil {
		t.Errorf("Date: %v", err)
	}
	mt, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil || mt != "text/plain" || !strings.EqualFold(params["charset"], "utf-8") {
		t.Errorf("Content-Type = %q, want text/plain; charset=utf-8", msg.Header.Get("Content-Type"))
	}
	if body := decodedBody(t, msg); strings.TrimRight(body, "\n") != strings.TrimRight(testText, "\n") {
		t.Errorf("body = %q, want %q", body, testText)
	}
}

func TestSMTPSend(t *testing.T) {
	be := &testBackend{}
	port := startServer(t, be, serverOptions{})
	s, err := NewSMTP("smtp://user:p%40ss@127.0.0.1:"+strconv.Itoa(port)+"?tls=none", "")
	if err != nil {
		t.Fatal(err)
	}
	err = s.Send(context.Background(), &Message{To: "Bob <bob@example.com>", Subject: testSubject, Text: testText})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	msgs := be.messages()
	if len(msgs) != 1 {
		t.Fatalf("server received %d messages, want 1", len(msgs))
	}
	if !msgs[0].authed || msgs[0].user != "user" || msgs[0].pass != "p@ss" {
		t.Errorf("AUTH = %v %q:%q, want user:p@ss", msgs[0].authed, msgs[0].user, msgs[0].pass)
	}
	if msgs[0].tls {
		t.Error("tls=none used TLS")
	}
	checkReceived(t, msgs[0], "bob@example.com")
}

func TestSMTPNoAuthOpportunisticPlain(t *testing.T) {
	// No user info: no AUTH. The default tls=starttls falls back to plain
	// text when the server offers no STARTTLS.
	be := &testBackend{}
	port := startServer(t, be, serverOptions{})
	s, err := NewSMTP("smtp://127.0.0.1:"+strconv.Itoa(port), DefaultFrom)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Send(context.Background(), &Message{To: "bob@example.com", Subject: testSubject, Text: testText}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	msgs := be.messages()
	if len(msgs) != 1 {
		t.Fatalf("server received %d messages, want 1", len(msgs))
	}
	if msgs[0].authed || len(be.auths()) != 0 {
		t.Errorf("AUTH attempted without credentials: %q", be.auths())
	}
	checkReceived(t, msgs[0], "bob@example.com")
}

func TestSMTPStartTLS(t *testing.T) {
	cfg, pool := testCert(t)
	for _, mode := range []string{"", "?tls=starttls", "?tls=mandatory"} {
		t.Run(mode, func(t *testing.T) {
			be := &testBackend{}
			port := startServer(t, be, serverOptions{tls: cfg})
			s, err := NewSMTP("smtp://user:pass@127.0.0.1:"+strconv.Itoa(port)+mode, "")
			if err != nil {
				t.Fatal(err)
			}
			s.rootCAs = pool
			if err := s.Send(context.Background(), &Message{To: "bob@example.com", Subject: testSubject, Text: testText}); err != nil {
				t.Fatalf("Send: %v", err)
			}
			msgs := be.messages()
			if len(msgs) != 1 {
				t.Fatalf("server received %d messages, want 1", len(msgs))
			}
			if !msgs[0].tls {
				t.Error("message was not sent over TLS")
			}
			if msgs[0].user != "user" || msgs[0].pass != "pass" {
				t.Errorf("AUTH = %q:%q, want user:pass", msgs[0].user, msgs[0].pass)
			}
			checkReceived(t, msgs[0], "bob@example.com")
		})
	}
}

func TestSMTPStartTLSUntrustedCert(t *testing.T) {
	cfg, _ := testCert(t)
	be := &testBackend{}
	port := startServer(t, be, serverOptions{tls: cfg})
	s, err := NewSMTP("smtp://user:pass@127.0.0.1:"+strconv.Itoa(port)+"?tls=mandatory", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Send(context.Background(), &Message{To: "bob@example.com", Subject: "s", Text: "t"}); err == nil {
		t.Fatal("Send trusted a self-signed certificate")
	}
	if len(be.messages()) != 0 || len(be.auths()) != 0 {
		t.Error("server received a message or credentials")
	}
}

func TestSMTPMandatoryWithoutSTARTTLS(t *testing.T) {
	be := &testBackend{}
	port := startServer(t, be, serverOptions{})
	s, err := NewSMTP("smtp://user:pass@127.0.0.1:"+strconv.Itoa(port)+"?tls=mandatory", "")
	if err != nil {
		t.Fatal(err)
	}
	err = s.Send(context.Background(), &Message{To: "bob@example.com", Subject: "s", Text: "t"})
	if err == nil {
		t.Fatal("Send succeeded without STARTTLS under tls=mandatory")
	}
	if len(be.messages()) != 0 || len(be.auths()) != 0 {
		t.Error("server received a message or credentials")
	}
}

func TestSMTPS(t *testing.T) {
	cfg, pool := testCert(t)
	be := &testBackend{}
	port := startServer(t, be, serverOptions{tls: cfg, implicit: true})
	s, err := NewSMTP("smtps://user:pass@127.0.0.1:"+strconv.Itoa(port), "")
	if err != nil {
		t.Fatal(err)
	}
	s.rootCAs = pool
	if err := s.Send(context.Background(), &Message{To: "bob@example.com", Subject: testSubject, Text: testText}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	msgs := be.messages()
	if len(msgs) != 1 {
		t.Fatalf("server received %d messages, want 1", len(msgs))
	}
	if !msgs[0].tls || msgs[0].user != "user" || msgs[0].pass != "pass" {
		t.Errorf("tls=%v AUTH=%q:%q, want TLS and user:pass", msgs[0].tls, msgs[0].user, msgs[0].pass)
	}
	checkReceived(t, msgs[0], "bob@example.com")
}

func TestSMTPRejected(t *testing.T) {
	be := &testBackend{rejectRcpt: true}
	port := startServer(t, be, serverOptions{})
	s, err := NewSMTP("smtp://127.0.0.1:"+strconv.Itoa(port)+"?tls=none", "")
	if err != nil {
		t.Fatal(err)
	}
	err = s.Send(context.Background(), &Message{To: "nobody@example.com", Subject: "s", Text: "t"})
	if err == nil {
		t.Fatal("Send succeeded although the server refused the recipient")
	}
	if !strings.Contains(err.Error(), "550") {
		t.Errorf("error %q does not carry the server's 550 reply", err)
	}
	if len(be.messages()) != 0 {
		t.Error("server received a message")
	}
}

func TestSMTPUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	s, err := NewSMTP("smtp://127.0.0.1:"+strconv.Itoa(port)+"?tls=none", "")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := s.Send(context.Background(), &Message{To: "bob@example.com", Subject: "s", Text: "t"}); err == nil {
		t.Fatal("Send to a closed port succeeded")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Send took %v to fail", d)
	}
}

func TestSMTPCanceledContext(t *testing.T) {
	s, err := NewSMTP("smtp://127.0.0.1:1?tls=none", "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = s.Send(ctx, &Message{To: "bob@example.com", Subject: "s", Text: "t"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Send = %v, want context.Canceled", err)
	}
}

func TestSMTPPlainAuthRefusedWithoutTLSToRemoteHost(t *testing.T) {
	// go-mail only sends a PLAIN password unencrypted to a host named
	// localhost, 127.0.0.1 or ::1. 127.0.0.2 is loopback on Linux but not
	// one of those names, so it stands for a remote host here.
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("cannot listen on 127.0.0.2: %v", err)
	}
	_ = l.Close()
	be := &testBackend{}
	port := startServer(t, be, serverOptions{host: "127.0.0.2"})
	s, err := NewSMTP("smtp://user:pass@127.0.0.2:"+strconv.Itoa(port)+"?tls=none", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Send(context.Background(), &Message{To: "bob@example.com", Subject: "s", Text: "t"}); err == nil {
		t.Fatal("Send sent a PLAIN password over plain text to a non-local host")
	}
	if len(be.auths()) != 0 || len(be.messages()) != 0 {
		t.Errorf("server received credentials %q or a message", be.auths())
	}
}

func TestNewSMTPURL(t *testing.T) {
	good := []struct {
		url, host string
		port      int
		mode      string
		auth      bool
	}{
		{"smtp://mail.example.com", "mail.example.com", 25, tlsStartTLS, false},
		{"smtp://u:p@mail.example.com:587", "mail.example.com", 587, tlsStartTLS, true},
		{"smtp://u:p@mail.example.com:587/", "mail.example.com", 587, tlsStartTLS, true},
		{"smtp://127.0.0.1:2525?tls=none", "127.0.0.1", 2525, tlsNone, false},
		{"smtp://host?tls=starttls", "host", 25, tlsStartTLS, false},
		{"smtp://host?tls=mandatory", "host", 25, tlsMandatory, false},
		{"smtps://u:p@host", "host", 465, tlsImplicit, true},
		{"smtps://host:2465", "host", 2465, tlsImplicit, false},
		{"smtp://[::1]:2525?tls=none", "::1", 2525, tlsNone, false},
		{"smtp://u@host", "host", 25, tlsStartTLS, true},
	}
	for _, c := range good {
		s, err := NewSMTP(c.url, "")
		if err != nil {
			t.Errorf("NewSMTP(%q): %v", c.url, err)
			continue
		}
		if s.host != c.host || s.port != c.port || s.tlsMode != c.mode || s.hasAuth != c.auth {
			t.Errorf("NewSMTP(%q) = host %q port %d tls %q auth %v, want %q %d %q %v",
				c.url, s.host, s.port, s.tlsMode, s.hasAuth, c.host, c.port, c.mode, c.auth)
		}
		if strings.Contains(s.String(), ":p@") {
			t.Errorf("String() = %q shows the password", s.String())
		}
	}

	bad := []string{
		"",
		"mail.example.com",
		"http://mail.example.com",
		"smtp://",
		"smtp://:25",
		"smtp://host:0",
		"smtp://host:65536",
		"smtp://host:abc",
		"smtp://host/path",
		"smtp://host#frag",
		"smtp://host?tls=bogus",
		"smtp://host?tls=",
		"smtp://host?foo=bar",
		"smtps://host?tls=none",
		"smtp://:secret@host",
		"smtp:host",
		"smtp://user:secret@ho st",
		"smtp://user:secret@host:bad",
		"smtp://user:secret@host?tls=bogus",
	}
	for _, u := range bad {
		_, err := NewSMTP(u, "")
		if err == nil {
			t.Errorf("NewSMTP(%q) succeeded", u)
			continue
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("NewSMTP(%q) error %q shows the password", u, err)
		}
	}

	if _, err := NewSMTP("smtp://host", "not an address"); err == nil {
		t.Error("NewSMTP accepted an invalid from address")
	}
	if _, err := NewSMTP("smtp://host", "a@example.com\r\nBcc: x@example.com"); !errors.Is(err, ErrHeaderInjection) {
		t.Errorf("NewSMTP with a line break in from = %v, want ErrHeaderInjection", err)
	}
}

var injections = []Message{
	{To: "bob@example.com\r\nBcc: eve@example.com", Subject: "s", Text: "t"},
	{To: "bob@example.com\nBcc: eve@example.com", Subject: "s", Text: "t"},
	{To: "bob@example.com", Subject: "hi\r\nBcc: eve@example.com", Text: "t"},
	{To: "bob@example.com", Subject: "hi\rBcc: eve@example.com", Text: "t"},
	{To: "bob@example.com", Subject: "hi\nBcc: eve@example.com", Text: "t"},
}

func TestSMTPHeaderInjection(t *testing.T) {
	be := &testBackend{}
	port := startServer(t, be, serverOptions{})
	s, err := NewSMTP("smtp://127.0.0.1:"+strconv.Itoa(port)+"?tls=none", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range injections {
		if err := s.Send(context.Background(), &m); !errors.Is(err, ErrHeaderInjection) {
			t.Errorf("Send(%q) = %v, want ErrHeaderInjection", m, err)
		}
	}
	if len(be.messages()) != 0 {
		t.Error("server received a message")
	}
}

func TestInvalidMessage(t *testing.T) {
	dir := t.TempDir()
	senders := map[string]Sender{"outbox": NewOutbox(dir, "")}
	s, err := NewSMTP("smtp://127.0.0.1:1?tls=none", "")
	if err != nil {
		t.Fatal(err)
	}
	senders["smtp"] = s
	for name, snd := range senders {
		for _, m := range []*Message{nil, {To: "", Subject: "s"}, {To: "not an address", Subject: "s"}} {
			if err := snd.Send(context.Background(), m); err == nil {
				t.Errorf("%s: Send(%+v) succeeded", name, m)
			}
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("outbox wrote %d files for invalid messages", len(entries))
	}
}

var emlName = regexp.MustCompile(`^\d{8}T\d{6}\.\d{9}Z-[0-9a-f]{16}\.eml$`)

func TestOutbox(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data", "outbox")
	o := NewOutbox(dir, "")
	if o.Dir() != dir {
		t.Errorf("Dir() = %q, want %q", o.Dir(), dir)
	}
	if err := o.Send(context.Background(), &Message{To: "Bob <bob@example.com>", Subject: testSubject, Text: testText}); err != nil {
		t.Fatalf("Send: %v", err)
	}

	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o700 {
		t.Errorf("outbox mode = %v, want 0700", perm)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Fatalf("outbox holds %d files, want 1", len(entries))
	}
	name := entries[0].Name()
	if !emlName.MatchString(name) {
		t.Errorf("file name %q does not match %v", name, emlName)
	}
	info, err := entries[0].Info()
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		t.Errorf("file mode = %v, readable by others", perm)
	}
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(string(data), "\r\n") {
		if strings.ContainsAny(line, "\r\n") {
			t.Errorf("line %d has a bare CR or LF: %q", i+1, line)
		}
		if len(line) > 78 {
			t.Errorf("line %d is %d characters long: %q", i+1, len(line), line)
		}
	}

	got := received{from: "no-reply@localhost", to: []string{"bob@example.com"}, data: data}
	checkReceived(t, got, "bob@example.com")
	msg, err := netmail.ReadMessage(strings.NewReader(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	if v := msg.Header.Get("MIME-Version"); v != "1.0" {
		t.Errorf("MIME-Version = %q", v)
	}
	if v := msg.Header.Get("Content-Transfer-Encoding"); v != "quoted-printable" {
		t.Errorf("Content-Transfer-Encoding = %q", v)
	}
	to, _ := msg.Header.AddressList("To")
	if len(to) != 1 || to[0].Name != "Bob" {
		t.Errorf("To = %v, want Bob <bob@example.com>", to)
	}
	date, err := msg.Header.Date()
	if err != nil || time.Since(date) > time.Minute || time.Since(date) < -time.Minute {
		t.Errorf("Date = %v (%v), want about now", date, err)
	}

	// A plain ASCII subject is left as is; a second message is a second
	// file; no temporary file is left behind.
	if err := o.Send(context.Background(), &Message{To: "carol@example.com", Subject: "Plain subject", Text: "x"}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	entries, err = os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Fatalf("outbox holds %d files, want 2", len(entries))
	}
	for _, e := range entries {
		if !emlName.MatchString(e.Name()) {
			t.Errorf("unexpected file %q in outbox", e.Name())
		}
	}
	data, err = os.ReadFile(filepath.Join(dir, entries[1].Name()))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "\r\nSubject: Plain subject\r\n") {
		t.Errorf("plain subject was encoded:\n%s", data)
	}
}

func TestOutboxHeaderInjection(t *testing.T) {
	dir := t.TempDir()
	o := NewOutbox(dir, "")
	for _, m := range injections {
		if err := o.Send(context.Background(), &m); !errors.Is(err, ErrHeaderInjection) {
			t.Errorf("Send(%q) = %v, want ErrHeaderInjection", m, err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("outbox holds %d files, want none", len(entries))
	}
}

func TestOutboxErrors(t *testing.T) {
	m := &Message{To: "bob@example.com", Subject: "s", Text: "t"}
	if err := NewOutbox(t.TempDir(), "not an address").Send(context.Background(), m); err == nil {
		t.Error("Send with an invalid from succeeded")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := NewOutbox(t.TempDir(), "").Send(ctx, m); !errors.Is(err, context.Canceled) {
		t.Errorf("Send with a canceled context = %v, want context.Canceled", err)
	}
	// The outbox path is a file, not a folder.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := NewOutbox(file, "").Send(context.Background(), m); err == nil {
		t.Error("Send into a file succeeded")
	}
}

func TestFromConfig(t *testing.T) {
	dataDir := t.TempDir()
	s, err := FromConfig("smtp://u:p@mail.example.com:587", dataDir, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.(*SMTP); !ok {
		t.Errorf("FromConfig with an SMTP URL = %T, want *SMTP", s)
	}
	s, err = FromConfig("", dataDir, "Ops <ops@example.com>")
	if err != nil {
		t.Fatal(err)
	}
	o, ok := s.(*Outbox)
	if !ok {
		t.Fatalf("FromConfig without an SMTP URL = %T, want *Outbox", s)
	}
	if want := filepath.Join(dataDir, "outbox"); o.Dir() != want {
		t.Errorf("outbox dir = %q, want %q", o.Dir(), want)
	}
	if o.from.Address != "ops@example.com" {
		t.Errorf("outbox from = %v, want ops@example.com", o.from)
	}
	if _, err := FromConfig("http://mail.example.com", dataDir, ""); err == nil {
		t.Error("FromConfig accepted an http:// URL")
	}
	if _, err := FromConfig("", "", ""); err == nil {
		t.Error("FromConfig accepted neither an SMTP URL nor a data directory")
	}
	if _, err := FromConfig("", dataDir, "bad"); err == nil {
		t.Error("FromConfig accepted an invalid from address")
	}
}

// TestOutboxTightensWiderFolder (issue 26, L5): an outbox folder that
// exists with a mode that lets others in is tightened to 0700 by the next
// Send; its e-mails hold sign-in and reset links.
func TestOutboxTightensWiderFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "outbox")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := NewOutbox(dir, "").Send(context.Background(), &Message{To: "bob@example.com", Subject: testSubject, Text: testText}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("outbox folder: %v %v, want 0700", fi.Mode().Perm(), err)
	}
}
