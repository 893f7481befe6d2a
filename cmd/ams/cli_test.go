package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/sqlite"
	"github.com/amsdev/ams/ssrf"
	"github.com/amsdev/ams/webhook"
)

// run runs the command line args and returns its stdout and error.
func run(args ...string) (string, error) {
	root := newRoot()
	var out bytes.Buffer
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(io.Discard)
	cmd, err := root.ExecuteC()
	if err != nil {
		return out.String(), errors.New(describe(cmd, err))
	}
	return out.String(), nil
}

// privateDir is a temporary directory of mode 0700, as ams wants its
// data directory (else it warns).
func privateDir(t *testing.T) string {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestBadFlagsNameTheFlag (issue 32): a bad value, on the command line or
// in its variable, is an error that names the flag (and the variable)
// and what it wants, not a parser's text; and the refused serve makes no
// store.
func TestBadFlagsNameTheFlag(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	serve := []string{"serve", "--addr", "127.0.0.1:0", "--data-dir", dir}
	for _, tt := range []struct {
		env, val string
		args     []string
		want     string
	}{
		{args: []string{"--log-level", "loud"}, want: `--log-level must be debug, info, warn or error, not "loud"`},
		{env: "AMS_LOG_LEVEL", val: "loud", want: `--log-level must be debug, info, warn or error, not "loud"`},
		{env: "AMS_DEV", val: "yes", want: `AMS_DEV (--dev) must be true or false (or 1 or 0), not "yes"`},
		{args: []string{"--dev=yes"}, want: `--dev must be true or false (or 1 or 0), not "yes"`},
		{args: []string{"--base-url", "notaurl"}, want: `--base-url must be an http:// or https:// URL such as http://127.0.0.1:8080, not "notaurl"`},
		{env: "AMS_BASE_URL", val: "ftp://x", want: `--base-url must be an http:// or https:// URL`},
		{args: []string{"--webhook-lease", "soon"}, want: `--webhook-lease must be a duration such as 30s, 5m or 2h, not "soon"`},
		{env: "AMS_WEBHOOK_CONCURRENCY", val: "many", want: `AMS_WEBHOOK_CONCURRENCY (--webhook-concurrency) must be a whole number, not "many"`},
		{args: []string{"--max-concurrent-turns-per-account", "1.5"}, want: `--max-concurrent-turns-per-account must be a whole number, not "1.5"`},
		{env: "AMS_MAIL_FROM", val: "bad<", want: `--mail-from must be an e-mail address such as`},
	} {
		if tt.env != "" {
			t.Setenv(tt.env, tt.val)
		}
		_, err := run(append(serve, tt.args...)...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v %s=%s: %v, want %q", tt.args, tt.env, tt.val, err, tt.want)
		}
		if tt.env != "" {
			os.Unsetenv(tt.env)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%v %s=%s: the refused serve made %s", tt.args, tt.env, tt.val, dir)
		}
	}
	// Other commands word their flags so too.
	if _, err := run("keys", "create", "--email", "a@example.com", "--name", "n", "--permissions", "read", "--expires-in", "later", "--data-dir", dir); err == nil ||
		!strings.Contains(err.Error(), `--expires-in must be a duration such as 30s, 5m or 2h, not "later"`) {
		t.Errorf("keys create --expires-in later: %v", err)
	}
}

// TestFailedServeLeavesNoStore (issue 32): a serve that fails to start
// after it opened a new SQLite store (here: Redis does not answer)
// removes what it made: the data directory it created, or the files it
// added to an existing directory; an existing store is kept.
func TestFailedServeLeavesNoStore(t *testing.T) {
	fail := func(dir string) {
		t.Helper()
		_, err := run("serve", "--addr", "127.0.0.1:0", "--data-dir", dir, "--redis-url", "redis://127.0.0.1:1/0")
		if err == nil || !strings.Contains(err.Error(), "--redis-url") {
			t.Fatalf("serve with a dead Redis: %v", err)
		}
	}
	fresh := filepath.Join(t.TempDir(), "fresh")
	fail(fresh)
	if _, err := os.Stat(fresh); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a failed serve left %s: %v", fresh, err)
	}
	empty := privateDir(t)
	os.WriteFile(filepath.Join(empty, "notes.txt"), []byte("mine"), 0o600)
	fail(empty)
	if es, _ := os.ReadDir(empty); len(es) != 1 || es[0].Name() != "notes.txt" {
		t.Fatalf("a failed serve left files in an existing directory: %v", es)
	}
	kept := privateDir(t)
	if _, err := run("users", "create", "--email", "ann@example.com", "--data-dir", kept); err != nil {
		t.Fatal(err)
	}
	fail(kept)
	if out, err := run("users", "list", "--data-dir", kept); err != nil || !strings.Contains(out, "ann@example.com") {
		t.Fatalf("an existing store after a failed serve: %v\n%s", err, out)
	}
}

