package openapi_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The two linters that API tooling runs on OpenAPI documents, at the
// versions pinned by testdata/lint/package-lock.json: Redocly CLI with
// its `recommended` rules (testdata/lint/redocly.yaml) and Spectral with
// `spectral:oas` (testdata/lint/.spectral.yaml). The document must give
// neither an error nor a warning. `make test` and .ci/run install them
// (npm ci --prefix openapi/testdata/lint); CI sets AMS_REQUIRE_NODE_TESTS=1
// so that a missing install fails instead of skipping.

// lintDir returns testdata/lint when node and the linters are installed,
// and skips (or, under AMS_REQUIRE_NODE_TESTS=1, fails) otherwise.
func lintDir(t *testing.T, bin string) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("testdata", "lint"))
	if err != nil {
		t.Fatal(err)
	}
	_, nodeErr := exec.LookPath("node")
	_, binErr := os.Stat(filepath.Join(dir, "node_modules", ".bin", bin))
	if nodeErr != nil || binErr != nil {
		msg := "node or " + bin + " is missing: run `npm ci --prefix openapi/testdata/lint`"
		if os.Getenv("AMS_REQUIRE_NODE_TESTS") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return dir
}

// lint runs bin from dir's node_modules with args; it returns stdout.
func lint(t *testing.T, dir, bin string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(filepath.Join(dir, "node_modules", ".bin", bin), args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Both tools would otherwise look for updates or send usage
	// statistics over the network.
	cmd.Env = append(os.Environ(), "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true", "DO_NOT_TRACK=1")
	err := cmd.Run()
	if _, exited := err.(*exec.ExitError); err != nil && !exited {
		t.Fatalf("%s: %v", bin, err)
	}
	if stdout.Len() == 0 {
		t.Fatalf("%s printed nothing (%v): %s", bin, err, stderr.Bytes())
	}
	return stdout.Bytes()
}

func TestRedoclyRecommended(t *testing.T) {
	dir := lintDir(t, "redocly")
	out := lint(t, dir, "redocly", "lint", "../../openapi.json", "--config", "redocly.yaml", "--format", "json", "--max-problems", "1000")
	var report struct {
		Totals struct {
			Errors   int `json:"errors"`
			Warnings int `json:"warnings"`
		} `json:"totals"`
		Problems []struct {
			RuleID   string `json:"ruleId"`
			Severity string `json:"severity"`
			Message  string `json:"message"`
			Location []struct {
				Pointer string `json:"pointer"`
			} `json:"location"`
		} `json:"problems"`
	}
	if err := json.Unmarshal(out, &report); err != nil {
		t.Fatalf("redocly's report is not JSON: %v\n%s", err, out)
	}
	for _, p := range report.Problems {
		where := ""
		if len(p.Location) > 0 {
			where = p.Location[0].Pointer
		}
		t.Errorf("redocly %s %s at %s: %s", p.Severity, p.RuleID, where, p.Message)
	}
	if report.Totals.Errors+report.Totals.Warnings != 0 || len(report.Problems) != 0 {
		t.Errorf("redocly: %d errors, %d warnings", report.Totals.Errors, report.Totals.Warnings)
	}
}

func TestSpectralOAS(t *testing.T) {
	dir := lintDir(t, "spectral")
	out := lint(t, dir, "spectral", "lint", "--ruleset", ".spectral.yaml", "--format", "json", "--fail-severity", "hint", "--quiet", "../../openapi.json")
	var results []struct {
		Code     string `json:"code"`
		Message  string `json:"message"`
		Severity int    `json:"severity"` // 0 error, 1 warning, 2 info, 3 hint
		Path     []any  `json:"path"`
	}
	if err := json.Unmarshal(out, &results); err != nil {
		t.Fatalf("spectral's report is not JSON: %v\n%s", err, out)
	}
	for _, r := range results {
		t.Errorf("spectral severity %d %s at %v: %s", r.Severity, r.Code, r.Path, r.Message)
	}
}
