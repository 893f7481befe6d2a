package ams

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"strings"
	"time"
)

// Identifier prefixes. Every record id is one of these followed by a random
// base62 part; secrets carry their own prefixes so leak scanners find them.
const (
	PrefixUser         = "usr_"
	PrefixAssistant    = "ast_"
	PrefixConversation = "conv_"
	PrefixMessage      = "msg_"
	PrefixWebhook      = "wh_"
	PrefixEvent        = "evt_"
	PrefixDelivery     = "dlv_"
	PrefixTask         = "task_"
	PrefixCalendar     = "cev_"
	PrefixIntegration  = "int_"
	PrefixAction       = "act_"
	PrefixTurn         = "trn_" // one POST /v1/messages (ams.Turn)
	PrefixAPIKey       = "key_"
	PrefixClient       = "cli_"
	PrefixRequest      = "req_"

	PrefixSecretKey    = "ams_sk_"
	PrefixAccessToken  = "ams_at_"
	PrefixRefreshToken = "ams_rt_"
)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// randomBase62 returns n characters drawn uniformly from base62 using
// crypto/rand (rejection sampling, no modulo bias).
func randomBase62(n int) string {
	out := make([]byte, 0, n)
	buf := make([]byte, n+n/4+8)
	for len(out) < n {
		if _, err := rand.Read(buf); err != nil {
			panic("ams: crypto/rand failed: " + err.Error())
		}
		for _, b := range buf {
			if b >= 248 { // 248 = 4*62: keep the distribution uniform
				continue
			}
			out = append(out, base62[b%62])
			if len(out) == n {
				break
			}
		}
	}
	return string(out)
}

// NewID returns a new identifier with the given prefix: 24 base62
// characters, the first 8 the time in milliseconds and the other 16 random
// (95 bits). Identifiers made later sort after earlier ones (base62's
// alphabet is in ASCII order), so that new rows go to the end of a
// table's primary-key index instead of a random page of it: a commit of
// many rows then writes a few pages, not one per row and index (see
// docs/architecture.md, "Identifiers").
func NewID(prefix string) string {
	return prefix + timeBase62(uint64(time.Now().UnixMilli())) + randomBase62(16)
}

// timeBase62 is ms in 8 base62 digits, most significant first (enough
// until the year 8888).
func timeBase62(ms uint64) string {
	var b [8]byte
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = base62[ms%62]
		ms /= 62
	}
	return string(b[:])
}

// NewSecret returns a new random secret (about 238 bits) with the given
// prefix, e.g. PrefixSecretKey.
func NewSecret(prefix string) string { return prefix + randomBase62(40) }

// HashSecret returns the hex SHA-256 of a high-entropy secret, the form in
// which API keys and tokens are stored. (Passwords, which are low-entropy,
// use a slow hash instead.)
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// SecretsEqual compares two secrets or hashes in constant time.
func SecretsEqual(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// HasPrefixID reports whether id looks like an identifier with prefix: the
// prefix followed by at least one base62 character and nothing else.
func HasPrefixID(id, prefix string) bool {
	if !strings.HasPrefix(id, prefix) || len(id) == len(prefix) || len(id) > 64 {
		return false
	}
	for _, c := range id[len(prefix):] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}
