package oauth_test

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/clientaddr"
	"github.com/amsdev/ams/internal/testing/amstest"
	"github.com/amsdev/ams/internal/testing/pgtest"
	"github.com/amsdev/ams/oauth"
)

// throttles runs test with the sign-in throttle stored in memory (as with
// SQLite) and in PostgreSQL (as with --database-url).
func throttles(t *testing.T, test func(t *testing.T, th func(t *testing.T) oauth.LoginThrottle)) {
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		test(t, func(*testing.T) oauth.LoginThrottle { return nil })
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		test(t, func(t *testing.T) oauth.LoginThrottle {
			url := pgtest.URL(t)
			return pgtest.OpenSchema(t, url, pgtest.FreshSchema(t, url)).LoginThrottle(oauth.ThrottleKeep, oauth.LoginFailureWindow)
		})
	})
}

// loopbackProxy trusts the test's connections (from 127.0.0.1) as a load
// balancer's.
var loopbackProxy = clientaddr.Proxies{netip.MustParsePrefix("127.0.0.0/8")}

// loginVia signs in through the login form, the POST carrying
// X-Forwarded-For: xff ("" sends none).
func (h *harness) loginVia(t *testing.T, b *http.Client, xff, email, pw string) *page {
	t.Helper()
	f := findForm(t, h.get(t, b, "/login"), "/login")
	f.Values.Set("email", email)
	f.Values.Set("password", pw)
	return h.post(t, b, "/login", f.Values, "X-Forwarded-For", xff)
}

func signedIn(p *page) bool {
	return p.StatusCode == http.StatusOK && strings.Contains(p.Body, "Signed in as")
}

const (
	attacker = "203.0.113.66"
	owner    = "198.51.100.7"
)

// TestThrottleBehindTrustedProxy: two clients behind one trusted proxy
// (requests from 127.0.0.1 with X-Forwarded-For). The attacker's failures
// on Ann's account block the attacker, never Ann signing in from her own
// address; the attacker's failures across accounts block the attacker's
// address only.
func TestThrottleBehindTrustedProxy(t *testing.T) {
	throttles(t, func(t *testing.T, th func(t *testing.T) oauth.LoginThrottle) {
		h := setup(t, amstest.WithTrustedProxies(loopbackProxy), amstest.WithThrottle(th(t)))
		evil := h.newBrowser()
		for i := range 30 {
			h.Clock.Add(time.Second)
			p := h.loginVia(t, evil, attacker, "ann@example.com", "guess "+strconv.Itoa(i))
			if want := http.StatusOK; i >= oauth.MaxLoginFailures {
				want = http.StatusTooManyRequests
				if p.StatusCode != want {
					t.Fatalf("attacker's attempt %d: %d, want %d", i+1, p.StatusCode, want)
				}
				if ra, _ := strconv.Atoi(p.Header.Get("Retry-After")); ra < 14*60 || ra > 15*60 {
					t.Errorf("attacker's attempt %d: Retry-After %q, want about 15 minutes", i+1, p.Header.Get("Retry-After"))
				}
			} else if p.StatusCode != want || !strings.Contains(p.Body, "not correct") {
				t.Fatalf("attacker's attempt %d: %d, want the form again", i+1, p.StatusCode)
			}
		}
		// Even the right password is refused to the attacker's address.
		if p := h.loginVia(t, evil, attacker, "ann@example.com", testPassword); p.StatusCode != http.StatusTooManyRequests {
			t.Errorf("right password from the attacker's address: %d, want 429", p.StatusCode)
		}
		// Ann, from her own address behind the same proxy (with a chain
		// her own proxy started), signs in at once.
		if p := h.loginVia(t, h.newBrowser(), owner, "ann@example.com", testPassword); !signedIn(p) {
			t.Fatalf("owner from another address: %d\n%s", p.StatusCode, p.Body)
		}
		if p := h.loginVia(t, h.newBrowser(), "10.9.9.9, "+owner, "ann@example.com", testPassword); !signedIn(p) {
			t.Errorf("owner through a chain: %d", p.StatusCode)
		}

		// Failures across accounts from one address: 20 block the address
		// for every account, and nobody else.
		const spray = "203.0.113.99"
		sb := h.newBrowser()
		hash, err := amstest.HashPassword(testPassword)
		if err != nil {
			t.Fatal(err)
		}
		for i := range oauth.MaxAddressFailures / oauth.MaxLoginFailures {
			// Accounts with a password hash of bcrypt's lowest cost (an
			// unknown account is checked at the real cost: slow).
			u := h.NewUser(fmt.Sprintf("user%d@example.com", i), ams.PlanStandard)
			if _, err := h.Store.UpdateUser(t.Context(), u.ID, ams.UserUpdate{PasswordHash: &hash}, h.Clock.Now()); err != nil {
				t.Fatal(err)
			}
		}
		for i := range oauth.MaxAddressFailures {
			email := fmt.Sprintf("user%d@example.com", i/oauth.MaxLoginFailures)
			if p := h.loginVia(t, sb, spray, email, "nope"); p.StatusCode != http.StatusOK {
				t.Fatalf("spray %d (%s): %d, want the form again", i+1, email, p.StatusCode)
			}
		}
		if p := h.loginVia(t, sb, spray, "ann@example.com", "nope"); p.StatusCode != http.StatusTooManyRequests {
			t.Errorf("after %d failures from one address, another account: %d, want 429", oauth.MaxAddressFailures, p.StatusCode)
		}
		if p := h.loginVia(t, h.newBrowser(), owner, "ann@example.com", testPassword); !signedIn(p) {
			t.Errorf("owner after the spray: %d", p.StatusCode)
		}
	})
}

