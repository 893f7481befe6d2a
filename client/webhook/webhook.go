// Package webhook verifies the webhook deliveries of an ams server, for
// the receiver's side. Like package client it uses only the standard
// library and does not import the server's packages.
//
// Every delivery is a POST whose body is the event as JSON, signed twice:
//
//   - X-Service-Signature: "sha256=<hex>", the lowercase hex HMAC-SHA256
//     of the exact body bytes, keyed with the webhook secret's bytes;
//   - the Standard Webhooks headers (https://www.standardwebhooks.com):
//     webhook-id (the event id: deduplicate on it), webhook-timestamp
//     (Unix seconds) and webhook-signature: "v1,<base64>", the
//     HMAC-SHA256 of "{id}.{timestamp}.{body}" keyed with the secret, or
//     with the decoded bytes of a "whsec_<base64>" secret. During a secret
//     rotation it lists several signatures, space-separated; one valid is
//     enough.
//
// Verify the raw body bytes as received, before decoding them: any
// re-encoding changes the bytes. In a handler:
//
//	body, err := io.ReadAll(r.Body)
//	if err != nil { ... }
//	ev, err := webhook.ConstructEvent(body, r.Header, secret)
//	if err != nil {
//		http.Error(w, "bad signature", http.StatusBadRequest)
//		return
//	}
//	switch ev.Type { case "message.created": ... }
//
// Every check compares in constant time. The Standard Webhooks check also
// refuses a timestamp more than the tolerance (DefaultTolerance, 5
// minutes) away from the receiver's clock, so that a captured delivery
// cannot be replayed later.
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/amsdev/ams/client"
)

// DefaultTolerance is how far webhook-timestamp may be from the
// receiver's clock, in either direction, unless WithTolerance says
// otherwise.
const DefaultTolerance = 5 * time.Minute

// Header names of a delivery.
const (
	HeaderSignature         = "X-Service-Signature"
	HeaderWebhookID         = "webhook-id"
	HeaderWebhookTimestamp  = "webhook-timestamp"
	HeaderWebhookSignature  = "webhook-signature"
	secretPrefix            = "whsec_"
	maxTimestampDigits      = 15
	signaturePrefix         = "sha256="
	standardSignaturePrefix = "v1,"
)

// ErrVerification is the error every failed verification wraps; its text
// says what was wrong (a missing header, a stale timestamp, no matching
// signature). Match it with errors.Is.
var ErrVerification = errors.New("webhook verification failed")

func failed(reason string) error { return fmt.Errorf("%w: %s", ErrVerification, reason) }

// Option configures a Standard Webhooks verification.
type Option func(*options)

type options struct {
	tolerance time.Duration
	now       func() time.Time
}

// WithTolerance sets how far webhook-timestamp may be from the clock, in
// either direction (default DefaultTolerance; exactly that far is
// accepted). A negative d counts as 0.
func WithTolerance(d time.Duration) Option {
	return func(o *options) { o.tolerance = max(d, 0) }
}

// WithClock replaces time.Now as the receiver's clock. For tests. A nil
// now is ignored.
func WithClock(now func() time.Time) Option {
	return func(o *options) {
		if now != nil {
			o.now = now
		}
	}
}

// Signature returns the X-Service-Signature value of body for secret:
// "sha256=" and the lowercase hex HMAC-SHA256 of the body, keyed with the
// secret's bytes (a "whsec_" secret included, prefix and all).
func Signature(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return signaturePrefix + hex.EncodeToString(m.Sum(nil))
}

// StandardSignature returns the Standard Webhooks webhook-signature value
// for one secret: "v1," and the standard base64 HMAC-SHA256 of
// "{id}.{timestamp}.{body}". The key is the secret's bytes, or for a
// "whsec_<base64>" secret whose rest decodes the decoded bytes.
func StandardSignature(secret, id string, timestamp int64, body []byte) string {
	return standardSignature(secret, id, strconv.FormatInt(timestamp, 10), body)
}

