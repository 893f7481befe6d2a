package password

import (
	"strings"
	"testing"
)

func TestHashAndCheck(t *testing.T) {
	h, err := Hash("correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(h, "correct") || !strings.HasPrefix(h, "$2a$12$") {
		t.Fatalf("hash %q", h)
	}
	if !Check(h, "correct horse battery") || Check(h, "correct horse batterz") || Check("", "") {
		t.Fatal("Check gives wrong answers")
	}
	for _, bad := range []string{"short", strings.Repeat("x", 73), "bad\xffutf8"} {
		if _, err := Hash(bad); err == nil {
			t.Errorf("Hash(%q) accepted", bad)
		}
	}
}