// TestThrottleIgnoresForwardedWithoutTrustedProxies: with no trusted
// proxies (the default), X-Forwarded-For is ignored: every request here
// comes from 127.0.0.1, whatever it claims.
func TestThrottleIgnoresForwardedWithoutTrustedProxies(t *testing.T) {
	throttles(t, func(t *testing.T, th func(t *testing.T) oauth.LoginThrottle) {
		h := setup(t, amstest.WithThrottle(th(t)))
		b := h.newBrowser()
		for i := range oauth.MaxLoginFailures {
			// A new claimed address each time does not escape the count.
			if p := h.loginVia(t, b, fmt.Sprintf("192.0.2.%d", i+1), "ann@example.com", "wrong"); p.StatusCode != http.StatusOK {
				t.Fatalf("failure %d: %d", i+1, p.StatusCode)
			}
		}
		if p := h.loginVia(t, h.newBrowser(), owner, "ann@example.com", testPassword); p.StatusCode != http.StatusTooManyRequests {
			t.Errorf("with X-Forwarded-For but no trusted proxy: %d, want 429 (the same connecting address)", p.StatusCode)
		}
	})
}

// TestThrottleAccountSlowdown: failures of one account from many
// addresses slow its sign-ins (429 with Retry-After for the interval),
// never block them: once the interval has passed the owner signs in, and
// a browser that signed in before is not slowed at all.
func TestThrottleAccountSlowdown(t *testing.T) {
	throttles(t, func(t *testing.T, th func(t *testing.T) oauth.LoginThrottle) {
		h := setup(t, amstest.WithTrustedProxies(loopbackProxy), amstest.WithThrottle(th(t)))
		// Ann's usual browser signs in first and is remembered.
		usual := h.newBrowser()
		p := h.loginVia(t, usual, owner, "ann@example.com", testPassword)
		if !signedIn(p) {
			t.Fatalf("first sign-in: %d", p.StatusCode)
		}
		h.post(t, usual, "/logout", findForm(t, p, "/logout").Values) // the device cookie stays
		bot := h.newBrowser()
		for i := range oauth.AccountSlowFailures {
			h.Clock.Add(100 * time.Millisecond)
			xff := fmt.Sprintf("10.0.%d.%d", i/250, i%250+1) // one failure per address
			if p := h.loginVia(t, bot, xff, "ann@example.com", "guess"); p.StatusCode != http.StatusOK {
				t.Fatalf("distributed failure %d: %d", i+1, p.StatusCode)
			}
		}
		// The next attempt, from a new address and browser, waits 2 s
		// after the latest failure: slowed, not blocked.
		p = h.loginVia(t, h.newBrowser(), "192.0.2.200", "ann@example.com", testPassword)
		if p.StatusCode != http.StatusTooManyRequests || p.Header.Get("Retry-After") != "2" ||
			!strings.Contains(p.Body, "slowed down") || !strings.Contains(p.Body, "one attempt every 2 seconds") {
			t.Fatalf("attempt within the interval: %d, Retry-After %q\n%s", p.StatusCode, p.Header.Get("Retry-After"), p.Body)
		}
		// Ann's usual browser is not slowed.
		if p := h.loginVia(t, usual, owner, "ann@example.com", testPassword); !signedIn(p) {
			t.Errorf("the remembered browser: %d\n%s", p.StatusCode, p.Body)
		}
		// Once the interval has passed, a new browser signs in.
		h.Clock.Add(oauth.AccountFirstDelay)
		if p := h.loginVia(t, h.newBrowser(), "192.0.2.201", "ann@example.com", testPassword); !signedIn(p) {
			t.Errorf("after the interval: %d\n%s", p.StatusCode, p.Body)
		}
		// Another account is not slowed.
		other := h.NewUser("bob@example.com", ams.PlanStandard)
		if p := h.loginVia(t, h.newBrowser(), "192.0.2.202", other.Email, "wrong"); p.StatusCode != http.StatusOK {
			t.Errorf("another account: %d, want the form again", p.StatusCode)
		}
	})
}

