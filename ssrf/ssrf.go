// Package ssrf keeps the service's outgoing requests to URLs that users give
// from reaching the service's own network (server-side request forgery
// protection). It guards every such request alike: webhook deliveries
// (webhook URLs set through the API or the account pages) and CalDAV sync
// (the calendar server URL of an integration).
//
// Without care such a request could be aimed at the loopback interface, a
// private network, or a cloud metadata endpoint such as 169.254.169.254. The
// package checks twice:
//
//   - [Guard.CheckURL] validates a URL when it is set (a webhook or an
//     integration created or updated), giving the user a readable [URLError];
//   - [Guard.DialContext] (used by [Guard.Client] and [Guard.DialBounded])
//     checks again at connect time, on the addresses actually resolved and
//     dialled, so that a DNS answer that changes after the URL was checked
//     (DNS rebinding) cannot get through.
//
// [Blocked] is the single definition of which addresses are off limits.
//
// The package is also the one place outbound connections are made, for
// users' URLs and the operator's alike ([Operator]): [Guard.Client] bounds
// every HTTP response ams reads from a peer in header bytes, body bytes
// (decompressed) and the time of the whole exchange ([Limits]), and
// [Guard.DialBounded] bounds a line-protocol connection (SMTP) in bytes
// read and time ([ConnLimits]), so that no peer can make ams use memory or
// time without bound. internal/archtest checks that no other package
// builds a transport, a client or a dialer of its own.
package ssrf

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// MaxURLLength is the longest URL, in bytes, that [Guard.CheckURL]
// accepts.
const MaxURLLength = 2048

// dialTimeout bounds each connection attempt, and name resolution in
// CheckURL.
const dialTimeout = 5 * time.Second

// ErrBlocked is wrapped by the errors [Guard.DialContext] returns when a
// connection is refused because the destination address is internal. Use
// errors.Is to detect it, also through *url.Error from an http.Client.
var ErrBlocked = errors.New("ssrf: address is not allowed")

// blockedPrefixes lists the ranges a request must never reach, whatever the
// mode. IPv4-mapped IPv6 addresses are unmapped before being matched, and the
// IPv6 ranges that embed an IPv4 address (NAT64, 6to4, Teredo) are judged by
// that address in [Blocked] rather than listed here.
var blockedPrefixes = []netip.Prefix{
	// IPv4 (RFC 6890 and the IANA special-purpose registry).
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network", includes unspecified 0.0.0.0
	netip.MustParsePrefix("10.0.0.0/8"),      // private
	netip.MustParsePrefix("100.64.0.0/10"),   // carrier-grade NAT
	netip.MustParsePrefix("127.0.0.0/8"),     // loopback
	netip.MustParsePrefix("169.254.0.0/16"),  // link-local, includes the 169.254.169.254 metadata service
	netip.MustParsePrefix("172.16.0.0/12"),   // private
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation TEST-NET-1
	netip.MustParsePrefix("192.168.0.0/16"),  // private
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // documentation TEST-NET-2
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation TEST-NET-3
	netip.MustParsePrefix("224.0.0.0/4"),     // multicast
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, includes broadcast 255.255.255.255

	// IPv6.
	netip.MustParsePrefix("::/96"),           // unspecified ::, loopback ::1, deprecated IPv4-compatible ::a.b.c.d
	netip.MustParsePrefix("::ffff:0:0:0/96"), // SIIT IPv4-translated ::ffff:0:a.b.c.d
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use NAT64
	netip.MustParsePrefix("100::/64"),        // discard-only
	netip.MustParsePrefix("2001:2::/48"),     // benchmarking
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("3fff::/20"),       // documentation (RFC 9637)
	netip.MustParsePrefix("5f00::/16"),       // SRv6 SIDs, not globally reachable
	netip.MustParsePrefix("fc00::/7"),        // unique local, includes AWS metadata fd00:ec2::254
	netip.MustParsePrefix("fe80::/10"),       // link-local
	netip.MustParsePrefix("fec0::/10"),       // deprecated site-local
	netip.MustParsePrefix("ff00::/8"),        // multicast
}

// IPv6 ranges that carry an IPv4 address, which decides whether they are
// blocked.
var (
	nat64Prefix  = netip.MustParsePrefix("64:ff9b::/96") // RFC 6052 well-known prefix
	sixToFour    = netip.MustParsePrefix("2002::/16")    // RFC 3056
	teredoPrefix = netip.MustParsePrefix("2001::/32")    // RFC 4380
)

