package http

import "testing"

// TestIdempotencyRoutesExist: the routes named by the idempotency rules
// (ownKeys, eventAnswers) are POST routes of the API, so that a renamed
// route cannot silently lose its rule.
func TestIdempotencyRoutesExist(t *testing.T) {
	t.Parallel()
	posts := map[string]bool{}
	for _, rt := range (&Server{}).Routes() {
		if rt.Method == "POST" {
			posts[rt.Pattern] = true
		}
	}
	for p := range ownKeys {
		if !posts[p] {
			t.Errorf("ownKeys names %s, not a POST route", p)
		}
	}
	for p := range eventAnswers {
		if !posts[p] {
			t.Errorf("eventAnswers names %s, not a POST route", p)
		}
	}
}
