// Package clientaddr finds the address of the client that made a request:
// the connecting address, or, when that is a trusted proxy (ams serve
// --trusted-proxies), the address the proxies report in the one header
// the operator names (--client-address-header), or, when none is named,
// in Forwarded (RFC 7239) or X-Forwarded-For, never both. It is the one
// place that reads http.Request.RemoteAddr: the API's middleware stores
// the result in the request's context (With), and the request log, the
// sign-in and sign-up throttles and everything else read it back with Of.
package clientaddr

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// Proxies is the list of networks whose connections are believed when
// they report the client's address. The zero value trusts nobody: the
// headers are ignored and the connecting address is the client.
type Proxies []netip.Prefix

// ParseProxies reads a comma-separated list of CIDRs (a bare address is
// a network of one). Spaces around items and empty items are ignored.
func ParseProxies(s string) (Proxies, error) {
	var out Proxies
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if p, err := netip.ParsePrefix(item); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(item)
		if err != nil || a.Zone() != "" {
			return nil, fmt.Errorf("%q is not a CIDR (such as 10.0.0.0/8 or fd00::/8) nor an IP address", item)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// Trusts reports whether a is in one of the trusted networks.
func (p Proxies) Trusts(a netip.Addr) bool {
	a = a.Unmap()
	for _, n := range p {
		if n.Contains(a) {
			return true
		}
	}
	return false
}

// String lists the networks, comma-separated.
func (p Proxies) String() string {
	s := make([]string, len(p))
	for i, n := range p {
		s[i] = n.String()
	}
	return strings.Join(s, ",")
}

// ParseHeader checks the name of the header that carries the client's
// address (ams serve --client-address-header) and returns it in canonical
// form ("x-real-ip" becomes "X-Real-Ip"); "" stays "" (none named).
func ParseHeader(name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return "", nil
	}
	if !httpguts.ValidHeaderFieldName(name) {
		return "", fmt.Errorf("%q is not a header name (such as X-Forwarded-For, Forwarded or X-Real-IP)", name)
	}
	return http.CanonicalHeaderKey(name), nil
}

// ErrMixedHeaders is Resolver.Client's error for a request from a trusted
// proxy that carries both Forwarded and X-Forwarded-For when no header is
// named: one of them may be the client's own, passed through by a
// balancer that appends to the other, and nothing tells which.
var ErrMixedHeaders = errors.New("the request has both Forwarded and X-Forwarded-For; name the one header the proxies set with --client-address-header")

// Resolver finds the client address of requests: Proxies are the
// networks whose reports are believed, Header the one header that
// carries them.
type Resolver struct {
	Proxies Proxies
	// Header is the header the trusted proxies set (canonical form, as
	// ParseHeader returns it): only it is read, any other (Forwarded,
	// X-Forwarded-For or another a client sent) is ignored. Forwarded is
	// read as RFC 7239; any other header as a comma-separated list of
	// addresses (X-Forwarded-For's form; X-Real-IP and the like are a
	// list of one). Empty: Forwarded or X-Forwarded-For, whichever the
	// request has, and ErrMixedHeaders when it has both.
	Header string
}

// Client returns the client address of r, without a port. When the
// connecting address is not a trusted proxy, it is the client, and the
// headers are ignored. Otherwise the chain of addresses in the header
// (Header, or the one of Forwarded and X-Forwarded-For the request has)
// is walked from the right, skipping trusted proxies: the first untrusted
// address is the client (the leftmost one if all are trusted). Without
// the header, or when it cannot be read (a malformed item, an obfuscated
// or "unknown" node, no address), the connecting address is the client.
//
// With no Header named, a request from a trusted proxy that has both
// Forwarded and X-Forwarded-For gets the connecting address and
// ErrMixedHeaders: the caller refuses it (believing either header would
// let a client choose its address behind a balancer that appends to the
// other; counting it under the balancer's address would let one client
// spend every client's per-address allowance).
func (c Resolver) Client(r *http.Request) (string, error) {
	remote, ok := parseHostPort(r.RemoteAddr)
	if !ok {
		return r.RemoteAddr, nil
	}
	if len(c.Proxies) == 0 || !c.Proxies.Trusts(remote) {
		return remote.String(), nil
	}
	name := c.Header
	if name == "" {
		_, fw := r.Header["Forwarded"]
		_, xff := r.Header["X-Forwarded-For"]
		switch {
		case fw && xff:
			return remote.String(), ErrMixedHeaders
		case fw:
			name = "Forwarded"
		case xff:
			name = "X-Forwarded-For"
		default:
			return remote.String(), nil
		}
	}
	lines := r.Header.Values(name)
	if len(lines) == 0 {
		return remote.String(), nil
	}
	var chain []netip.Addr
	if name == "Forwarded" {
		chain, ok = parseForwarded(lines)
	} else {
		chain, ok = parseXFF(lines)
	}
	if !ok || len(chain) == 0 {
		return remote.String(), nil
	}
	for i := len(chain) - 1; i >= 0; i-- {
		if !c.Proxies.Trusts(chain[i]) || i == 0 {
			return chain[i].String(), nil
		}
	}
	return remote.String(), nil // not reached
}

// Network returns the network a throttle counts the client address addr
// under: the /64 of an IPv6 address (one customer's network; anyone
// holding one has 2^64 addresses to rotate through), written as a CIDR
// such as "2001:db8:1:2::/64", and an IPv4 address itself. Anything else
// (not an address) is returned as it is.
func Network(addr string) string {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return addr
	}
	a = a.WithZone("").Unmap()
	if a.Is4() {
		return a.String()
	}
	p, _ := a.Prefix(64)
	return p.String()
}

