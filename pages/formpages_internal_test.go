package pages

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// TestEveryFormHasItsPage: formPages names, for every form route, a
// registered page whose path values the form's path has, so that a form
// field that is not text is answered with its page (refuseForm).
func TestEveryFormHasItsPage(t *testing.T) {
	s := &Server{}
	s.Register(http.NewServeMux())
	wildcards := regexp.MustCompile(`\{[^}]+\}`)
	forms := 0
	for pattern := range s.pages {
		if !strings.HasPrefix(pattern, "POST ") {
			continue
		}
		forms++
		get := s.pages[pattern].on
		if get == "" {
			t.Errorf("%s: no page in formPages", pattern)
			continue
		}
		if _, ok := s.pages[get]; !ok || !strings.HasPrefix(get, "GET ") {
			t.Errorf("%s: its page %s is not a registered GET page", pattern, get)
		}
		for _, w := range wildcards.FindAllString(get, -1) {
			if !strings.Contains(pattern, w) {
				t.Errorf("%s: its page %s has %s, which the form's path has not", pattern, get, w)
			}
		}
	}
	if forms == 0 {
		t.Fatal("no form routes registered")
	}
}
