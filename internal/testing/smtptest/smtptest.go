// Package smtptest runs a real SMTP server (github.com/emersion/go-smtp)
// on loopback for tests, and keeps every message it accepts.
package smtptest

import (
	"bytes"
	"encoding/base64"
	"io"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
)

// Message is one accepted message.
type Message struct {
	From string
	To   []string
	Data []byte
}

// Parsed parses the message's headers and body.
func (m Message) Parsed(t testing.TB) *mail.Message {
	t.Helper()
	msg, err := mail.ReadMessage(bytes.NewReader(m.Data))
	if err != nil {
		t.Fatalf("parse e-mail: %v", err)
	}
	return msg
}

// Text returns the decoded text body (quoted-printable or base64 as the
// Content-Transfer-Encoding says).
func (m Message) Text(t testing.TB) string {
	t.Helper()
	msg := m.Parsed(t)
	var r io.Reader = msg.Body
	switch strings.ToLower(msg.Header.Get("Content-Transfer-Encoding")) {
	case "quoted-printable":
		r = quotedprintable.NewReader(r)
	case "base64":
		r = base64.NewDecoder(base64.StdEncoding, r)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("decode e-mail body: %v", err)
	}
	return string(b)
}

// Server is a running SMTP server.
type Server struct {
	Host string
	Port int
	mu   sync.Mutex
	msgs []Message
}

// URL returns the smtp:// URL that reaches the server without TLS.
func (s *Server) URL() string {
	return "smtp://" + net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) + "?tls=none"
}

// Messages returns the messages accepted so far.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.msgs...)
}

// Start starts a server on 127.0.0.1; it stops when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Host: "127.0.0.1", Port: ln.Addr().(*net.TCPAddr).Port}
	srv := smtp.NewServer(backend{s})
	srv.Domain = "localhost"
	srv.AllowInsecureAuth = true
	srv.ReadTimeout = 10 * time.Second
	srv.WriteTimeout = 10 * time.Second
	go srv.Serve(ln)
	t.Cleanup(func() {
		srv.Close()
		ln.Close() // Close misses a listener Serve has not registered yet
	})
	return s
}

type backend struct{ s *Server }

func (b backend) NewSession(*smtp.Conn) (smtp.Session, error) { return &session{s: b.s}, nil }

type session struct {
	s   *Server
	msg Message
}

func (ss *session) Mail(from string, _ *smtp.MailOptions) error { ss.msg.From = from; return nil }
func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	ss.msg.To = append(ss.msg.To, to)
	return nil
}
func (ss *session) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	ss.msg.Data = b
	ss.s.mu.Lock()
	ss.s.msgs = append(ss.s.msgs, ss.msg)
	ss.s.mu.Unlock()
	ss.msg = Message{}
	return nil
}
func (ss *session) Reset()        { ss.msg = Message{} }
func (ss *session) Logout() error { return nil }