func standardSignature(secret, id, timestamp string, body []byte) string {
	m := hmac.New(sha256.New, standardKey(secret))
	m.Write([]byte(id + "." + timestamp + "."))
	m.Write(body)
	return standardSignaturePrefix + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// standardKey is the HMAC key of the Standard Webhooks signature, as the
// server derives it.
func standardKey(secret string) []byte {
	if rest, ok := strings.CutPrefix(secret, secretPrefix); ok {
		if k, err := base64.StdEncoding.DecodeString(rest); err == nil {
			return k
		}
	}
	return []byte(secret)
}

// VerifySignature checks an X-Service-Signature header value against the
// raw body and the webhook secret. It returns nil when they match, else an
// error wrapping ErrVerification.
func VerifySignature(body []byte, signature, secret string) error {
	if secret == "" {
		return failed("no webhook secret given")
	}
	got := strings.TrimSpace(signature)
	if got == "" {
		return failed("missing " + HeaderSignature + " header")
	}
	if !hmac.Equal([]byte(got), []byte(Signature(secret, body))) {
		return failed(HeaderSignature + " does not match the body")
	}
	return nil
}

// VerifyStandard checks the Standard Webhooks headers of a delivery
// (webhook-id, webhook-timestamp and webhook-signature, in header)
// against the raw body and the webhook secret, and the timestamp against
// the clock. It returns nil when one "v1" signature matches, else an
// error wrapping ErrVerification. Entries of other versions are ignored.
func VerifyStandard(body []byte, header http.Header, secret string, opts ...Option) error {
	return verifyStandard(body, header.Get(HeaderWebhookID), header.Get(HeaderWebhookTimestamp),
		strings.Join(header.Values(HeaderWebhookSignature), " "), secret, opts)
}

func verifyStandard(body []byte, id, timestamp, signatures, secret string, opts []Option) error {
	o := options{tolerance: DefaultTolerance, now: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	if secret == "" {
		return failed("no webhook secret given")
	}
	timestamp = strings.TrimSpace(timestamp)
	if id == "" || timestamp == "" || strings.TrimSpace(signatures) == "" {
		return failed("missing webhook-id, webhook-timestamp or webhook-signature header")
	}
	if len(timestamp) > maxTimestampDigits || strings.Trim(timestamp, "0123456789") != "" {
		return failed("invalid webhook-timestamp header")
	}
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return failed("invalid webhook-timestamp header")
	}
	now := o.now().Unix()
	tol := int64(o.tolerance / time.Second)
	switch {
	case ts < now-tol:
		return failed("webhook-timestamp is too old")
	case ts > now+tol:
		return failed("webhook-timestamp is in the future")
	}
	want := []byte(standardSignature(secret, id, timestamp, body))
	ok := false
	for _, sig := range strings.Split(signatures, " ") {
		version, _, found := strings.Cut(sig, ",")
		if !found || version != "v1" {
			continue
		}
		if hmac.Equal([]byte(sig), want) {
			ok = true // no early exit: every entry costs the same
		}
	}
	if !ok {
		return failed("no matching signature in webhook-signature")
	}
	return nil
}

// Verify checks a delivery: the Standard Webhooks headers (with the
// timestamp tolerance) when webhook-signature is present (and not empty),
// else X-Service-Signature. During a secret rotation webhook-signature
// carries a signature by each secret and X-Service-Signature only the new
// one's: so a receiver still holding the old secret verifies, and
// X-Service-Signature is not required when webhook-signature is present. It returns nil when the delivery is authentic,
// else an error wrapping ErrVerification.
func Verify(body []byte, header http.Header, secret string, opts ...Option) error {
	if strings.TrimSpace(strings.Join(header.Values(HeaderWebhookSignature), "")) != "" {
		return VerifyStandard(body, header, secret, opts...)
	}
	return VerifySignature(body, header.Get(HeaderSignature), secret)
}

// ConstructEvent verifies a delivery as Verify does and decodes its
// event.
func ConstructEvent(body []byte, header http.Header, secret string, opts ...Option) (*client.Event, error) {
	if err := Verify(body, header, secret, opts...); err != nil {
		return nil, err
	}
	ev := new(client.Event)
	if err := json.Unmarshal(body, ev); err != nil || ev.ID == "" {
		return nil, failed("the body is not a JSON event")
	}
	return ev, nil
}