// TestThrottleAccountSlowdownRace: attempts on a slowed account that
// race each other take their turns. With one failure short of the
// slowdown, ten wrong passwords sent at once from ten addresses: the
// first to be counted is checked (the form again), and it starts the
// slowdown, so the other nine are answered 429 without a check; the
// account has exactly AccountSlowFailures failures afterwards.
func TestThrottleAccountSlowdownRace(t *testing.T) {
	throttles(t, func(t *testing.T, th func(t *testing.T) oauth.LoginThrottle) {
		throttle := th(t)
		if throttle == nil {
			throttle = oauth.NewMemoryThrottle(oauth.ThrottleKeep, oauth.LoginFailureWindow)
		}
		h := setup(t, amstest.WithTrustedProxies(loopbackProxy), amstest.WithThrottle(throttle))
		ctx := context.Background()
		for range oauth.AccountSlowFailures - 1 {
			h.Clock.Add(100 * time.Millisecond)
			if err := throttle.Failed(ctx, "account:ann@example.com", h.Clock.Now()); err != nil {
				t.Fatal(err)
			}
		}
		h.Clock.Add(time.Second)
		const n = 10
		type attempt struct {
			b   *http.Client
			req *http.Request
		}
		var attempts []attempt
		for i := range n {
			b := h.newBrowser()
			f := findForm(t, h.get(t, b, "/login"), "/login")
			f.Values.Set("email", "ann@example.com")
			f.Values.Set("password", "guess")
			req, err := http.NewRequest("POST", h.Server.URL+"/login", strings.NewReader(f.Values.Encode()))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", h.Server.URL)
			req.Header.Set("Sec-Fetch-Site", "same-origin")
			req.Header.Set("X-Forwarded-For", fmt.Sprintf("10.1.0.%d", i+1))
			attempts = append(attempts, attempt{b, req})
		}
		statuses := make([]int, n)
		var wg sync.WaitGroup
		for i, a := range attempts {
			wg.Go(func() {
				resp, err := a.b.Do(a.req)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				statuses[i] = resp.StatusCode
			})
		}
		wg.Wait()
		checked, slowed := 0, 0
		for _, st := range statuses {
			switch st {
			case http.StatusOK:
				checked++
			case http.StatusTooManyRequests:
				slowed++
			}
		}
		if checked != 1 || slowed != n-1 {
			t.Errorf("%d racing attempts: statuses %v, want one 200 (checked) and %d 429", n, statuses, n-1)
		}
		ts, err := throttle.Recent(ctx, "account:ann@example.com", h.Clock.Now().Add(-oauth.LoginFailureWindow), oauth.ThrottleKeep)
		if err != nil || len(ts) != oauth.AccountSlowFailures {
			t.Errorf("failures of the account: %d (%v), want %d", len(ts), err, oauth.AccountSlowFailures)
		}
		// The owner, once the interval has passed: signed in, and the
		// attempt is not counted as a failure.
		h.Clock.Add(oauth.AccountFirstDelay)
		if p := h.loginVia(t, h.newBrowser(), owner, "ann@example.com", testPassword); !signedIn(p) {
			t.Fatalf("the owner after the interval: %d\n%s", p.StatusCode, p.Body)
		}
		if ts, err := throttle.Recent(ctx, "account:ann@example.com", h.Clock.Now().Add(-oauth.LoginFailureWindow), oauth.ThrottleKeep); err != nil || len(ts) != oauth.AccountSlowFailures {
			t.Errorf("failures of the account after the owner's sign-in: %d (%v), want %d", len(ts), err, oauth.AccountSlowFailures)
		}
	})
}

