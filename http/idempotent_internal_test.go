package http

import "testing"

// TestIdempotencyRoutesExist: every POST route of the API has exactly one
// idempotency rule for a retry whose first answer was lost (ownKeys,
// storedAnswers, rerunAnswers), and every route a rule
// names is a POST route, so that neither a new route nor a renamed one
// can silently go without.
func TestIdempotencyRoutesExist(t *testing.T) {
	t.Parallel()
	posts := map[string]bool{}
	for _, rt := range (&Server{}).Routes() {
		if rt.Method == "POST" {
			posts[rt.Pattern] = true
		}
	}
	rules := map[string]int{}
	for name, set := range map[string]map[string]bool{"ownKeys": ownKeys, "rerunAnswers": rerunAnswers} {
		for p := range set {
			rules[p]++
			if !posts[p] {
				t.Errorf("%s names %s, not a POST route", name, p)
			}
		}
	}
	for p := range storedAnswers {
		rules[p]++
		if !posts[p] {
			t.Errorf("storedAnswers names %s, not a POST route", p)
		}
	}
	for p := range posts {
		if rules[p] != 1 {
			t.Errorf("POST %s has %d idempotency rules, want 1 (ownKeys, storedAnswers or rerunAnswers)", p, rules[p])
		}
	}
}
