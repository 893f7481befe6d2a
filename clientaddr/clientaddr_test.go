package clientaddr_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/amsdev/ams/clientaddr"
)

func mustProxies(t *testing.T, s string) clientaddr.Proxies {
	t.Helper()
	p, err := clientaddr.ParseProxies(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParseProxies(t *testing.T) {
	p := mustProxies(t, " 10.0.0.0/8, ,192.168.1.7,fd00::/8 ,::ffff:172.16.0.1, 10.1.2.3/16")
	if got, want := p.String(), "10.0.0.0/8,192.168.1.7/32,fd00::/8,172.16.0.1/32,10.1.0.0/16"; got != want {
		t.Errorf("ParseProxies: %s, want %s", got, want)
	}
	if p, err := clientaddr.ParseProxies(""); err != nil || len(p) != 0 {
		t.Errorf("empty: %v, %v", p, err)
	}
	for _, bad := range []string{"10.0.0.0/33", "example.com", "10.0.0.0/8,nope", "fe80::1%eth0", "10.0.0.1:80", "\x00"} {
		if _, err := clientaddr.ParseProxies(bad); err == nil {
			t.Errorf("ParseProxies(%q): no error", bad)
		}
	}
}

// TestClient: the client address for every kind of chain and header.
func TestClient(t *testing.T) {
	trusted := mustProxies(t, "10.0.0.0/8,fd00::/8")
	for _, c := range []struct {
		name    string
		proxies clientaddr.Proxies
		remote  string
		header  [][2]string
		want    string
	}{
		{"no header", trusted, "10.0.0.1:5000", nil, "10.0.0.1"},
		{"no proxies: XFF ignored", nil, "10.0.0.1:5000", [][2]string{{"X-Forwarded-For", "203.0.113.9"}}, "10.0.0.1"},
		{"untrusted proxy: XFF ignored", trusted, "192.0.2.1:5000", [][2]string{{"X-Forwarded-For", "203.0.113.9"}}, "192.0.2.1"},
		{"untrusted proxy: Forwarded ignored", trusted, "192.0.2.1:5000", [][2]string{{"Forwarded", "for=203.0.113.9"}}, "192.0.2.1"},
		{"XFF one", trusted, "10.0.0.1:5000", [][2]string{{"X-Forwarded-For", "203.0.113.9"}}, "203.0.113.9"},
		{"XFF chain: rightmost untrusted", trusted, "10.0.0.1:5000", [][2]string{{"X-Forwarded-For", "198.51.100.1, 203.0.113.9, 10.2.3.4"}}, "203.0.113.9"},
		{"XFF spoofed left part ignored", trusted, "10.0.0.1:5000", [][2]string{{"X-Forwarded-For", "1.1.1.1,203.0.113.9"}}, "203.0.113.9"},
		{"XFF all trusted: leftmost", trusted, "10.0.0.1:5000", [][2]string{{"X-Forwarded-For", "10.9.9.9, 10.8.8.8"}}, "10.9.9.9"},
		{"XFF two lines in order", trusted, "10.0.0.1:5000", [][2]string{{"X-Forwarded-For", "203.0.113.9"}, {"X-Forwarded-For", "10.5.5.5"}}, "203.0.113.9"},
		{"XFF IPv6", trusted, "[fd00::1]:5000", [][2]string{{"X-Forwarded-For", "2001:db8::7"}}, "2001:db8::7"},
		{"XFF IPv6 bracketed with port", trusted, "[fd00::1]:5000", [][2]string{{"X-Forwarded-For", "[2001:db8::7]:443"}}, "2001:db8::7"},
		{"XFF IPv4 with port", trusted, "10.0.0.1:5000", [][2]string{{"X-Forwarded-For", "203.0.113.9:1234"}}, "203.0.113.9"},
		{"XFF IPv4-mapped", trusted, "10.0.0.1:5000", [][2]string{{"X-Forwarded-For", "::ffff:203.0.113.9"}}, "203.0.113.9"},
		{"mapped remote is trusted", trusted, "[::ffff:10.0.0.1]:5000", [][2]string{{"X-Forwarded-For", "203.0.113.9"}}, "203.0.113.9"},
		{"XFF garbage", trusted, "10.0.0.1:5000", [][2]string{{"X-Forwarded-For", "203.0.113.9, not-an-ip"}}, "10.0.0.1"},
		{"XFF empty item", trusted, "10.0.0.1:5000", [][2]string{{"X-Forwarded-For", "203.0.113.9,,10.1.1.1"}}, "10.0.0.1"},
		{"XFF empty", trusted, "10.0.0.1:5000", [][2]string{{"X-Forwarded-For", ""}}, "10.0.0.1"},
		{"XFF unknown", trusted, "10.0.0.1:5000", [][2]string{{"X-Forwarded-For", "unknown"}}, "10.0.0.1"},
		{"XFF NUL", trusted, "10.0.0.1:5000", [][2]string{{"X-Forwarded-For", "203.0.113.9\x00"}}, "10.0.0.1"},
		{"XFF invalid UTF-8", trusted, "10.0.0.1:5000", [][2]string{{"X-Forwarded-For", "\xff\xfe"}}, "10.0.0.1"},
		{"XFF zone", trusted, "10.0.0.1:5000", [][2]string{{"X-Forwarded-For", "fe80::1%eth0"}}, "10.0.0.1"},
		{"XFF too many hops", trusted, "10.0.0.1:5000", [][2]string{{"X-Forwarded-For", strings.Repeat("10.1.1.1,", 70) + "10.1.1.1"}}, "10.0.0.1"},
		{"Forwarded token", trusted, "10.0.0.1:5000", [][2]string{{"Forwarded", "for=203.0.113.9;proto=https;by=10.0.0.1"}}, "203.0.113.9"},
		{"Forwarded case and spaces", trusted, "10.0.0.1:5000", [][2]string{{"Forwarded", "proto=http; For=203.0.113.9 , for=10.3.3.3"}}, "203.0.113.9"},
		{"Forwarded quoted IPv4 with port", trusted, "10.0.0.1:5000", [][2]string{{"Forwarded", `for="203.0.113.9:8080"`}}, "203.0.113.9"},
		{"Forwarded quoted IPv6", trusted, "10.0.0.1:5000", [][2]string{{"Forwarded", `for="[2001:db8:cafe::17]"`}}, "2001:db8:cafe::17"},
		{"Forwarded quoted IPv6 with port", trusted, "10.0.0.1:5000", [][2]string{{"Forwarded", `for="[2001:db8:cafe::17]:4711"`}}, "2001:db8:cafe::17"},
		{"Forwarded obfuscated port", trusted, "10.0.0.1:5000", [][2]string{{"Forwarded", `for="203.0.113.9:_p1"`}}, "203.0.113.9"},
		{"Forwarded chain", trusted, "10.0.0.1:5000", [][2]string{{"Forwarded", `for=198.51.100.1, for="[2001:db8::1]", for=10.4.4.4`}}, "2001:db8::1"},
		{"Forwarded two lines", trusted, "10.0.0.1:5000", [][2]string{{"Forwarded", "for=203.0.113.9"}, {"Forwarded", "for=10.4.4.4"}}, "203.0.113.9"},
		{"Forwarded quoted comma", trusted, "10.0.0.1:5000", [][2]string{{"Forwarded", `for=203.0.113.9;host="a,b", for=10.4.4.4`}}, "203.0.113.9"},
		{"Forwarded obfuscated node", trusted, "10.0.0.1:5000", [][2]string{{"Forwarded", "for=_hidden"}}, "10.0.0.1"},
		{"Forwarded unknown", trusted, "10.0.0.1:5000", [][2]string{{"Forwarded", "for=unknown, for=10.4.4.4"}}, "10.0.0.1"},
		{"Forwarded unquoted IPv6", trusted, "10.0.0.1:5000", [][2]string{{"Forwarded", "for=[2001:db8::1]"}}, "2001:db8::1"},
		{"Forwarded unterminated quote", trusted, "10.0.0.1:5000", [][2]string{{"Forwarded", `for="203.0.113.9`}}, "10.0.0.1"},
		{"Forwarded no for", trusted, "10.0.0.1:5000", [][2]string{{"Forwarded", "proto=https"}}, "10.0.0.1"},
		{"Forwarded two for", trusted, "10.0.0.1:5000", [][2]string{{"Forwarded", "for=203.0.113.9;for=198.51.100.1"}}, "10.0.0.1"},
		{"Forwarded no value", trusted, "10.0.0.1:5000", [][2]string{{"Forwarded", "for"}}, "10.0.0.1"},
		{"Forwarded garbage", trusted, "10.0.0.1:5000", [][2]string{{"Forwarded", "\x00;;=,"}}, "10.0.0.1"},
		{"Forwarded bad port", trusted, "10.0.0.1:5000", [][2]string{{"Forwarded", `for="203.0.113.9:99999x"`}}, "10.0.0.1"},
		{"Forwarded bracketed IPv4", trusted, "10.0.0.1:5000", [][2]string{{"Forwarded", `for="[203.0.113.9]"`}}, "10.0.0.1"},
		{"remote without port", trusted, "192.0.2.1", nil, "192.0.2.1"},
		{"remote not an address", trusted, "pipe", [][2]string{{"X-Forwarded-For", "203.0.113.9"}}, "pipe"},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = c.remote
		for _, h := range c.header {
			r.Header.Add(h[0], h[1])
		}
		if got, err := (clientaddr.Resolver{Proxies: c.proxies}).Client(r); got != c.want || err != nil {
			t.Errorf("%s: client %q, %v, want %q", c.name, got, err, c.want)
		}
	}
}

// TestMixedHeaders (issue 26, M1): behind a balancer that appends to
// X-Forwarded-For (nginx's $proxy_add_x_forwarded_for, AWS ALB, HAProxy's
// option forwardfor), a client sends its own Forwarded. With no header
// named, the client address must not be one the client chose: the
// request is refused (ErrMixedHeaders) with the balancer's address. With
// the header named, only it is read, the client's Forwarded ignored.
func TestMixedHeaders(t *testing.T) {
	trusted := mustProxies(t, "10.0.0.0/8")
	attack := func() *http.Request {
		r := httptest.NewRequest("POST", "/login", nil)
		r.RemoteAddr = "10.0.0.1:5000"                 // the balancer
		r.Header.Set("Forwarded", "for=198.51.100.77") // the client's choice
		r.Header.Set("X-Forwarded-For", "203.0.113.9") // appended by the balancer
		return r
	}
	got, err := clientaddr.Resolver{Proxies: trusted}.Client(attack())
	if !errors.Is(err, clientaddr.ErrMixedHeaders) || got != "10.0.0.1" {
		t.Errorf("no header named: %q, %v; want 10.0.0.1 and ErrMixedHeaders", got, err)
	}
	for _, c := range []struct{ header, want string }{
		{"X-Forwarded-For", "203.0.113.9"},
		{"Forwarded", "198.51.100.77"}, // a balancer that sets Forwarded would have appended its own
		{"X-Real-Ip", "10.0.0.1"},      // not in the request: the connecting address
	} {
		got, err := clientaddr.Resolver{Proxies: trusted, Header: c.header}.Client(attack())
		if err != nil || got != c.want {
			t.Errorf("header %s: %q, %v; want %q", c.header, got, err, c.want)
		}
	}
	// From an untrusted address both are ignored, without an error.
	r := attack()
	r.RemoteAddr = "192.0.2.1:5000"
	if got, err := (clientaddr.Resolver{Proxies: trusted}).Client(r); err != nil || got != "192.0.2.1" {
		t.Errorf("untrusted peer: %q, %v", got, err)
	}
}

// TestNamedHeader: a named header is the only one read: a list header
// walked from the right past trusted proxies, a one-address header
// (X-Real-IP, CF-Connecting-IP) as a list of one; a malformed or absent
// one gives the connecting address.
func TestNamedHeader(t *testing.T) {
	trusted := mustProxies(t, "10.0.0.0/8,fd00::/8")
	for _, c := range []struct {
		name, header string
		set          [][2]string
		want         string
	}{
		{"XFF walked from the right", "X-Forwarded-For", [][2]string{{"X-Forwarded-For", "1.1.1.1, 203.0.113.9, 10.2.2.2"}}, "203.0.113.9"},
		{"XFF named, Forwarded ignored", "X-Forwarded-For", [][2]string{{"Forwarded", "for=1.1.1.1"}}, "10.0.0.1"},
		{"Forwarded named, XFF ignored", "Forwarded", [][2]string{{"X-Forwarded-For", "1.1.1.1"}, {"Forwarded", "for=1.2.3.4, for=203.0.113.9"}}, "203.0.113.9"},
		{"X-Real-IP", "X-Real-Ip", [][2]string{{"X-Forwarded-For", "1.1.1.1"}, {"X-Real-IP", "203.0.113.9"}}, "203.0.113.9"},
		{"X-Real-IP IPv6", "X-Real-Ip", [][2]string{{"X-Real-IP", "2001:db8::9"}}, "2001:db8::9"},
		{"CF-Connecting-IP", "Cf-Connecting-Ip", [][2]string{{"CF-Connecting-IP", "203.0.113.9"}}, "203.0.113.9"},
		{"X-Real-IP garbage", "X-Real-Ip", [][2]string{{"X-Real-IP", "_hidden"}}, "10.0.0.1"},
		{"X-Real-IP absent", "X-Real-Ip", [][2]string{{"X-Forwarded-For", "203.0.113.9"}}, "10.0.0.1"},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = "10.0.0.1:5000"
		for _, h := range c.set {
			r.Header.Add(h[0], h[1])
		}
		if got, err := (clientaddr.Resolver{Proxies: trusted, Header: c.header}).Client(r); err != nil || got != c.want {
			t.Errorf("%s: %q, %v; want %q", c.name, got, err, c.want)
		}
	}
}

func TestParseHeader(t *testing.T) {
	for in, want := range map[string]string{"": "", " x-real-ip ": "X-Real-Ip", "X-Forwarded-For": "X-Forwarded-For", "forwarded": "Forwarded", "CF-Connecting-IP": "Cf-Connecting-Ip"} {
		if got, err := clientaddr.ParseHeader(in); err != nil || got != want {
			t.Errorf("ParseHeader(%q): %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"X Real IP", "X-Real-IP:", "é", "a\nb"} {
		if _, err := clientaddr.ParseHeader(bad); err == nil {
			t.Errorf("ParseHeader(%q): no error", bad)
		}
	}
}

// TestNetwork: throttles count an IPv6 client under its /64, an IPv4
// client under its address.
func TestNetwork(t *testing.T) {
	for in, want := range map[string]string{
		"203.0.113.9":          "203.0.113.9",
		"::ffff:203.0.113.9":   "203.0.113.9",
		"2001:db8:1:2:3:4:5:6": "2001:db8:1:2::/64",
		"2001:db8:1:2:ffff::1": "2001:db8:1:2::/64",
		"fe80::1%eth0":         "fe80::/64",
		"pipe":                 "pipe",
	} {
		if got := clientaddr.Network(in); got != want {
			t.Errorf("Network(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestOf: the address stored in the context wins; without one, the
// connecting address, headers ignored.
func TestOf(t *testing.T) {
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "192.0.2.1:1234"
	r.Header.Set("X-Forwarded-For", "203.0.113.9")
	if got := clientaddr.Of(r); got != "192.0.2.1" {
		t.Errorf("without the middleware: %q", got)
	}
	r = r.WithContext(clientaddr.With(context.Background(), "198.51.100.3"))
	if got := clientaddr.Of(r); got != "198.51.100.3" {
		t.Errorf("from the context: %q", got)
	}
	if got := clientaddr.FromContext(r.Context()); got != "198.51.100.3" {
		t.Errorf("FromContext: %q", got)
	}
}

// FuzzClient: no header makes Client panic or answer anything but an
// address.
func FuzzClient(f *testing.F) {
	for _, s := range []string{"203.0.113.9", `for="[2001:db8::1]:80";proto=https, for=10.0.0.2`, "\x00", `for="`, "1.2.3.4,,", "[::1]:"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, xff, fwd string) {
		p := mustProxies(t, "10.0.0.0/8")
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = "10.0.0.1:5000"
		for _, h := range [][2]string{{"X-Forwarded-For", xff}, {"Forwarded", fwd}} {
			r.Header.Set(h[0], h[1])
			got, err := clientaddr.Resolver{Proxies: p}.Client(r)
			if (err != nil) != (h[0] == "Forwarded") {
				t.Errorf("%s %q: error %v", h[0], h[1], err)
			}
			if got == "" {
				t.Errorf("%s %q: empty client", h[0], h[1])
			} else if _, err := clientaddr.ParseProxies(got); err != nil || strings.Contains(got, ",") {
				t.Errorf("%s %q: client %q is not an address", h[0], h[1], got)
			}
		}
	})
}
