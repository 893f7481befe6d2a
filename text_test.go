package ams_test

import (
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/amsdev/ams"
)

func TestValidText(t *testing.T) {
	for s, want := range map[string]bool{"": true, "héllo": true, "a\x00b": false, "a\xffb": false, "\xc3\x28": false} {
		if got := ams.ValidText(s); got != want {
			t.Errorf("ValidText(%q) = %v, want %v", s, got, want)
		}
	}
	if name, bad := ams.InvalidValue(url.Values{"a": {"ok"}, "b": {"ok", "x\x00"}}); !bad || name != "b" {
		t.Errorf("InvalidValue = %q, %v; want b, true", name, bad)
	}
	if _, bad := ams.InvalidValue(url.Values{"a": {"ok"}}); bad {
		t.Error("InvalidValue found a bad value in valid text")
	}
	if name, bad := ams.InvalidPathValue("GET /v1/x/{id}/y/{rest...}", func(n string) string {
		return map[string]string{"id": "ok", "rest": "\xff"}[n]
	}); !bad || name != "rest" {
		t.Errorf("InvalidPathValue = %q, %v; want rest, true", name, bad)
	}
}

func TestClip(t *testing.T) {
	if got := ams.Clip("short"); got != "short" {
		t.Errorf("Clip(short) = %q", got)
	}
	long := ams.Clip(strings.Repeat("é", 5000))
	if utf8.RuneCountInString(long) != ams.MaxQuoted+1 || !strings.HasSuffix(long, "…") {
		t.Errorf("Clip of 5000 runes = %d runes: %q", utf8.RuneCountInString(long), long)
	}
	if got := ams.Clip("a\x00\xffb"); !ams.ValidText(got) {
		t.Errorf("Clip left invalid text: %q", got)
	}
}
