// Package browser drives the pages of a running `ams serve --dev` in real
// headless Chromium (github.com/chromedp/chromedp), as a user would: fields
// are found by their label, buttons by their text. Each page a test visits
// is saved as a screenshot in docs/screenshots/, which the README shows.
//
// Without a Chromium binary the tests skip, unless AMS_REQUIRE_BROWSER_TESTS=1
// (set by .ci/run), which makes them fail. AMS_CHROMIUM names the binary;
// otherwise chromium, chromium-browser or google-chrome on PATH is used.
package browser

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

const (
	viewportW, viewportH = 1280, 800
	// stepTimeout bounds each wait of a test (an element to appear, a page
	// to load); generous for a loaded 2-core machine, but a broken page
	// fails in seconds, not at the test binary's deadline.
	stepTimeout = 20 * time.Second
)

// screenshotDir is where shot saves its pictures: AMS_SCREENSHOT_DIR if
// set (`make screenshots` sets it to docs/screenshots/), else a
// temporary folder removed when the tests end (see TestMain).
var screenshotDir = os.Getenv("AMS_SCREENSHOT_DIR")

// env is what the tests share: one server and one browser. Each test gets
// its own browser context (cookies and storage of its own) and tab.
type env struct {
	dir     string // the server's --data-dir
	bin     string // the ams binary
	base    string // http://127.0.0.1:port
	stdout  string // what ams serve --dev printed before it was ready
	devPass string // the dev user's password
	devKey  string // the dev user's API key
	cmd     *exec.Cmd
	logs    *syncBuffer
	// appSite serves pages on another origin than the server's, given to
	// ams serve in --cors-allowed-origins (the CORS test's allowed page).
	appSite *httptest.Server

	browser context.Context // a chromedp context whose browser runs
	timing  string          // how long the start took
}

var (
	setupOnce sync.Once
	shared    *env
	setupErr  error
	skipMsg   string
	cleanups  []func()
)

func TestMain(m *testing.M) {
	if screenshotDir == "" {
		dir, err := os.MkdirTemp("", "ams-screenshots-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		screenshotDir = dir
		cleanups = append(cleanups, func() { os.RemoveAll(dir) })
	}
	code := m.Run()
	for i := len(cleanups) - 1; i >= 0; i-- {
		cleanups[i]()
	}
	os.Exit(code)
}

// chromiumPath finds the browser binary, or returns "".
func chromiumPath() string {
	if p := os.Getenv("AMS_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// setup returns the shared server and browser, starting them on first use;
// it skips the test when no browser is installed (unless required).
func setup(t *testing.T) *env {
	t.Helper()
	setupOnce.Do(func() {
		chrome := chromiumPath()
		if chrome == "" {
			if os.Getenv("AMS_REQUIRE_BROWSER_TESTS") == "1" {
				setupErr = errors.New("no Chromium found (install Debian's chromium, or set AMS_CHROMIUM) and AMS_REQUIRE_BROWSER_TESTS=1")
			} else {
				skipMsg = "browser tests skipped: no Chromium found (apt-get install chromium, or set AMS_CHROMIUM; AMS_REQUIRE_BROWSER_TESTS=1 makes this a failure)"
			}
			return
		}
		t0 := time.Now()
		shared, setupErr = start(chrome)
		if setupErr == nil {
			t.Logf("started ams serve at %s and %s in %s (%s)", shared.base, chrome, time.Since(t0).Round(time.Millisecond), shared.timing)
		}
	})
	if skipMsg != "" {
		t.Skip(skipMsg)
	}
	if setupErr != nil {
		t.Fatal(setupErr)
	}
	return shared
}

func start(chrome string) (*env, error) {
	tmp, err := os.MkdirTemp("", "ams-browser-e2e")
	if err != nil {
		return nil, err
	}
	cleanups = append(cleanups, func() { os.RemoveAll(tmp) })
	t0 := time.Now()
	e := &env{dir: filepath.Join(tmp, "data"), bin: filepath.Join(tmp, "ams")}
	if out, err := exec.Command("go", "build", "-o", e.bin, "../../cmd/ams").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build: %v\n%s", err, out)
	}
	built := time.Now()
	e.appSite = site()
	cleanups = append(cleanups, e.appSite.Close)
	if err := e.serve(); err != nil {
		return nil, err
	}
	served := time.Now()
	defer func() {
		e.timing = fmt.Sprintf("build %s, serve %s, browser %s", built.Sub(t0).Round(time.Millisecond), served.Sub(built).Round(time.Millisecond), time.Since(served).Round(time.Millisecond))
	}()

	profile := filepath.Join(tmp, "chromium-profile") // new and empty
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome),
		chromedp.UserDataDir(profile),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		// This machine's network is closed: without these Chromium's own
		// background connections are refused and slow it down.
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.WindowSize(viewportW, viewportH),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	browserCtx, cancelBrowser := chromedp.NewContext(allocCtx)
	cleanups = append(cleanups, cancelAlloc, cancelBrowser)
	// The first Run starts the browser; no timeout on it (a timeout would
	// end the browser), but a watchdog in case it never comes up.
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(browserCtx) }()
	select {
	case err := <-started:
		if err != nil {
			return nil, fmt.Errorf("start %s: %w", chrome, err)
		}
	case <-time.After(60 * time.Second):
		cancelBrowser()
		return nil, fmt.Errorf("start %s: not ready after 60s", chrome)
	}
	e.browser = browserCtx
	return e, nil
}

