package ssrf

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
)

func TestBlocked(t *testing.T) {
	tests := []struct {
		addr    string
		blocked bool
	}{
		// Unspecified and loopback.
		{"0.0.0.0", true},
		{"::", true},
		{"127.0.0.1", true},
		{"127.255.255.254", true},
		{"::1", true},
		// "This network" 0/8.
		{"0.1.2.3", true},
		// Private.
		{"10.0.0.1", true},
		{"10.255.255.255", true},
		{"172.16.0.1", true},
		{"172.31.255.255", true},
		{"192.168.1.1", true},
		{"fc00::1", true},
		{"fd12:3456::1", true},
		{"fd00:ec2::254", true}, // AWS IPv6 metadata
		// Link-local, cloud metadata.
		{"169.254.169.254", true},
		{"169.254.0.1", true},
		{"fe80::1", true},
		{"fe80::1%eth0", true},
		// CGNAT.
		{"100.64.0.1", true},
		{"100.127.255.255", true},
		// IETF, documentation, benchmarking, reserved, broadcast.
		{"192.0.0.8", true},
		{"192.0.2.1", true},
		{"198.18.0.1", true},
		{"198.19.255.255", true},
		{"198.51.100.7", true},
		{"203.0.113.9", true},
		{"240.0.0.1", true},
		{"255.255.255.255", true},
		// Multicast.
		{"224.0.0.1", true},
		{"239.255.255.250", true},
		{"ff02::1", true},
		{"ff0e::1", true},
		// IPv6 special ranges.
		{"100::1", true},
		{"2001:db8::1", true},
		{"3fff::1", true},
		{"fec0::1", true},
		// IPv4-mapped and -compatible.
		{"::ffff:127.0.0.1", true},
		{"::ffff:10.0.0.1", true},
		{"::ffff:169.254.169.254", true},
		{"::127.0.0.1", true},
		// NAT64 and 6to4 with a blocked embedded IPv4.
		{"64:ff9b::7f00:1", true},                      // 127.0.0.1
		{"64:ff9b::a9fe:a9fe", true},                   // 169.254.169.254
		{"2002:7f00:1::1", true},                       // 127.0.0.1
		{"2002:a00:1::", true},                         // 10.0.0.1
		{"2002:c0a8:101::1", true},                     // 192.168.1.1
		{"2001:0:4136:e378:8000:63bf:80ff:fffe", true}, // Teredo, client 127.0.0.1
		// Invalid.
		{"", true},

		// Allowed.
		{"8.8.8.8", false},
		{"1.1.1.1", false},
		{"93.184.216.34", false},
		{"100.63.255.255", false}, // just below CGNAT
		{"100.128.0.0", false},    // just above CGNAT
		{"172.15.255.255", false}, // just below 172.16/12
		{"172.32.0.0", false},     // just above 172.16/12
		{"192.0.3.1", false},
		{"223.255.255.255", false}, // just below multicast
		{"2606:4700::1111", false},
		{"2001:4860:4860::8888", false},
		{"::ffff:8.8.8.8", false},
		{"64:ff9b::808:808", false}, // NAT64 of 8.8.8.8
		{"2002:808:808::1", false},  // 6to4 of 8.8.8.8
	}
	for _, tt := range tests {
		var ip netip.Addr
		if tt.addr != "" {
			ip = netip.MustParseAddr(tt.addr)
		}
		if got := Blocked(ip); got != tt.blocked {
			t.Errorf("Blocked(%q) = %v, want %v", tt.addr, got, tt.blocked)
		}
	}
}

// fakeResolver answers from a fixed table; unknown names do not resolve.
func fakeResolver(table map[string][]string) Resolver {
	return func(ctx context.Context, host string) ([]netip.Addr, error) {
		addrs, ok := table[host]
		if !ok {
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		}
		var out []netip.Addr
		for _, a := range addrs {
			out = append(out, netip.MustParseAddr(a))
		}
		return out, nil
	}
}

