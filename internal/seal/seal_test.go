package seal

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSealOpen(t *testing.T) {
	key, err := LoadOrCreateKeyFile(filepath.Join(t.TempDir(), "k", "secret.key"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(key)
	if err != nil {
		t.Fatal(err)
	}
	sealed := s.Seal("whsec_topsecretvalue", "wh_1")
	if strings.Contains(sealed, "topsecret") || sealed == s.Seal("whsec_topsecretvalue", "wh_1") {
		t.Fatalf("sealed value leaks or is deterministic: %s", sealed)
	}
	if got, err := s.Open(sealed, "wh_1"); err != nil || got != "whsec_topsecretvalue" {
		t.Fatalf("open: %q %v", got, err)
	}
	if _, err := s.Open(sealed, "wh_2"); err == nil {
		t.Fatal("opened with another record's id")
	}
	other, _ := New(make([]byte, KeySize))
	if _, err := other.Open(sealed, "wh_1"); err == nil {
		t.Fatal("opened with another key")
	}
}

func TestKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secret.key")
	k1, err := LoadOrCreateKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	k2, err := LoadOrCreateKeyFile(path)
	if err != nil || string(k1) != string(k2) {
		t.Fatal("key not reloaded")
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v", fi.Mode())
	}
	if _, err := ParseKey("short"); err == nil {
		t.Fatal("short key accepted")
	}
}

// TestKeyFileTightened (issue 26, L5): an existing key file that lets the
// group or others in is tightened to 0600 when it is loaded.
func TestKeyFileTightened(t *testing.T) {
	path := filepath.Join(t.TempDir(), "oauth.key")
	key, err := LoadOrCreateKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	again, err := LoadOrCreateKeyFile(path)
	if err != nil || string(again) != string(key) {
		t.Fatalf("reload: %v", err)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v %v, want 0600", st.Mode().Perm(), err)
	}
}