var baseRE = regexp.MustCompile(`ams is running in dev mode at (http://\S+)`)

// serve starts `ams serve --dev` on a free port with a fast webhook retry
// schedule, and waits until it has printed its dev credentials.
func (e *env) serve() error {
	cmd := exec.Command(e.bin, "serve", "--dev", "--addr", "127.0.0.1:0",
		"--webhook-retry-schedule", "0s,1s", "--shutdown-timeout", "5s")
	cmd.Env = append(os.Environ(), "AMS_DATA_DIR="+e.dir, "AMS_CORS_ALLOWED_ORIGINS="+e.appSite.URL)
	e.logs = &syncBuffer{}
	cmd.Stderr = e.logs
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	e.cmd = cmd
	cleanups = append(cleanups, func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		var b strings.Builder
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), `"message": "Hello! What can you do?"`) {
				e.stdout = b.String()
				ready <- nil
				io.Copy(io.Discard, out)
				return
			}
		}
		ready <- fmt.Errorf("ams serve ended before it was ready:\n%s\n%s", b.String(), e.logs.String())
	}()
	select {
	case err := <-ready:
		if err != nil {
			return err
		}
	case <-time.After(60 * time.Second):
		return fmt.Errorf("ams serve not ready after 60s; stderr:\n%s", e.logs.String())
	}
	for _, f := range []struct {
		dst *string
		re  string
	}{{&e.base, baseRE.String()}, {&e.devPass, `password\s+(\w+)`}, {&e.devKey, `API key\s+(ams_sk_\w+)`}} {
		m := regexp.MustCompile(f.re).FindStringSubmatch(e.stdout)
		if m == nil {
			return fmt.Errorf("%s not found in dev output:\n%s", f.re, e.stdout)
		}
		*f.dst = m[1]
	}
	return nil
}

// ams runs an ams subcommand on the server's store and returns its stdout.
func (e *env) ams(t *testing.T, args ...string) string {
	t.Helper()
	return e.amsStdin(t, "", args...)
}