// TestListAndDeleteCommands (issue 32): assistants list, oauth-clients
// list and delete, webhooks list, recover and disable.
func TestListAndDeleteCommands(t *testing.T) {
	dir := privateDir(t)
	must := func(args ...string) string {
		t.Helper()
		out, err := run(append(args, "--data-dir", dir)...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return out
	}
	must("users", "create", "--email", "ann@example.com")
	a1 := strings.TrimSpace(must("assistants", "create", "--email", "ann@example.com", "--name", "First"))
	a2 := strings.TrimSpace(must("assistants", "create", "--email", "ann@example.com", "--name", "Second"))
	if out := must("assistants", "list", "--email", "ann@example.com"); !regexp.MustCompile(`(?s)^ID.*` + a1 + `\s+First\s+builtin.*` + a2 + `\s+Second`).MatchString(out) {
		t.Fatalf("assistants list:\n%s", out)
	}
	if _, err := run("assistants", "list", "--email", "nobody@example.com", "--data-dir", dir); err == nil || !strings.Contains(err.Error(), "--email: no account") {
		t.Fatalf("assistants list of no account: %v", err)
	}

	out := must("oauth-clients", "create", "--email", "ann@example.com", "--name", "App", "--redirect-uri", "https://app.example.com/cb")
	cid := strings.Fields(out)[1]
	if out := must("oauth-clients", "list", "--email", "ann@example.com"); !regexp.MustCompile(cid + `\s+App\s+confidential\s+https://app.example.com/cb`).MatchString(out) {
		t.Fatalf("oauth-clients list:\n%s", out)
	}
	must("oauth-clients", "delete", cid, "--email", "ann@example.com")
	if out := must("oauth-clients", "list", "--email", "ann@example.com"); strings.Contains(out, cid) {
		t.Fatalf("deleted client listed:\n%s", out)
	}
	if _, err := run("oauth-clients", "delete", cid, "--email", "ann@example.com", "--data-dir", dir); err == nil || !strings.Contains(err.Error(), cid) {
		t.Fatalf("deleting it again: %v", err)
	}

	// A webhook (made as the API makes one), an event it missed.
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(dir, "ams.db"))
	if err != nil {
		t.Fatal(err)
	}
	u, _ := db.FindUserByEmail(ctx, "ann@example.com")
	url, events, secret := "http://127.0.0.1:9/ams", []string{ams.EventTaskCreated}, "whsec_c2VjcmV0LXNpZ25pbmcta2V5LTEyMzQ1Ng=="
	w, err := (&webhook.Service{Store: ams.Narrow[webhook.Tx](db), Guard: &ssrf.Guard{AllowPrivate: true}}).Create(ctx, u.ID, webhook.Input{URL: &url, Events: &events, Secret: &secret})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if out := must("webhooks", "list", "--email", "ann@example.com"); !regexp.MustCompile(w.ID + `\s+` + url + `\s+task.created\s+\w+\s+true`).MatchString(out) {
		t.Fatalf("webhooks list:\n%s", out)
	}
	if out := must("webhooks", "recover", w.ID, "--email", "ann@example.com", "--since", "1h"); !strings.HasPrefix(out, "queued 0 events for "+w.ID) {
		t.Fatalf("webhooks recover: %s", out)
	}
	if _, err := run("webhooks", "recover", w.ID, "--email", "ann@example.com", "--since", "1h", "--until", "2h", "--data-dir", dir); err == nil || !strings.Contains(err.Error(), "--until") {
		t.Fatalf("until before since: %v", err)
	}
	must("webhooks", "disable", w.ID, "--email", "ann@example.com")
	if out := must("webhooks", "list", "--email", "ann@example.com"); !regexp.MustCompile(w.ID + `.*\sfalse\s`).MatchString(out) {
		t.Fatalf("disabled webhook:\n%s", out)
	}
	if _, err := run("webhooks", "recover", w.ID, "--email", "ann@example.com", "--since", "1h", "--data-dir", dir); err == nil {
		t.Fatal("recovered a disabled webhook")
	}
}

// TestDevReusesItsKey (issue 32): a second --dev start on the same store
// prints the same key and password and leaves the first start's key
// working; a random dev key of an older version is revoked.
func TestDevReusesItsKey(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ams.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tokenKey := []byte("0123456789abcdef0123456789abcdef")
	start := func() (key, pw string) {
		t.Helper()
		var out bytes.Buffer
		if err := devBootstrap(ctx, db, tokenKey, "http://127.0.0.1:8080", &out); err != nil {
			t.Fatal(err)
		}
		key = regexp.MustCompile(`API key\s+(ams_sk_\w+)`).FindStringSubmatch(out.String())[1]
		pw = regexp.MustCompile(`password\s+(\S+)`).FindStringSubmatch(out.String())[1]
		return key, pw
	}
	key1, pw1 := start()
	u, _ := db.FindUserByEmail(ctx, devEmail)
	_, old := ams.NewAPIKey(u.ID, devKeyName, ams.Permissions{ams.PermRead}, ams.Clock(nil).Now(), nil)
	if err := db.CreateKey(ctx, old); err != nil {
		t.Fatal(err)
	}
	key2, pw2 := start()
	if key1 != key2 || pw1 != pw2 || len(key1) != len("ams_sk_")+40 {
		t.Fatalf("second start printed %s %s, first %s %s", key2, pw2, key1, pw1)
	}
	keys, _ := db.ListKeys(ctx, u.ID)
	active := 0
	for _, k := range keys {
		switch {
		case k.ID == old.ID && k.RevokedAt == nil:
			t.Fatal("the older random dev key was kept")
		case k.RevokedAt == nil:
			active++
			if k.Hash != ams.HashSecret(key1) {
				t.Fatalf("active key %s is not the printed one", k.ID)
			}
		}
	}
	if active != 1 {
		t.Fatalf("%d active dev keys", active)
	}
	if _, _, err := db.AuthenticateKey(ctx, ams.HashSecret(key1)); err != nil {
		t.Fatalf("the printed key: %v", err)
	}
}