// Blocked reports whether a request must never reach ip: unspecified,
// loopback, private, link-local (including cloud metadata addresses),
// carrier-grade NAT, documentation, benchmarking, reserved, broadcast and
// multicast addresses of both families, the IPv6 discard prefix, and IPv6
// addresses that embed a blocked IPv4 address (IPv4-mapped, NAT64, 6to4,
// Teredo). An invalid address is blocked. An IPv6 zone is ignored.
func Blocked(ip netip.Addr) bool {
	if !ip.IsValid() {
		return true
	}
	// Prefix.Contains never matches an address with a zone.
	ip = ip.WithZone("").Unmap()
	for _, p := range blockedPrefixes {
		if p.Contains(ip) {
			return true
		}
	}
	if ip.Is4() {
		return false
	}
	b := ip.As16()
	switch {
	case nat64Prefix.Contains(ip):
		return Blocked(netip.AddrFrom4([4]byte(b[12:16])))
	case sixToFour.Contains(ip):
		return Blocked(netip.AddrFrom4([4]byte(b[2:6])))
	case teredoPrefix.Contains(ip):
		server := netip.AddrFrom4([4]byte(b[4:8]))
		client := netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]})
		return Blocked(server) || Blocked(client)
	}
	return false
}

// Resolver looks up the IP addresses of a host name. Tests inject their own;
// [DefaultResolver] uses the system's.
type Resolver func(ctx context.Context, host string) ([]netip.Addr, error)

// DefaultResolver resolves host with net.DefaultResolver, both address
// families. It is the [Resolver] a [Guard] uses when its Resolve is nil.
func DefaultResolver(ctx context.Context, host string) ([]netip.Addr, error) {
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// Guard checks user-given URLs and dials requests to them. The zero value is
// ready to use and strict. A Guard must not be modified while in use.
type Guard struct {
	// AllowPrivate is the server's --dev mode: plain http is accepted and
	// loopback, private and other internal addresses may be reached.
	AllowPrivate bool

	// Resolve looks up host names; nil means DefaultResolver.
	Resolve Resolver
}

func (g *Guard) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	r := g.Resolve
	if r == nil {
		r = DefaultResolver
	}
	return r(ctx, host)
}

// URLError is the error [Guard.CheckURL] returns for a URL that is
// refused. Its message is a sentence meant for users; it never repeats
// more than a short excerpt of the input.
type URLError struct {
	// Reason says why the URL is refused, as a sentence.
	Reason string

	err error // cause, for errors.Is / errors.As; may be nil
}

// Error returns the reason the URL was refused.
func (e *URLError) Error() string { return e.Reason }

// Unwrap returns the underlying cause: [ErrBlocked] for internal addresses,
// the resolver's error for a host that does not resolve, or nil.
func (e *URLError) Unwrap() error { return e.err }

func urlErr(err error, format string, args ...any) *URLError {
	return &URLError{Reason: fmt.Sprintf(format, args...), err: err}
}

// excerpt shortens s for inclusion in a message shown to users.
func excerpt(s string) string {
	const limit = 64
	if len(s) <= limit {
		return s
	}
	// Cut on a rune boundary.
	i := limit
	for i > 0 && s[i]&0xC0 == 0x80 {
		i--
	}
	return s[:i] + "..."
}

// CheckURL validates a URL when it is set (a webhook or an integration is
// created or updated). The
// URL must be absolute, use https (or http when AllowPrivate is set), have a
// host, carry no user name or password and no fragment, be at most
// [MaxURLLength] bytes long, and have a port (if any) between 1 and 65535.
// The host must resolve, and unless AllowPrivate is set, neither an IP
// literal host nor any address the host resolves to may be [Blocked].
//
// Refusals are returned as *[URLError]; a refusal for an internal address
// also matches [ErrBlocked] with errors.Is. Passing CheckURL does not make
// later requests safe on its own: send them with [Guard.Client], which
// checks again at connect time.
func (g *Guard) CheckURL(ctx context.Context, raw string) error {
	if strings.TrimSpace(raw) == "" {
		return urlErr(nil, "a URL is required")
	}
	if len(raw) > MaxURLLength {
		return urlErr(nil, "the URL must be at most %d characters long", MaxURLLength)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return urlErr(nil, "the URL is not valid")
	}
	if u.Scheme == "" || !u.IsAbs() {
		return urlErr(nil, "the URL must be absolute, such as https://example.com/webhook")
	}
	switch u.Scheme { // url.Parse lower-cases the scheme
	case "https":
	case "http":
		if !g.AllowPrivate {
			return urlErr(nil, "the URL must use https")
		}
	default:
		if g.AllowPrivate {
			return urlErr(nil, "the URL must use https or http")
		}
		return urlErr(nil, "the URL must use https")
	}
	if u.Opaque != "" || u.Host == "" {
		return urlErr(nil, "the URL must include a host")
	}
	if u.User != nil {
		return urlErr(nil, "the URL must not contain a user name or password")
	}
	if strings.Contains(raw, "#") {
		return urlErr(nil, "the URL must not contain a fragment (#...)")
	}
	host := u.Hostname()
	if host == "" {
		return urlErr(nil, "the URL must include a host")
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return urlErr(nil, "the URL's port must be between 1 and 65535")
		}
	}

	if ip, err := netip.ParseAddr(host); err == nil {
		if !g.AllowPrivate && Blocked(ip) {
			return urlErr(ErrBlocked, "the URL points to a private or internal address (%s)", ip.WithZone(""))
		}
		return nil
	}
	if strings.HasPrefix(u.Host, "[") {
		// url.Parse accepts some bracketed hosts netip does not.
		return urlErr(nil, "the URL's host is not a valid IP address")
	}

	rctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	addrs, err := g.resolve(rctx, host)
	if err != nil || len(addrs) == 0 {
		if err != nil && ctx.Err() != nil {
			return urlErr(ctx.Err(), "the host %q could not be resolved: %v", excerpt(host), ctx.Err())
		}
		if err == nil {
			err = errors.New("no addresses")
		}
		return urlErr(err, "the host %q does not resolve to an IP address", excerpt(host))
	}
	if !g.AllowPrivate {
		for _, ip := range addrs {
			if Blocked(ip) {
				// The address is not named: that would make setting a URL
				// an oracle for internal DNS names.
				return urlErr(ErrBlocked, "the host resolves to a private or internal address")
			}
		}
	}
	return nil
}

