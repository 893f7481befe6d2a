package oauth

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// browserTarget resolves a Location header value the way a browser does
// (the WHATWG URL parser, as far as it differs from net/url here: tab and
// newline characters are dropped anywhere, leading and trailing C0
// controls and spaces are trimmed, and a backslash is a slash in an
// http(s) URL) against the page it came from, and returns the result.
func browserTarget(base *url.URL, loc string) (*url.URL, error) {
	loc = strings.Map(func(r rune) rune {
		switch r {
		case '\t', '\n', '\r':
			return -1
		case '\\':
			return '/'
		}
		return r
	}, loc)
	loc = strings.TrimFunc(loc, func(r rune) bool { return r <= ' ' })
	u, err := url.Parse(loc)
	if err != nil {
		return nil, err
	}
	return base.ResolveReference(u), nil
}

// FuzzSafeReturnTo: what safeReturnTo lets through is the input itself, a
// path on this site: it starts with one "/", never "//" or "/\" (which
// browsers read as another host), has no scheme, host or user info, and
// no backslash or control character that a browser would drop or turn
// into a slash. Sent as a redirect (http.Redirect, as the login does), it
// leads a browser to this site, whatever page the redirect answers.
func FuzzSafeReturnTo(f *testing.F) {
	for _, s := range []string{
		"", "/", "/login", "/oauth/authorize?client_id=x&redirect_uri=https%3A%2F%2Fc.example%2Fcb", "//evil.example",
		"/\\evil.example", "\\\\evil.example", "\\/evil.example", "https://evil.example/", "http:evil.example", "javascript:alert(1)",
		"/\t/evil.example", "/\n/evil.example", "/\r\n/evil.example", "/%2F%2Fevil.example", "/%5Cevil.example", "/./../evil",
		"/..//evil.example", "/.//evil.example", "/a/../../evil.example", " //evil.example", "\x00//evil.example", "/\x00/evil",
		"/@evil.example", "/foo@evil.example", "/:@evil.example", "///evil.example", "/ /evil.example", "/\u3000/evil.example",
		"/\x0b/evil.example", "/?//evil.example", "/#//evil.example", "/%0a/evil.example", "/" + strings.Repeat("a", 4096),
	} {
		f.Add(s, "/login")
		f.Add(s, "/a/b/c")
	}
	f.Fuzz(func(t *testing.T, in, page string) {
		ret := safeReturnTo(in)
		if ret == defaultReturnTo {
			return
		}
		if ret != in {
			t.Fatalf("safeReturnTo(%q) = %q: neither the input nor the default", in, ret)
		}
		if !strings.HasPrefix(ret, "/") || strings.HasPrefix(ret, "//") || strings.ContainsAny(ret, "\\\t\r\n\x00") {
			t.Fatalf("safeReturnTo let %q through", in)
		}
		u, err := url.Parse(ret)
		if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
			t.Fatalf("safeReturnTo let %q through: %+v %v", in, u, err)
		}
		self, err := url.Parse("https://ams.example/")
		if err != nil {
			t.Fatal(err)
		}
		if to, err := browserTarget(self, ret); err != nil || to.Host != "ams.example" || to.Scheme != "https" || to.User != nil {
			t.Fatalf("safeReturnTo(%q): a browser goes to %v (%v)", in, to, err)
		}
		// The login redirects with http.Redirect, which cleans the path
		// relative to the page asked for.
		if !strings.HasPrefix(page, "/") || strings.ContainsAny(page, "?#") {
			page = "/login"
		}
		r := httptest.NewRequest(http.MethodPost, "https://ams.example/", nil)
		r.URL.Path = page
		w := httptest.NewRecorder()
		http.Redirect(w, r, ret, http.StatusSeeOther)
		loc := w.Header().Get("Location")
		if to, err := browserTarget(self, loc); err != nil || to.Host != "ams.example" || to.Scheme != "https" || to.User != nil {
			t.Fatalf("safeReturnTo(%q): redirect to %q, which a browser follows to %v (%v)", in, loc, to, err)
		}
	})
}
