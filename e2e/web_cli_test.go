package e2e

import (
	"bytes"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// runFail runs an ams subcommand that must fail and returns its stderr.
func runFail(t *testing.T, dataDir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(amsBinary(t), args...)
	cmd.Env = append(os.Environ(), "AMS_DATA_DIR="+dataDir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err == nil {
		t.Fatalf("ams %s succeeded; stdout: %s", strings.Join(args, " "), stdout.String())
	}
	if stdout.Len() != 0 {
		t.Errorf("ams %s printed on stdout: %q", strings.Join(args, " "), stdout.String())
	}
	return stderr.String()
}

var pageCSRF = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

// pageClient is a browser-like client of the account pages.
type pageClient struct {
	t    *testing.T
	base string
	c    *http.Client
}

func newPageClient(t *testing.T, base string) *pageClient {
	jar, _ := cookiejar.New(nil)
	return &pageClient{t: t, base: base, c: &http.Client{Jar: jar}}
}

func (p *pageClient) get(path string) (int, string, string) {
	p.t.Helper()
	resp, err := p.c.Get(p.base + path)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Request.URL.Path, string(b)
}

func (p *pageClient) post(path string, form url.Values) (int, string, string) {
	p.t.Helper()
	req, _ := http.NewRequest("POST", p.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", p.base)
	resp, err := p.c.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Request.URL.Path, string(b)
}

// signIn signs in through the login page of the running binary.
func (p *pageClient) signIn(email, pw string) {
	p.t.Helper()
	_, _, body := p.get("/login?return_to=%2Faccount")
	m := pageCSRF.FindStringSubmatch(body)
	if m == nil {
		p.t.Fatalf("no CSRF token on the login page:\n%s", body)
	}
	st, path, body := p.post("/login", url.Values{"csrf_token": {m[1]}, "email": {email}, "password": {pw}, "return_to": {"/account"}})
	if st != 200 || path != "/account" {
		p.t.Fatalf("sign-in as %s ended on %s with %d:\n%s", email, path, st, body)
	}
}

// The waitlist from the command line, beside a running server: an account
// made with --waitlist gets no key until `ams users approve`, which the
// running server's pages see at once; --admin opens the waitlist page.
func TestUsersApproveAndAdmin(t *testing.T) {
	dir := t.TempDir()
	run(t, dir, "waiting password\n", "users", "create", "--email", "wait@example.com", "--waitlist", "--password-stdin")
	run(t, dir, "admins password\n", "users", "create", "--email", "boss@example.com", "--admin", "--password-stdin")
	run(t, dir, "", "users", "create", "--email", "plain@example.com")
	s := startServe(t, dir)

	// On the waitlist: no key from the CLI, and the pages say so.
	if msg := runFail(t, dir, "keys", "create", "--email", "wait@example.com", "--name", "early", "--permissions", "read"); !strings.Contains(msg, "waitlist") ||
		!strings.Contains(msg, "ams users approve --email wait@example.com") {
		t.Fatalf("keys create on the waitlist said %q", msg)
	}
	waiting := newPageClient(t, s.base)
	waiting.signIn("wait@example.com", "waiting password")
	if _, _, body := waiting.get("/account/keys"); !strings.Contains(body, "Your account is on the early-access waitlist") ||
		strings.Contains(body, `action="/account/keys"`) {
		t.Fatal("the keys page of a waiting account does not explain the waitlist, or offers the form")
	}
	// The waitlist page is the admin's only.
	if st, _, _ := waiting.get("/account/admin/waitlist"); st != http.StatusForbidden {
		t.Fatalf("waitlist page for a non-admin: %d", st)
	}
	boss := newPageClient(t, s.base)
	boss.signIn("boss@example.com", "admins password")
	st, _, body := boss.get("/account/admin/waitlist")
	if st != 200 || !strings.Contains(body, "wait@example.com") || strings.Contains(body, "plain@example.com") {
		t.Fatalf("waitlist page for the admin: %d\n%s", st, body)
	}

	// Approved from the CLI while the server runs.
	out := run(t, dir, "", "users", "approve", "--email", "wait@example.com")
	if !regexp.MustCompile(`^approved usr_\w+ \(wait@example\.com\) at \S+Z\n$`).MatchString(out) {
		t.Fatalf("users approve printed %q", out)
	}
	if out := run(t, dir, "", "users", "approve", "--email", "wait@example.com"); !strings.Contains(out, "already approved") {
		t.Fatalf("second approve printed %q", out)
	}
	if _, _, body := waiting.get("/account/keys"); !strings.Contains(body, `action="/account/keys"`) {
		t.Fatal("the keys page offers no form after approval")
	}
	if _, _, body := boss.get("/account/admin/waitlist"); strings.Contains(body, "wait@example.com") {
		t.Fatal("the approved account is still on the waitlist page")
	}
	secret := strings.TrimSpace(run(t, dir, "", "keys", "create", "--email", "wait@example.com", "--name", "now", "--permissions", "read"))
	if st, _ := request(t, "GET", s.base+"/v1/assistants", secret, ""); st != 200 {
		t.Fatalf("the approved account's key: %d", st)
	}
	if msg := runFail(t, dir, "users", "approve", "--email", "nobody@example.com"); msg == "" {
		t.Fatal("approving an unknown account said nothing")
	}
}
