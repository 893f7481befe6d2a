// Package seal encrypts secrets that the service must be able to read back
// (webhook signing secrets), so that they are not stored in the clear:
// AES-256-GCM with a key kept outside the database, and the record's id as
// additional data so a sealed value cannot be moved to another record.
package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// KeySize is the key length in bytes (AES-256).
const KeySize = 32

const prefix = "v1:"

// Sealer seals and opens values with one key.
type Sealer struct{ aead cipher.AEAD }

// New returns a Sealer for a 32-byte key.
func New(key []byte) (*Sealer, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("seal: key must be %d bytes, got %d", KeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	return &Sealer{aead: aead}, nil
}

// ParseKey decodes a base64 key (standard or URL alphabet, padded or not).
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if k, err := enc.DecodeString(s); err == nil && len(k) == KeySize {
			return k, nil
		}
	}
	return nil, fmt.Errorf("seal: the key must be %d bytes in base64", KeySize)
}

// LoadOrCreateKeyFile reads the base64 key in path, creating the file with
// a new random key (mode 0600) if it does not exist.
func LoadOrCreateKeyFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		// A key file that lets the group or others in is tightened to
		// 0600: it is ams's own, and reveals what it seals (issue 26).
		if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o077 != 0 {
			if err := os.Chmod(path, 0o600); err != nil {
				return nil, fmt.Errorf("seal: restrict %s to its owner: %w", path, err)
			}
		}
		return ParseKey(string(b))
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("seal: read key: %w", err)
	}
	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("seal: generate key: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("seal: create key directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) { // another process created it first
		return LoadOrCreateKeyFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("seal: create key file: %w", err)
	}
	if _, err := f.WriteString(base64.StdEncoding.EncodeToString(key) + "\n"); err != nil {
		f.Close()
		return nil, fmt.Errorf("seal: write key file: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("seal: write key file: %w", err)
	}
	return key, nil
}

// Seal encrypts plaintext bound to aad (the record's id).
func (s *Sealer) Seal(plaintext, aad string) string {
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		panic("seal: crypto/rand failed: " + err.Error())
	}
	out := s.aead.Seal(nonce, nonce, []byte(plaintext), []byte(aad))
	return prefix + base64.RawStdEncoding.EncodeToString(out)
}

// IsSealed reports whether v has the form of a value made by Seal.
func IsSealed(v []byte) bool { return strings.HasPrefix(string(v), prefix) }

// Open decrypts a value made by Seal with the same aad.
func (s *Sealer) Open(sealed, aad string) (string, error) {
	if !strings.HasPrefix(sealed, prefix) {
		return "", errors.New("seal: unknown format")
	}
	b, err := base64.RawStdEncoding.DecodeString(sealed[len(prefix):])
	if err != nil || len(b) < s.aead.NonceSize() {
		return "", errors.New("seal: malformed value")
	}
	n := s.aead.NonceSize()
	pt, err := s.aead.Open(nil, b[:n], b[n:], []byte(aad))
	if err != nil {
		return "", errors.New("seal: cannot open value (wrong key or record)")
	}
	return string(pt), nil
}
