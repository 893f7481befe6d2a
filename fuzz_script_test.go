package ams_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestFuzzScriptListsEveryTarget: scripts/fuzz.sh runs every fuzz target
// of the module, each with its own package.
func TestFuzzScriptListsEveryTarget(t *testing.T) {
	script, err := os.ReadFile("scripts/fuzz.sh")
	if err != nil {
		t.Fatal(err)
	}
	fuzzFunc := regexp.MustCompile(`(?m)^func (Fuzz\w+)\(\w+ \*testing\.F\)`)
	found := 0
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata" || d.Name() == "sdk") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range fuzzFunc.FindAllSubmatch(b, -1) {
			found++
			entry := `"./` + filepath.ToSlash(filepath.Dir(path)) + " " + string(m[1]) + `"`
			if !strings.Contains(string(script), entry) {
				t.Errorf("scripts/fuzz.sh does not run %s of %s: add %s", m[1], path, entry)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found < 11 {
		t.Fatalf("found only %d fuzz targets", found)
	}
}