// DialContext connects to addr ("host:port") for an http.Transport. A host
// name is resolved with the Guard's resolver; an IP literal is used as is.
// Unless AllowPrivate is set, [Blocked] addresses are dropped, and if none is
// left the error wraps [ErrBlocked]. The remaining addresses are tried in
// order, each with a 5 s timeout, by a dialer that checks once more the
// address the socket actually connects to. Only TCP networks are accepted.
//
// Because the check happens here, on the addresses resolved for this very
// connection, a host whose DNS answer changed since [Guard.CheckURL] accepted
// it cannot lead a delivery to an internal address.
func (g *Guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return nil, fmt.Errorf("ssrf: network %q is not allowed", network)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("ssrf: %w", err)
	}

	var addrs []netip.Addr
	literal := false
	if ip, err := netip.ParseAddr(host); err == nil {
		addrs, literal = []netip.Addr{ip}, true
	} else {
		addrs, err = g.resolve(ctx, host)
		if err != nil {
			return nil, &net.OpError{Op: "dial", Net: network, Err: err}
		}
		if len(addrs) == 0 {
			return nil, &net.OpError{Op: "dial", Net: network, Err: &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}}
		}
	}

	allowed := make([]netip.Addr, 0, len(addrs))
	var refused []netip.Addr
	for _, ip := range addrs {
		ip = ip.Unmap()
		if !ip.IsValid() || (network == "tcp4" && !ip.Is4()) || (network == "tcp6" && !ip.Is6()) {
			continue
		}
		if !g.AllowPrivate && Blocked(ip) {
			refused = append(refused, ip)
			continue
		}
		allowed = append(allowed, ip)
	}
	if len(allowed) == 0 {
		if len(refused) > 0 {
			if literal {
				return nil, fmt.Errorf("%w: %s is an internal address", ErrBlocked, refused[0].WithZone(""))
			}
			return nil, fmt.Errorf("%w: %s resolves only to internal addresses (%s)", ErrBlocked, excerpt(host), refused[0].WithZone(""))
		}
		return nil, &net.OpError{Op: "dial", Net: network, Err: &net.AddrError{Err: "no suitable address", Addr: host}}
	}

	d := g.dialer()
	var errs []error
	for _, ip := range allowed {
		conn, err := d.DialContext(ctx, network, net.JoinHostPort(ip.String(), port))
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	if len(errs) == 1 {
		return nil, errs[0]
	}
	return nil, errors.Join(errs...)
}

// dialer returns the net.Dialer DialContext uses, with the connect-time check.
func (g *Guard) dialer() *net.Dialer {
	return &net.Dialer{Timeout: dialTimeout, Control: g.control}
}

// control runs just before the socket connects, with the literal address
// being dialled. It refuses blocked addresses even if a resolver lied or the
// checks in DialContext were bypassed.
func (g *Guard) control(network, address string, _ syscall.RawConn) error {
	if g.AllowPrivate {
		return nil
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot check address %q: %v", ErrBlocked, excerpt(address), err)
	}
	if Blocked(ap.Addr()) {
		return fmt.Errorf("%w: %s is an internal address", ErrBlocked, ap.Addr().WithZone("").Unmap())
	}
	return nil
}

// transport returns the http.Transport of [Guard.Client]: it dials with
// [Guard.DialContext] and never uses a proxy (the environment's HTTP_PROXY
// is ignored). TLS handshakes are limited to 5 s, waiting for response
// headers to 5 s and their size to DefaultMaxHeaderBytes; Client sets the
// last two from its Limits.
func (g *Guard) transport() *http.Transport {
	return &http.Transport{
		Proxy:                  nil,
		DialContext:            g.DialContext,
		TLSHandshakeTimeout:    5 * time.Second,
		ResponseHeaderTimeout:  5 * time.Second,
		MaxResponseHeaderBytes: DefaultMaxHeaderBytes,
		MaxIdleConns:           100,
		MaxIdleConnsPerHost:    64, // as many as deliveries in flight: reuse connections to busy receivers
		IdleConnTimeout:        90 * time.Second,
		ForceAttemptHTTP2:      true,
	}
}
