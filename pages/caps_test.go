package pages_test

import (
	"net/http"
	"testing"

	"github.com/amsdev/ams"
)

// TestKeyCapOnThePage (issue 26, L7): the keys page obeys the account's
// cap on API keys in use, as the API does: the form is answered 409 with
// the service's sentence, and no key is stored.
func TestKeyCapOnThePage(t *testing.T) {
	e := newEnv(t)
	u := e.user("cap@example.com", "correct horse battery", true, false)
	for n := 0; n < ams.MaxAPIKeys; n++ {
		e.f.NewKey(u, "read")
	}
	b := e.browser()
	b.signIn("cap@example.com", "correct horse battery").mustStatus(http.StatusOK)
	p := newKey(b, "one too many", "read")
	p.mustStatus(http.StatusConflict)
	p.mustContain("already has 100 API keys in use")
	if keys, _ := e.f.Store.ListKeys(t.Context(), u.ID); len(keys) != ams.MaxAPIKeys {
		t.Fatalf("%d keys stored", len(keys))
	}
}
