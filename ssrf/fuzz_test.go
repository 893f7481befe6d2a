package ssrf

import (
	"context"
	"errors"
	"net/netip"
	"net/url"
	"strings"
	"testing"
)

// internal is a second statement of what must never be reached, made of
// the standard library's own predicates rather than of blockedPrefixes:
// whatever it calls internal, Blocked must block.
func internal(ip netip.Addr) bool {
	ip = ip.WithZone("").Unmap()
	if ip.IsLoopback() || ip.IsPrivate() || ip.IsUnspecified() || ip.IsLinkLocalUnicast() ||
		ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() || ip.IsMulticast() {
		return true
	}
	if ip.Is4() {
		b := ip.As4()
		return b[0] == 0 || // "this network"
			(b[0] == 100 && b[1]&0xC0 == 64) || // carrier-grade NAT
			(b[0] == 169 && b[1] == 254) || // link-local, cloud metadata
			b[0] >= 240 // reserved, broadcast
	}
	b := ip.As16()
	var zero [12]byte
	switch {
	case [12]byte(b[:12]) == zero: // IPv4-compatible ::a.b.c.d, ::, ::1
		return true
	case netip.MustParsePrefix("64:ff9b::/96").Contains(ip):
		return internal(netip.AddrFrom4([4]byte(b[12:16])))
	case netip.MustParsePrefix("2002::/16").Contains(ip):
		return internal(netip.AddrFrom4([4]byte(b[2:6])))
	case netip.MustParsePrefix("2001::/32").Contains(ip):
		return internal(netip.AddrFrom4([4]byte(b[4:8]))) ||
			internal(netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]}))
	}
	return false
}

// addrsOf reads addresses from b: 4 bytes an IPv4, 16 bytes an IPv6
// address, as the tag byte before each says.
func addrsOf(b []byte) []netip.Addr {
	var out []netip.Addr
	for len(b) > 0 {
		tag := b[0]
		b = b[1:]
		n := 4
		if tag&1 == 1 {
			n = 16
		}
		if len(b) < n {
			break
		}
		if n == 4 {
			out = append(out, netip.AddrFrom4([4]byte(b[:4])))
		} else {
			out = append(out, netip.AddrFrom16([16]byte(b[:16])))
		}
		b = b[n:]
	}
	return out
}

// FuzzBlocked: Blocked blocks every address the standard library calls
// loopback, private, link-local, multicast or unspecified (in either
// family, mapped or embedded in NAT64, 6to4 or Teredo), and the
// connect-time check refuses every such address whatever its spelling.
func FuzzBlocked(f *testing.F) {
	for _, s := range []string{"127.0.0.1", "::1", "::ffff:127.0.0.1", "10.1.2.3", "169.254.169.254", "fd00:ec2::254",
		"fe80::1%eth0", "64:ff9b::a9fe:a9fe", "2002:7f00:1::", "2001:0:4136:e378:8000:63bf:3fff:fdd2", "::127.0.0.1",
		"8.8.8.8", "2606:4700::1111", "0.0.0.0", "255.255.255.255", "100.64.0.1", "ff02::1", "::", "1.1.1.1"} {
		a := netip.MustParseAddr(s)
		b := a.AsSlice()
		f.Add(b, netip.AddrPortFrom(a, 443).String())
	}
	g := &Guard{}
	f.Fuzz(func(t *testing.T, raw []byte, address string) {
		if ip, ok := netip.AddrFromSlice(raw); ok {
			if internal(ip) && !Blocked(ip) {
				t.Fatalf("%s is internal and not blocked", ip)
			}
			if Blocked(ip) != Blocked(ip.WithZone("eth0")) && ip.Is6() {
				t.Fatalf("%s: a zone changes Blocked", ip)
			}
			if g.control("tcp", netip.AddrPortFrom(ip, 443).String(), nil) == nil && Blocked(ip) {
				t.Fatalf("control lets %s through", ip)
			}
		}
		err := g.control("tcp", address, nil)
		if err != nil {
			if !errors.Is(err, ErrBlocked) {
				t.Fatalf("control(%q): %v does not match ErrBlocked", address, err)
			}
			return
		}
		ap, perr := netip.ParseAddrPort(address)
		if perr != nil || Blocked(ap.Addr()) || internal(ap.Addr()) {
			t.Fatalf("control(%q) lets through an address it cannot check or that is internal", address)
		}
	})
}