// amsStdin is ams with the standard input stdin.
func (e *env) amsStdin(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(e.bin, args...)
	cmd.Env = append(os.Environ(), "AMS_DATA_DIR="+e.dir)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("ams %s: %v\nstderr: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// api makes a curl-like call to the API with a bearer credential and
// returns the status and body.
func (e *env) api(t *testing.T, method, path, bearer, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, e.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+bearer)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// page is one test's browser tab, in a browser context of its own.
type page struct {
	t   *testing.T
	e   *env
	ctx context.Context

	mu      sync.Mutex
	dialogs []string // messages of the confirm/alert dialogs accepted
	marks   int
}

// newPage opens a tab in a new browser context for the test. JavaScript
// dialogs (confirm) are accepted, and their messages kept.
func newPage(t *testing.T) *page {
	t.Helper()
	e := setup(t)
	ctx, cancel := chromedp.NewContext(e.browser, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	p := &page{t: t, e: e, ctx: ctx}
	// The first Run opens the tab; it must not carry a timeout.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(viewportW, viewportH)); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	dialogs := chromedp.Events(ctx, cdppage.JavascriptDialogOpening)
	go func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			p.mu.Lock()
			p.dialogs = append(p.dialogs, ev.Message)
			p.mu.Unlock()
			chromedp.Call(ctx, cdppage.HandleJavaScriptDialog, cdppage.HandleJavaScriptDialogParams{Accept: true})
		}
	}()
	start := e.logs.Len()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("page at failure: %s\n%s", p.location(), p.bodyText())
			t.Logf("server log during the test:\n%s", e.logs.From(start))
		}
	})
	return p
}

// do runs actions with the step timeout.
func (p *page) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		p.t.Fatalf("%s: %v", what, err)
	}
}

// eval evaluates a JavaScript expression with a short timeout.
func eval[T any](p *page, js string) (T, error) {
	ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](js))
}

// open navigates to a path of the server (or a full URL) and waits for the
// page to load.
func (p *page) open(pathOrURL string) {
	p.t.Helper()
	u := pathOrURL
	if strings.HasPrefix(u, "/") {
		u = p.e.base + u
	}
	p.do("open "+u, chromedp.Navigate(u))
}

// location returns the tab's current URL.
func (p *page) location() string {
	s, _ := eval[string](p, `location.href`)
	return s
}

// bodyText returns the visible text of the page.
func (p *page) bodyText() string {
	s, _ := eval[string](p, `document.body ? document.body.innerText : ""`)
	return s
}

