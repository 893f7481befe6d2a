// Package webhook delivers events to webhooks: it claims due jobs from the
// durable queue, signs and POSTs each event, and records the attempt with
// its consequence (done, retry on the schedule, or webhook failing) in one
// transaction. Package ssrf keeps deliveries off internal addresses.
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"
)

// Signature returns the X-Service-Signature value of body: "sha256=" and
// the lowercase hex HMAC-SHA256 of the exact body bytes, keyed with the
// webhook secret's bytes.
func Signature(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// StandardSignature returns the Standard Webhooks webhook-signature value:
// "v1," and the base64 HMAC-SHA256 of "{id}.{timestamp}.{body}". The key is
// the secret's bytes, except that a "whsec_<base64>" secret is decoded
// first, as the public Standard Webhooks libraries expect.
func StandardSignature(secret, id string, timestamp int64, body []byte) string {
	m := hmac.New(sha256.New, StandardKey(secret))
	m.Write([]byte(id + "." + strconv.FormatInt(timestamp, 10) + "."))
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// StandardSignatures returns the webhook-signature value for several
// secrets, newest first: one "v1,<sig>" per secret, separated by spaces, as
// the Standard Webhooks specification lets a sender sign during a secret
// rotation. A receiver accepts the delivery if any of them verifies with
// its secret.
func StandardSignatures(secrets []string, id string, timestamp int64, body []byte) string {
	sigs := make([]string, len(secrets))
	for i, s := range secrets {
		sigs[i] = StandardSignature(s, id, timestamp, body)
	}
	return strings.Join(sigs, " ")
}

// StandardKey returns the HMAC key of the Standard Webhooks signature.
func StandardKey(secret string) []byte {
	if rest, ok := strings.CutPrefix(secret, "whsec_"); ok {
		if k, err := base64.StdEncoding.DecodeString(rest); err == nil {
			return k
		}
	}
	return []byte(secret)
}
