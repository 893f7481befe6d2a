package mail

import (
	"bytes"
	"context"
	"fmt"
	"mime"
	"mime/quotedprintable"
	"net/mail"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Outbox "sends" e-mails by writing each one as an RFC 5322 .eml file into
// a folder, for installations without an SMTP relay. Files are named
// <UTC timestamp>-<random>.eml, so that listing the folder sorts them by
// time, are readable by their owner only, and appear atomically: a reader
// never sees a partly written .eml file. It is safe for concurrent use.
type Outbox struct {
	dir     string
	from    *mail.Address
	fromErr error
}

// NewOutbox returns an outbox writing into dir, created (mode 0700) on the
// first Send if missing (an existing one that lets others in is
// tightened to 0700: the folder is ams's own and the e-mails hold sign-in
// links), with from as the sender address (DefaultFrom when
// empty). An invalid from makes every Send fail.
func NewOutbox(dir, from string) *Outbox {
	addr, err := parseFrom(from)
	return &Outbox{dir: dir, from: addr, fromErr: err}
}

// Dir returns the folder the outbox writes into.
func (o *Outbox) Dir() string { return o.dir }

// Send writes m as a new .eml file into the outbox folder.
func (o *Outbox) Send(ctx context.Context, m *Message) error {
	if o.fromErr != nil {
		return o.fromErr
	}
	to, err := checkMessage(m)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("write mail: %w", err)
	}
	now := time.Now().UTC()
	data, err := o.format(now, to, m)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.dir, 0o700); err != nil {
		return fmt.Errorf("create outbox: %w", err)
	}
	if err := restrictDir(o.dir); err != nil {
		return err
	}
	name := fmt.Sprintf("%s-%s.eml", now.Format("20060102T150405.000000000Z"), randomHex(8))
	return writeFileAtomic(filepath.Join(o.dir, name), data)
}

// format renders m as an RFC 5322 message with CRLF line endings and a
// quoted-printable UTF-8 plain-text body.
func (o *Outbox) format(now time.Time, to *mail.Address, m *Message) ([]byte, error) {
	var b bytes.Buffer
	header := func(name, value string) {
		b.WriteString(name)
		b.WriteString(":")
		if !strings.HasPrefix(value, "\r\n ") {
			b.WriteString(" ")
		}
		b.WriteString(value)
		b.WriteString("\r\n")
	}
	header("Date", now.Format(time.RFC1123Z))
	header("From", o.from.String())
	header("To", to.String())
	header("Subject", encodeSubject(m.Subject))
	header("Message-ID", "<"+newMessageID(o.from)+">")
	header("MIME-Version", "1.0")
	header("Content-Type", "text/plain; charset=utf-8")
	header("Content-Transfer-Encoding", "quoted-printable")
	b.WriteString("\r\n")

	qp := quotedprintable.NewWriter(&b)
	if _, err := qp.Write([]byte(m.Text)); err != nil {
		return nil, fmt.Errorf("encode body: %w", err)
	}
	if err := qp.Close(); err != nil {
		return nil, fmt.Errorf("encode body: %w", err)
	}
	if !bytes.HasSuffix(b.Bytes(), []byte("\r\n")) {
		b.WriteString("\r\n")
	}
	return b.Bytes(), nil
}

// encodeSubject returns the subject as is when it is plain ASCII, else as
// RFC 2047 encoded words, each on a folded line of its own, starting with
// the first, so that no line exceeds the 76 characters RFC 2047 allows.
func encodeSubject(s string) string {
	enc := mime.QEncoding.Encode("utf-8", s)
	if enc == s {
		return s
	}
	return "\r\n " + strings.ReplaceAll(enc, "?= =?", "?=\r\n =?")
}

// writeFileAtomic writes data to a temporary file in path's folder, then
// renames it to path, so that path appears complete or not at all.
func writeFileAtomic(path string, data []byte) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), ".outbox-*.tmp") // mode 0600
	if err != nil {
		return fmt.Errorf("create mail file: %w", err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("write mail file: %w", err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("sync mail file: %w", err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("close mail file: %w", err)
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("rename mail file: %w", err)
	}
	return nil
}

// restrictDir tightens dir to 0700 when its mode lets the group or others
// in.
func restrictDir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("outbox: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("outbox: restrict %s to its owner: %w", dir, err)
		}
	}
	return nil
}