// waitFor polls a JavaScript expression until it is truthy (as a string
// that is not empty), across page loads, and returns its value.
func (p *page) waitFor(what, js string) string {
	p.t.Helper()
	deadline := time.Now().Add(stepTimeout)
	var lastErr error
	for {
		s, err := eval[string](p, `(function(){ try { const v = (`+js+`); return v ? String(v) : ""; } catch (e) { return ""; } })()`)
		if err == nil && s != "" {
			return s
		}
		lastErr = err
		if time.Now().After(deadline) {
			p.t.Fatalf("waiting for %s: not there after %s (last error %v); page %s:\n%s", what, stepTimeout, lastErr, p.location(), p.bodyText())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitText waits until the page shows the text (whitespace-normalized).
func (p *page) waitText(text string) {
	p.t.Helper()
	p.waitFor(fmt.Sprintf("the text %q", text),
		`document.readyState !== "loading" && document.body && document.body.innerText.replace(/\s+/g, " ").includes(`+jsString(norm(text))+`)`)
}

// waitPath waits until the tab is at the path (of any host).
func (p *page) waitPath(path string) {
	p.t.Helper()
	p.waitFor("the path "+path, `document.readyState === "complete" && location.pathname === `+jsString(path))
}

// find marks the element that the finder expression returns (it may use the
// functions of findJS) and returns a CSS selector for it; the expression is
// polled until it finds one.
func (p *page) find(what, finder string) chromedp.CSS {
	p.t.Helper()
	p.mu.Lock()
	p.marks++
	mark := fmt.Sprintf("m%d", p.marks)
	p.mu.Unlock()
	p.waitFor(what, `(function(){ `+findJS+` const el = (`+finder+`); if (!el) return ""; el.setAttribute("data-e2e", "`+mark+`"); return "ok"; })()`)
	return chromedp.CSS(`[data-e2e="` + mark + `"]`)
}

// findJS holds the functions that find elements as a user would; finder
// expressions of find may use them.
const findJS = `
const __norm = s => (s || "").replace(/\s+/g, " ").trim();
const __visible = el => !!(el && (el.offsetWidth || el.offsetHeight || el.getClientRects().length));
// The smallest ancestor-or-self of el whose text contains scope.
const __scopeSize = (el, scope) => {
  if (!scope) return 0;
  for (let a = el; a; a = a.parentElement) {
    if (__norm(a.innerText || a.textContent).includes(scope)) return __norm(a.innerText || a.textContent).length;
  }
  return Infinity;
};
const __best = (els, scope) => {
  let best = null, size = Infinity;
  for (const el of els) {
    const s = __scopeSize(el, scope);
    if (s < size) { best = el; size = s; }
  }
  return best;
};
// The control of the label whose text is want: exact text first, then a
// label that starts with it (a label with a hint after the name), then
// aria-label.
const __field = (want, scope) => {
  const labels = [...document.querySelectorAll("label")].filter(l => l.control);
  for (const match of [t => t === want, t => t.startsWith(want + " ") || t.startsWith(want + ":") || t.startsWith(want + "(")]) {
    const els = labels.filter(l => match(__norm(l.innerText || l.textContent))).map(l => l.control);
    if (els.length) return __best(els, scope);
  }
  const els = [...document.querySelectorAll("[aria-label]")].filter(el => __norm(el.getAttribute("aria-label")) === want);
  return els.length ? __best(els, scope) : null;
};
// The visible button, submit input or link whose text (or aria-label) is want.
const __button = (want, scope) => {
  const els = [...document.querySelectorAll("button, input[type=submit], input[type=button], a, [role=button], summary")]
    .filter(__visible)
    .filter(el => __norm(el.innerText || el.value) === want || __norm(el.getAttribute("aria-label")) === want);
  return els.length ? __best(els, scope) : null;
};
`

// field returns a selector for the form control labelled label.
func (p *page) field(label string) chromedp.CSS {
	p.t.Helper()
	return p.find(fmt.Sprintf("a field labelled %q", label), `__field(`+jsString(norm(label))+`, "")`)
}

// fill types value into the field labelled label (replacing its value).
func (p *page) fill(label, value string) {
	p.t.Helper()
	sel := p.field(label)
	// Empty it first (chromedp.Clear fails on an empty textarea), then type.
	if _, err := eval[bool](p, `(function(el){ el.value = ""; el.dispatchEvent(new Event("input", {bubbles: true})); return true; })(document.querySelector('`+string(sel)+`'))`); err != nil {
		p.t.Fatalf("clear %s: %v", label, err)
	}
	p.do("fill "+label, chromedp.SendKeys(sel, value))
}

// choose selects the option with the visible text in the select labelled label.
func (p *page) choose(label, option string) {
	p.t.Helper()
	sel := p.field(label)
	js := `(function(){ const s = document.querySelector('` + string(sel) + `'); const o = [...s.options].find(o => o.text.replace(/\s+/g, " ").trim() === ` + jsString(norm(option)) + `); if (!o) return ""; s.value = o.value; s.dispatchEvent(new Event("change", {bubbles: true})); return "ok"; })()`
	p.waitFor(fmt.Sprintf("option %q of %q", option, label), js)
}

// check sets the checkbox (or radio button) labelled label.
func (p *page) check(label string, on bool) {
	p.t.Helper()
	sel := p.field(label)
	checked, err := eval[bool](p, `document.querySelector('`+string(sel)+`').checked`)
	if err != nil {
		p.t.Fatalf("checkbox %q: %v", label, err)
	}
	if checked != on {
		p.do("click "+label, chromedp.Click(sel))
	}
}

// button returns a selector for the button or link with the text, the one
// nearest to the text scope when there are several ("" for any).
func (p *page) button(text, scope string) chromedp.CSS {
	p.t.Helper()
	what := fmt.Sprintf("a button or link %q", text)
	if scope != "" {
		what += fmt.Sprintf(" near %q", scope)
	}
	return p.find(what, `__button(`+jsString(norm(text))+`, `+jsString(norm(scope))+`)`)
}

// click clicks the button or link with the text (see button).
func (p *page) click(text string) { p.t.Helper(); p.clickNear(text, "") }

// clickNear clicks the button or link with the text nearest to scope.
func (p *page) clickNear(text, scope string) {
	p.t.Helper()
	p.do("click "+text, chromedp.Click(p.button(text, scope)))
}

// submit clicks the button or link with the text and waits for the page
// that it loads.
func (p *page) submit(text string) { p.t.Helper(); p.submitNear(text, "") }

// submitNear is submit for the button nearest to scope.
func (p *page) submitNear(text, scope string) {
	p.t.Helper()
	sel := p.button(text, scope)
	p.do("click "+text+" and wait for the next page",
		chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := chromedp.WaitEvent(cdppage.LoadEventFired, nil, chromedp.Click(sel))(ctx, t)
			return err
		}))
}

// acceptedDialogs returns the messages of the dialogs accepted so far.
func (p *page) acceptedDialogs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.dialogs...)
}

