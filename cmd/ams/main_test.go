package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/amsdev/ams"
	"github.com/spf13/cobra"
)

// TestDescribe: the CLI prints an API error as its message, naming the
// flag that sets the parameter at fault rather than the API's field.
func TestDescribe(t *testing.T) {
	cmd := &cobra.Command{Use: "create"}
	cmd.Flags().StringArray("redirect-uri", nil, "")
	cmd.Flags().String("email", "", "")
	for _, tt := range []struct {
		err  error
		want string
	}{
		{ams.ParamError("parameter_invalid", "redirect_uris", "'redirect_uris' must be https URLs."), "--redirect-uri must be https URLs."},
		{&ams.Error{Kind: ams.ECONFLICT, Code: "email_taken", Param: "email", Message: "A user with e-mail a@example.com already exists."},
			"A user with e-mail a@example.com already exists. (--email)"},
		{ams.ParamError("parameter_invalid", "timezone", "Unknown time zone."), "Unknown time zone."}, // no such flag
		{ams.Errorf(ams.ECONFLICT, "email_taken", "A user with e-mail b@example.com already exists."), "A user with e-mail b@example.com already exists."},
		{errors.New("open store: no such file"), "open store: no such file"},
	} {
		if got := describe(cmd, tt.err); got != tt.want {
			t.Errorf("describe(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

// TestVersionFlag: ams --version prints the version, as ams version does.
func TestVersionFlag(t *testing.T) {
	root := newRoot()
	var out stringWriter
	root.SetOut(&out)
	root.SetArgs([]string{"--version"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if want := "ams version " + ams.Version + "\n"; out.s != want {
		t.Fatalf("--version printed %q, want %q", out.s, want)
	}
}

type stringWriter struct{ s string }

func (w *stringWriter) Write(p []byte) (int, error) { w.s += string(p); return len(p), nil }

// TestMistypedDataDir: a command that reads the store refuses a data
// directory without one, and creates nothing there; users create makes it.
func TestMistypedDataDir(t *testing.T) {
	dir := t.TempDir() + "/ams-dat"
	run := func(args ...string) error {
		root := newRoot()
		root.SetArgs(append(args, "--data-dir", dir))
		root.SetOut(&stringWriter{})
		_, err := root.ExecuteC()
		return err
	}
	err := run("keys", "list", "--email", "ann@example.com")
	if err == nil || !strings.Contains(err.Error(), "no store in --data-dir") {
		t.Fatalf("keys list on a missing store: %v", err)
	}
	if _, serr := os.Stat(dir); !errors.Is(serr, os.ErrNotExist) {
		t.Fatalf("the refused command made %s: %v", dir, serr)
	}
	if err := run("users", "create", "--email", "ann@example.com"); err != nil {
		t.Fatal(err)
	}
	if err := run("keys", "list", "--email", "ann@example.com"); err != nil {
		t.Fatalf("keys list once the store exists: %v", err)
	}
}

// TestUsersList: ams users list prints every account, oldest first, with
// its plan and whether it waits.
func TestUsersList(t *testing.T) {
	dir := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		root := newRoot()
		var out stringWriter
		root.SetArgs(append(args, "--data-dir", dir))
		root.SetOut(&out)
		if _, err := root.ExecuteC(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return out.s
	}
	run("users", "create", "--email", "ann@example.com", "--plan", "professional")
	run("users", "create", "--email", "bob@example.com", "--waitlist")
	lines := strings.Split(strings.TrimSpace(run("users", "list")), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID") ||
		!strings.Contains(lines[1], "ann@example.com") || !strings.Contains(lines[1], "professional") || !strings.Contains(lines[1], "approved") ||
		!strings.Contains(lines[2], "bob@example.com") || !strings.Contains(lines[2], "waitlist") {
		t.Fatalf("users list:\n%s", strings.Join(lines, "\n"))
	}
}

// TestServeCORSOrigins: ams serve refuses at start an entry of
// --cors-allowed-origins (or AMS_CORS_ALLOWED_ORIGINS) that is not an
// origin, "*" included, naming the flag and the entry.
func TestServeCORSOrigins(t *testing.T) {
	serve := func(args ...string) error {
		root := newRoot()
		root.SetArgs(append([]string{"serve", "--addr", "127.0.0.1:0", "--data-dir", t.TempDir()}, args...))
		root.SetOut(&stringWriter{})
		root.SetErr(&stringWriter{})
		_, err := root.ExecuteC()
		return err
	}
	err := serve("--cors-allowed-origins", "https://app.example.com,*")
	if err == nil || !strings.Contains(err.Error(), "--cors-allowed-origins") || !strings.Contains(err.Error(), `"*"`) {
		t.Fatalf("* accepted or unclear: %v", err)
	}
	t.Setenv("AMS_CORS_ALLOWED_ORIGINS", "https://app.example.com/callback")
	err = serve()
	if err == nil || !strings.Contains(err.Error(), "--cors-allowed-origins") || !strings.Contains(err.Error(), "https://app.example.com/callback") {
		t.Fatalf("a URL with a path accepted from the environment, or unclear: %v", err)
	}
}

// TestServeOTLPEndpoint: ams serve refuses at start an --otlp-endpoint
// (or AMS_OTLP_ENDPOINT) that is neither an http(s) URL nor host:port,
// naming the flag, before it makes a store.
func TestServeOTLPEndpoint(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	serve := func() error {
		root := newRoot()
		root.SetArgs([]string{"serve", "--addr", "127.0.0.1:0", "--data-dir", dir})
		root.SetOut(&stringWriter{})
		root.SetErr(&stringWriter{})
		_, err := root.ExecuteC()
		return err
	}
	t.Setenv("AMS_OTLP_ENDPOINT", "ftp://collector:4318")
	err := serve()
	if err == nil || !strings.Contains(err.Error(), "--otlp-endpoint") {
		t.Fatalf("ftp:// endpoint accepted or unclear: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("a serve refused for its --otlp-endpoint left %s: %v", dir, err)
	}
}

// TestDataDirModes (issue 26, L5): a data directory ams creates is 0700;
// one that exists with a wider mode is kept as it is (the operator chose
// it), with a warning on stderr naming it and the command that fixes it.
func TestDataDirModes(t *testing.T) {
	var warned stringWriter
	warnings = &warned
	t.Cleanup(func() { warnings = os.Stderr })
	run := func(dir string) {
		t.Helper()
		root := newRoot()
		root.SetArgs([]string{"users", "create", "--email", "ann@example.com", "--data-dir", dir})
		root.SetOut(&stringWriter{})
		if _, err := root.ExecuteC(); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(t.TempDir(), "new")
	run(dir)
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 || warned.s != "" {
		t.Fatalf("new data directory: %v %v, warned %q", st.Mode().Perm(), err, warned.s)
	}
	wide := t.TempDir()
	if err := os.Chmod(wide, 0o755); err != nil {
		t.Fatal(err)
	}
	run(wide)
	if !strings.Contains(warned.s, wide) || !strings.Contains(warned.s, "chmod 700") {
		t.Fatalf("warning %q", warned.s)
	}
	if st, _ := os.Stat(filepath.Join(wide, "ams.db")); st.Mode().Perm() != 0o600 {
		t.Fatalf("ams.db mode %v", st.Mode().Perm())
	}
}