// maxHops bounds the addresses read from one header.
const maxHops = 64

// parseXFF reads X-Forwarded-For lines: comma-separated addresses, in
// order, IPv6 bare or in brackets, optionally with a port.
func parseXFF(lines []string) ([]netip.Addr, bool) {
	var out []netip.Addr
	for _, line := range lines {
		for _, item := range strings.Split(line, ",") {
			a, ok := parseNode(strings.TrimSpace(item))
			if !ok || len(out) == maxHops {
				return nil, false
			}
			out = append(out, a)
		}
	}
	return out, true
}

// parseForwarded reads Forwarded lines (RFC 7239): comma-separated
// elements of ';'-separated name=value pairs, the value a token or a
// quoted string; every element must have a "for" naming an address.
func parseForwarded(lines []string) ([]netip.Addr, bool) {
	var out []netip.Addr
	for _, line := range lines {
		elems, ok := splitQuoted(line, ',')
		if !ok {
			return nil, false
		}
		for _, elem := range elems {
			pairs, ok := splitQuoted(elem, ';')
			if !ok {
				return nil, false
			}
			var addr netip.Addr
			found := false
			for _, pair := range pairs {
				name, value, ok := strings.Cut(strings.TrimSpace(pair), "=")
				if !ok {
					if strings.TrimSpace(pair) == "" {
						continue
					}
					return nil, false
				}
				if !strings.EqualFold(strings.TrimSpace(name), "for") {
					continue
				}
				if found {
					return nil, false // two "for" in one element
				}
				v, ok := unquote(strings.TrimSpace(value))
				if !ok {
					return nil, false
				}
				if addr, ok = parseNode(v); !ok {
					return nil, false
				}
				found = true
			}
			if !found || len(out) == maxHops {
				return nil, false
			}
			out = append(out, addr)
		}
	}
	return out, true
}

// splitQuoted splits s at sep outside quoted strings; it fails on an
// unterminated quote.
func splitQuoted(s string, sep byte) ([]string, bool) {
	var out []string
	start, quoted := 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quoted && c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case !quoted && c == sep:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	if quoted {
		return nil, false
	}
	return append(out, s[start:]), true
}

// unquote returns the value of a token or a quoted string.
func unquote(v string) (string, bool) {
	if !strings.HasPrefix(v, `"`) {
		return v, v != "" && !strings.ContainsAny(v, "\" \t\\")
	}
	if len(v) < 2 || !strings.HasSuffix(v, `"`) {
		return "", false
	}
	var b strings.Builder
	for i := 1; i < len(v)-1; i++ {
		if v[i] == '\\' {
			i++
			if i >= len(v)-1 {
				return "", false
			}
		}
		b.WriteByte(v[i])
	}
	return b.String(), true
}

// parseNode reads one node: an IPv4 address, an IPv6 address bare or in
// brackets, either optionally with a port. Obfuscated identifiers
// ("_hidden"), "unknown", zones and anything else are refused.
func parseNode(s string) (netip.Addr, bool) {
	if s == "" || len(s) > 64 {
		return netip.Addr{}, false
	}
	if a, err := netip.ParseAddr(s); err == nil && a.Zone() == "" {
		return a.Unmap(), true
	}
	if strings.HasPrefix(s, "[") {
		if end := strings.IndexByte(s, ']'); end > 0 && (end == len(s)-1 || s[end+1] == ':') {
			a, err := netip.ParseAddr(s[1:end])
			if err == nil && a.Is6() && a.Zone() == "" && validPort(s[end+1:]) {
				return a.Unmap(), true
			}
		}
		return netip.Addr{}, false
	}
	if host, port, ok := strings.Cut(s, ":"); ok {
		a, err := netip.ParseAddr(host)
		if err == nil && a.Is4() && validPort(":"+port) {
			return a, true
		}
	}
	return netip.Addr{}, false
}

// validPort accepts "", or ":" and 1 to 5 digits (RFC 7239 also allows
// an obfuscated port, "_abc").
func validPort(s string) bool {
	if s == "" {
		return true
	}
	if s[0] != ':' || len(s) < 2 || len(s) > 16 {
		return false
	}
	p := s[1:]
	if p[0] == '_' {
		for _, c := range p[1:] {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
				return false
			}
		}
		return true
	}
	if len(p) > 5 {
		return false
	}
	for _, c := range p {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// parseHostPort reads a connecting address, "host:port" as net/http sets
// RemoteAddr (or a bare address).
func parseHostPort(s string) (netip.Addr, bool) {
	host, _, err := net.SplitHostPort(s)
	if err != nil {
		host = s
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.WithZone("").Unmap(), true
}

type ctxKey struct{}

// With returns ctx carrying the client address addr.
func With(ctx context.Context, addr string) context.Context {
	return context.WithValue(ctx, ctxKey{}, addr)
}

// Of returns the client address of r: the one the middleware stored in
// its context (With), or, when there is none (a handler served outside
// the API's middleware, as in some tests), the connecting address.
func Of(r *http.Request) string {
	if a, ok := r.Context().Value(ctxKey{}).(string); ok {
		return a
	}
	a, _ := Resolver{}.Client(r)
	return a
}

// FromContext returns the client address stored in ctx, or "".
func FromContext(ctx context.Context) string {
	a, _ := ctx.Value(ctxKey{}).(string)
	return a
}