// shot saves a full-page screenshot as <screenshotDir>/<name>.png.
func (p *page) shot(name string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
	defer cancel()
	// Wait for web fonts and layout so the picture is the finished page.
	chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](`document.fonts ? document.fonts.ready.then(() => true) : true`, chromedp.EvalAwaitPromise))
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		p.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.MkdirAll(screenshotDir, 0o755); err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(screenshotDir, name+".png"), buf, 0o644); err != nil {
		p.t.Fatal(err)
	}
	p.t.Logf("screenshot %s (%d KB)", filepath.Join(screenshotDir, name+".png"), len(buf)/1024)
}

// norm collapses whitespace as the finders do.
func norm(s string) string { return strings.Join(strings.Fields(s), " ") }

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x2028 || r == 0x2029:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// syncBuffer is a bytes.Buffer safe for the server's writes and the
// tests' reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Len()
}

func (s *syncBuffer) String() string { return s.From(0) }

// From returns what was written from offset on.
func (s *syncBuffer) From(offset int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if offset > s.b.Len() {
		offset = 0
	}
	return s.b.String()[offset:]
}

// secret waits until the page shows a string that matches re, in its text
// or in the value of a field (secrets shown once are in read-only fields),
// and returns the first match.
func (p *page) secret(what string, re *regexp.Regexp) string {
	p.t.Helper()
	deadline := time.Now().Add(stepTimeout)
	for {
		all, _ := eval[string](p, `document.body ? [document.body.innerText, ...[...document.querySelectorAll("input, textarea")].map(e => e.value)].join("\n") : ""`)
		if s := re.FindString(all); s != "" {
			return s
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("waiting for %s (%s): not on the page %s after %s:\n%s", what, re, p.location(), stepTimeout, all)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// fieldValues returns the values of the page's fields, one a line.
func (p *page) fieldValues() string {
	s, _ := eval[string](p, `[...document.querySelectorAll("input, textarea, select")].map(e => e.value).join("\n")`)
	return s
}

// signIn signs in on /login and waits for the page it returns to (next,
// a path such as /account).
func (p *page) signIn(email, password, next string) {
	p.t.Helper()
	p.open("/login?return_to=" + url.QueryEscape(next))
	p.waitText("Sign in to ams")
	p.fill("E-mail address", email)
	p.fill("Password", password)
	p.submit("Sign in")
	p.waitPath(next)
}

// reloadUntil loads the current page again until the JavaScript expression
// is truthy (for what the server does in the background, such as webhook
// deliveries).
func (p *page) reloadUntil(what, js string) {
	p.t.Helper()
	here := p.location()
	// Twice the step timeout: background work has its own pace (usage
	// counts are stored every 10 s).
	deadline := time.Now().Add(2 * stepTimeout)
	for {
		p.open(here)
		v, err := eval[bool](p, `!!(function(){ try { return (`+js+`); } catch (e) { return false; } })()`)
		if err == nil && v {
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("waiting for %s at %s: not there after %s:\n%s", what, here, 2*stepTimeout, p.bodyText())
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// needPage skips the test when the server has no page at path (a signed-out
// GET of an account page is sent to sign in; one not served is 404), so a
// test can be committed before the page it covers.
func (e *env) needPage(t *testing.T, path string) {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(e.base + path)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		t.Skipf("this ams serve has no page at %s yet", path)
	}
}