func TestCheckURL(t *testing.T) {
	resolve := fakeResolver(map[string][]string{
		"public.example":   {"93.184.216.34", "2606:2800:220:1::1"},
		"private.example":  {"10.1.2.3"},
		"mixed.example":    {"93.184.216.34", "127.0.0.1"},
		"mapped.example":   {"::ffff:127.0.0.1"},
		"metadata.example": {"169.254.169.254"},
		"localhost":        {"127.0.0.1", "::1"},
	})
	strict := &Guard{Resolve: resolve}
	dev := &Guard{AllowPrivate: true, Resolve: resolve}

	tests := []struct {
		name    string
		g       *Guard
		url     string
		ok      bool
		blocked bool   // the error must match ErrBlocked
		reason  string // substring of the message
	}{
		{"https public", strict, "https://public.example/hook", true, false, ""},
		{"https public with port and query", strict, "https://public.example:8443/hook?x=1", true, false, ""},
		{"public IP literal", strict, "https://8.8.8.8/hook", true, false, ""},
		{"public IPv6 literal", strict, "https://[2606:4700::1111]/hook", true, false, ""},
		{"upper-case scheme", strict, "HTTPS://public.example/", true, false, ""},
		{"http refused", strict, "http://public.example/hook", false, false, "must use https"},
		{"http allowed in dev", dev, "http://public.example/hook", true, false, ""},
		{"ftp refused", strict, "ftp://public.example/", false, false, "must use https"},
		{"ftp refused in dev", dev, "ftp://public.example/", false, false, "https or http"},
		{"userinfo refused", strict, "https://user:pass@public.example/", false, false, "user name or password"},
		{"user only refused", strict, "https://user@public.example/", false, false, "user name or password"},
		{"userinfo refused in dev", dev, "http://user:pass@localhost/", false, false, "user name or password"},
		{"fragment refused", strict, "https://public.example/hook#frag", false, false, "fragment"},
		{"empty fragment refused", strict, "https://public.example/hook#", false, false, "fragment"},
		{"relative refused", strict, "/hook", false, false, "absolute"},
		{"no host", strict, "https:///hook", false, false, "host"},
		{"opaque", strict, "https:public.example", false, false, "host"},
		{"empty", strict, "", false, false, "required"},
		{"unparsable", strict, "https://public.example/\x7f", false, false, "not valid"},
		{"port zero", strict, "https://public.example:0/", false, false, "port"},
		{"port too big", strict, "https://public.example:70000/", false, false, "port"},
		{"too long", strict, "https://public.example/" + strings.Repeat("a", MaxURLLength), false, false, "at most 2048"},
		{"loopback literal", strict, "https://127.0.0.1/hook", false, true, "127.0.0.1"},
		{"loopback literal in dev", dev, "http://127.0.0.1:8080/hook", true, false, ""},
		{"IPv6 loopback literal", strict, "https://[::1]/hook", false, true, "::1"},
		{"mapped loopback literal", strict, "https://[::ffff:127.0.0.1]/hook", false, true, "internal"},
		{"metadata literal", strict, "https://169.254.169.254/latest/meta-data/", false, true, "169.254.169.254"},
		{"link-local with zone", strict, "https://[fe80::1%25eth0]/", false, true, "fe80::1"},
		{"unspecified literal", strict, "https://0.0.0.0/", false, true, "0.0.0.0"},
		{"host resolving to private", strict, "https://private.example/hook", false, true, "private or internal address"},
		{"host resolving to private in dev", dev, "https://private.example/hook", true, false, ""},
		{"one address of several internal", strict, "https://mixed.example/", false, true, "private or internal address"},
		{"host resolving to mapped loopback", strict, "https://mapped.example/", false, true, "private or internal address"},
		{"host resolving to metadata", strict, "https://metadata.example/", false, true, "private or internal address"},
		{"localhost", strict, "https://localhost/", false, true, "internal"},
		{"localhost in dev", dev, "http://localhost:9000/", true, false, ""},
		{"unresolvable", strict, "https://nowhere.example/", false, false, "does not resolve"},
		{"unresolvable in dev", dev, "http://nowhere.example/", false, false, "does not resolve"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.g.CheckURL(context.Background(), tt.url)
			if tt.ok {
				if err != nil {
					t.Fatalf("CheckURL(%q) = %v, want nil", tt.url, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("CheckURL(%q) = nil, want error", tt.url)
			}
			var ue *URLError
			if !errors.As(err, &ue) {
				t.Fatalf("error %T %v is not a *URLError", err, err)
			}
			if !strings.Contains(ue.Error(), tt.reason) {
				t.Errorf("error %q does not contain %q", ue.Error(), tt.reason)
			}
			if got := errors.Is(err, ErrBlocked); got != tt.blocked {
				t.Errorf("errors.Is(%v, ErrBlocked) = %v, want %v", err, got, tt.blocked)
			}
			if len(ue.Error()) > 200 {
				t.Errorf("error message too long (%d bytes): %q", len(ue.Error()), ue.Error())
			}
		})
	}
}

func TestCheckURLDoesNotEchoLongInput(t *testing.T) {
	host := strings.Repeat("a", 300) + ".example"
	g := &Guard{Resolve: fakeResolver(nil)}
	err := g.CheckURL(context.Background(), "https://"+host+"/")
	if err == nil {
		t.Fatal("want error")
	}
	if len(err.Error()) > 200 || strings.Contains(err.Error(), host) {
		t.Errorf("message echoes the input: %q", err.Error())
	}
}

func TestCheckURLDefaultResolver(t *testing.T) {
	// The zero Guard uses the system resolver; an IP literal needs no lookup.
	var g Guard
	if err := g.CheckURL(context.Background(), "https://1.1.1.1/"); err != nil {
		t.Fatal(err)
	}
	if err := g.CheckURL(context.Background(), "https://127.0.0.1/"); !errors.Is(err, ErrBlocked) {
		t.Fatalf("got %v, want ErrBlocked", err)
	}
}

func newServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestDialContextLoopback(t *testing.T) {
	srv := newServer(t)
	addr := srv.Listener.Addr().String() // 127.0.0.1:port

	t.Run("refused", func(t *testing.T) {
		g := &Guard{}
		conn, err := g.DialContext(context.Background(), "tcp", addr)
		if err == nil {
			conn.Close()
			t.Fatal("dial to loopback succeeded")
		}
		if !errors.Is(err, ErrBlocked) {
			t.Fatalf("got %v, want ErrBlocked", err)
		}
		if !strings.Contains(err.Error(), "internal") {
			t.Errorf("message %q does not say the address is internal", err)
		}
	})

	t.Run("refused through http.Client", func(t *testing.T) {
		g := &Guard{}
		tr := g.transport()
		defer tr.CloseIdleConnections()
		_, err := (&http.Client{Transport: tr}).Get(srv.URL)
		if !errors.Is(err, ErrBlocked) {
			t.Fatalf("got %v, want ErrBlocked", err)
		}
	})

	t.Run("allowed in dev", func(t *testing.T) {
		g := &Guard{AllowPrivate: true}
		conn, err := g.DialContext(context.Background(), "tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conn.Close()

		tr := g.transport()
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})

	t.Run("hostname allowed in dev", func(t *testing.T) {
		g := &Guard{AllowPrivate: true, Resolve: fakeResolver(map[string][]string{"hooks.test": {"127.0.0.1"}})}
		_, port, _ := net.SplitHostPort(addr)
		tr := g.transport()
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr}).Get("http://hooks.test:" + port + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	})
}

func TestDialContextSkipsBlockedAddresses(t *testing.T) {
	srv := newServer(t)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())

	// Every address is internal: refused without a connection attempt.
	g := &Guard{Resolve: fakeResolver(map[string][]string{"internal.test": {"10.0.0.1", "::1", "::ffff:127.0.0.1"}})}
	_, err := g.DialContext(context.Background(), "tcp", net.JoinHostPort("internal.test", port))
	if !errors.Is(err, ErrBlocked) {
		t.Fatalf("got %v, want ErrBlocked", err)
	}

	// Unresolvable: an error, but not ErrBlocked.
	_, err = g.DialContext(context.Background(), "tcp", net.JoinHostPort("nowhere.test", port))
	if err == nil || errors.Is(err, ErrBlocked) {
		t.Fatalf("got %v, want a resolution error", err)
	}

	// Only TCP.
	if _, err := g.DialContext(context.Background(), "udp", "8.8.8.8:53"); err == nil {
		t.Fatal("udp dial accepted")
	}
}