// TestThrottleClientForwardedBehindAppendingProxy (issue 26, M1): behind a
// balancer that appends the client's address to X-Forwarded-For (nginx,
// AWS ALB, HAProxy), an attacker sends a Forwarded header of its own, a
// new address each time. Its failed sign-ins must not escape the
// per-address throttle: with no --client-address-header such requests
// are refused (400) before any password is checked; with
// --client-address-header X-Forwarded-For the attacker is counted under
// the address the balancer appended, and blocked after
// MaxLoginFailures.
func TestThrottleClientForwardedBehindAppendingProxy(t *testing.T) {
	for _, header := range []string{"", "X-Forwarded-For"} {
		t.Run("header="+header, func(t *testing.T) {
			throttles(t, func(t *testing.T, th func(t *testing.T) oauth.LoginThrottle) {
				h := setup(t, amstest.WithTrustedProxies(loopbackProxy), amstest.WithThrottle(th(t)),
					amstest.WithClientAddressHeader(header))
				evil := h.newBrowser()
				checked := 0
				for i := range 3 * oauth.MaxLoginFailures {
					h.Clock.Add(time.Second)
					f := findForm(t, h.get(t, evil, "/login"), "/login")
					f.Values.Set("email", "ann@example.com")
					f.Values.Set("password", "guess "+strconv.Itoa(i))
					p := h.post(t, evil, "/login", f.Values,
						"Forwarded", fmt.Sprintf("for=192.0.2.%d", i+1), // the attacker's choice
						"X-Forwarded-For", attacker) // appended by the balancer
					switch p.StatusCode {
					case http.StatusOK: // the form again: the password was checked
						checked++
					case http.StatusTooManyRequests:
					case http.StatusBadRequest:
						if header != "" || !strings.Contains(p.Body, "client_address_ambiguous") {
							t.Fatalf("attempt %d: 400 %s", i+1, p.Body)
						}
					default:
						t.Fatalf("attempt %d: %d", i+1, p.StatusCode)
					}
				}
				want := oauth.MaxLoginFailures
				if header == "" {
					want = 0
				}
				if checked != want {
					t.Errorf("%d of %d guesses were checked, want %d: the attacker chose its address", checked, 3*oauth.MaxLoginFailures, want)
				}
				// Ann, behind the same balancer, signs in.
				if p := h.loginVia(t, h.newBrowser(), owner, "ann@example.com", testPassword); !signedIn(p) {
					t.Errorf("owner: %d", p.StatusCode)
				}
			})
		})
	}
}

// TestSignInThrottledPerNetwork: sign-in failures are counted per client
// network, as sign-ups are (clientaddr.Network): an IPv6 client that
// takes a new address of its /64 for every guess is still blocked after
// MaxLoginFailures, while another /64 is not affected.
func TestSignInThrottledPerNetwork(t *testing.T) {
	throttles(t, func(t *testing.T, th func(t *testing.T) oauth.LoginThrottle) {
		h := setup(t, amstest.WithTrustedProxies(loopbackProxy), amstest.WithThrottle(th(t)),
			amstest.WithClientAddressHeader("X-Forwarded-For"))
		evil := h.newBrowser()
		guess := func(i int, from string) int {
			h.Clock.Add(time.Second)
			f := findForm(t, h.get(t, evil, "/login"), "/login")
			f.Values.Set("email", "ann@example.com")
			f.Values.Set("password", "guess "+strconv.Itoa(i))
			return h.post(t, evil, "/login", f.Values, "X-Forwarded-For", from).StatusCode
		}
		checked := 0
		for i := range 3 * oauth.MaxLoginFailures {
			switch st := guess(i, fmt.Sprintf("2001:db8:7:7::%x", i+1)); st {
			case http.StatusOK:
				checked++
			case http.StatusTooManyRequests:
			default:
				t.Fatalf("attempt %d: %d", i+1, st)
			}
		}
		if checked != oauth.MaxLoginFailures {
			t.Errorf("%d of %d guesses from one /64 were checked, want %d", checked, 3*oauth.MaxLoginFailures, oauth.MaxLoginFailures)
		}
		if st := guess(99, "2001:db8:7:8::1"); st != http.StatusOK {
			t.Errorf("a guess from another /64: %d, want the form again (200)", st)
		}
	})
}