// FuzzCheckURL: CheckURL never panics; a refusal is a *URLError with a
// short message; a URL it accepts (strict mode) is an absolute https URL
// with a host, without user info or fragment, whose IP literal or every
// resolved address is outside the internal ranges.
func FuzzCheckURL(f *testing.F) {
	public := []byte{0, 93, 184, 216, 34}
	for _, s := range []string{
		"https://example.com/hook", "https://example.com:8443/a?b=c", "http://example.com/", "https://127.0.0.1/",
		"https://[::1]/", "https://[::ffff:127.0.0.1]/", "https://[fe80::1%25eth0]/", "https://0x7f.1/", "https://2130706433/",
		"https://169.254.169.254/latest/meta-data", "https://user:pw@example.com/", "https://example.com/#frag",
		"https://example.com:0/", "https://example.com:65536/", "https://example.com:/", "//example.com/", "/relative",
		"ftp://example.com/", "HTTPS://EXAMPLE.COM/", "https:example.com", "https://[example.com]/", "https://exa mple.com/",
		"https://example.com\\@127.0.0.1/", "https://127.0.0.1%2f@example.com/", "https://[64:ff9b::7f00:1]/",
		"https://xn--nxasmq6b.example/", "https://ex%41mple.com/", "https://8.8.8.8./", " https://example.com",
	} {
		f.Add(s, public, false)
		f.Add(s, []byte{0, 127, 0, 0, 1}, false)
	}
	f.Add("https://rebind.example/", append(append([]byte{}, public...), 0, 10, 0, 0, 1), false)
	f.Add("https://v6.example/", append([]byte{1}, netip.MustParseAddr("::ffff:169.254.169.254").AsSlice()...), false)
	f.Add("http://localhost:8080/", []byte{0, 127, 0, 0, 1}, true)
	f.Fuzz(func(t *testing.T, raw string, answer []byte, dev bool) {
		addrs := addrsOf(answer)
		var asked []string
		g := &Guard{AllowPrivate: dev, Resolve: func(_ context.Context, host string) ([]netip.Addr, error) {
			asked = append(asked, host)
			if len(addrs) == 0 {
				return nil, errors.New("no such host")
			}
			return addrs, nil
		}}
		err := g.CheckURL(context.Background(), raw)
		if err != nil {
			var ue *URLError
			if !errors.As(err, &ue) {
				t.Fatalf("CheckURL(%q): %T %v, want a *URLError", raw, err, err)
			}
			if len(ue.Reason) > 300 {
				t.Fatalf("CheckURL(%q): a %d-byte message", raw, len(ue.Reason))
			}
			return
		}
		u, perr := url.Parse(raw)
		if perr != nil || !u.IsAbs() || u.Host == "" || u.Hostname() == "" || u.User != nil || strings.Contains(raw, "#") || len(raw) > MaxURLLength {
			t.Fatalf("CheckURL accepted %q", raw)
		}
		if u.Scheme != "https" && !(dev && u.Scheme == "http") {
			t.Fatalf("CheckURL accepted scheme %q of %q", u.Scheme, raw)
		}
		if dev {
			return
		}
		if ip, err := netip.ParseAddr(u.Hostname()); err == nil {
			if internal(ip) {
				t.Fatalf("CheckURL accepted %q, an internal address", raw)
			}
			return
		}
		if len(asked) != 1 || asked[0] != u.Hostname() {
			t.Fatalf("CheckURL(%q) resolved %q, want the host %q once", raw, asked, u.Hostname())
		}
		for _, ip := range addrs {
			if internal(ip) {
				t.Fatalf("CheckURL accepted %q, resolving to the internal %s", raw, ip)
			}
		}
	})
}