// TestDNSRebinding: the host resolves to a public address when the webhook
// is created and to loopback when the delivery connects.
func TestDNSRebinding(t *testing.T) {
	srv := newServer(t)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())

	var calls atomic.Int32
	g := &Guard{Resolve: func(ctx context.Context, host string) ([]netip.Addr, error) {
		if host != "rebind.test" {
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		}
		if calls.Add(1) == 1 {
			return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
		}
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}}

	u := "https://rebind.test:" + port + "/hook"
	if err := g.CheckURL(context.Background(), u); err != nil {
		t.Fatalf("CheckURL: %v", err)
	}

	tr := g.transport()
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	for _, target := range []string{u, "http://rebind.test:" + port + "/hook"} {
		resp, err := client.Post(target, "application/json", strings.NewReader(`{}`))
		if err == nil {
			resp.Body.Close()
			t.Fatalf("delivery to %s reached the loopback server", target)
		}
		var ue *url.Error
		if !errors.As(err, &ue) {
			t.Fatalf("got %T, want *url.Error", err)
		}
		if !errors.Is(err, ErrBlocked) {
			t.Fatalf("got %v, want ErrBlocked", err)
		}
	}
	if n := calls.Load(); n < 2 {
		t.Fatalf("resolver called %d times, want a fresh lookup at connect time", n)
	}
}

// TestControlRefusesBlocked: even when DialContext's own filtering is
// bypassed (as if a resolver lied after the check), the dialer's Control
// hook refuses the actual address being connected.
func TestControlRefusesBlocked(t *testing.T) {
	srv := newServer(t)
	addr := srv.Listener.Addr().String()

	g := &Guard{}
	conn, err := g.dialer().DialContext(context.Background(), "tcp", addr)
	if err == nil {
		conn.Close()
		t.Fatal("dialer connected to loopback")
	}
	if !errors.Is(err, ErrBlocked) {
		t.Fatalf("got %v, want ErrBlocked", err)
	}
	var oe *net.OpError
	if !errors.As(err, &oe) {
		t.Errorf("got %T, want a *net.OpError", err)
	}

	dev := &Guard{AllowPrivate: true}
	conn, err = dev.dialer().DialContext(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatalf("dev dialer: %v", err)
	}
	conn.Close()

	for _, tt := range []struct {
		address string
		blocked bool
	}{
		{"127.0.0.1:80", true},
		{"[::1]:443", true},
		{"[::ffff:127.0.0.1]:443", true},
		{"169.254.169.254:80", true},
		{"[fe80::1%eth0]:443", true},
		{"not-an-address:80", true}, // fails closed
		{"8.8.8.8:443", false},
		{"[2606:4700::1111]:443", false},
	} {
		err := g.control("tcp", tt.address, nil)
		if got := errors.Is(err, ErrBlocked); got != tt.blocked {
			t.Errorf("control(%q) = %v, want blocked=%v", tt.address, err, tt.blocked)
		}
		if err := dev.control("tcp", tt.address, nil); err != nil {
			t.Errorf("dev control(%q) = %v, want nil", tt.address, err)
		}
	}
}

func TestTransport(t *testing.T) {
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:1")
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:1")
	tr := (&Guard{}).transport()
	if tr.Proxy != nil {
		t.Error("Proxy is set")
	}
	if tr.DialContext == nil || tr.TLSHandshakeTimeout == 0 || tr.ResponseHeaderTimeout == 0 ||
		tr.MaxIdleConnsPerHost != 64 || tr.IdleConnTimeout == 0 || !tr.ForceAttemptHTTP2 {
		t.Errorf("unexpected transport settings: %+v", tr)
	}
}
