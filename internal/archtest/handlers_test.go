package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// consumers are the packages, relative to the module root, that take
// stores sized to what they call: each declares the interface of the
// store methods it uses (and of its transaction's, ams.Narrow), so a
// method it does not list, such as a write in a handler, does not
// compile. Only app/, cmd/, storetest/ and the engines see the whole
// ams.Store.
//
// world still names ams.Tx in its transactions.
var consumers = []struct {
	dir, why string
}{
	{"messaging", "the turn runner and the conversations: messaging.Store and messaging.Tx"},
	{"mail", "the e-mail worker: mail.Queue"},
	{"webhook", "the webhook service and worker: webhook.Store, webhook.Queue, webhook.Users"},
	{"http", "the API handlers: http.Reader (reads); the middleware's http.RecordStore; writes through the services"},
	{"pages", "the account pages: pages.Reader (reads); writes through the services"},
}

// forbidden are the names of package ams that a consumer never names.
var forbidden = []string{"Store", "Tx"}

// amsNames returns the positions in f where it names a forbidden name
// of package ams (under whatever name f imports it).
func amsNames(fset *token.FileSet, f *ast.File) []string {
	local := ""
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == "github.com/amsdev/ams" {
			local = "ams"
			if imp.Name != nil {
				local = imp.Name.Name
			}
		}
	}
	if local == "" {
		return nil
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if id, ok := sel.X.(*ast.Ident); ok && id.Name == local && slices.Contains(forbidden, sel.Sel.Name) {
			p := fset.Position(sel.Pos())
			out = append(out, filepath.Base(p.Filename)+":"+strconv.Itoa(p.Line)+": ams."+sel.Sel.Name)
		}
		return true
	})
	return out
}

// TestConsumersNameNoWholeStore: the packages of consumers never name
// ams.Store or ams.Tx (their tests may: they build stores).
func TestConsumersNameNoWholeStore(t *testing.T) {
	for _, c := range consumers {
		t.Run(c.dir, func(t *testing.T) {
			files, err := filepath.Glob(filepath.Join("..", "..", c.dir, "*.go"))
			if err != nil {
				t.Fatal(err)
			}
			checked := 0
			for _, path := range files {
				if strings.HasSuffix(path, "_test.go") {
					continue
				}
				fset := token.NewFileSet()
				f, err := parser.ParseFile(fset, path, nil, 0)
				if err != nil {
					t.Fatal(err)
				}
				checked++
				for _, at := range amsNames(fset, f) {
					t.Errorf("%s/%s: declare the methods %s calls (%s)", c.dir, at, c.dir, c.why)
				}
			}
			if checked == 0 {
				t.Fatalf("no Go files in %s", c.dir)
			}
		})
	}
}

// TestAmsNamesFound: the check finds the names under any import name,
// and in comments finds none.
func TestAmsNamesFound(t *testing.T) {
	const src = `package x

import core "github.com/amsdev/ams"

// Store is what x needs; core.Store satisfies it.
type Store interface{ Find() }

type S struct {
	A core.Store
	B func(tx core.Tx) error
	C core.Turn
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := amsNames(fset, f)
	want := []string{"x.go:9: ams.Store", "x.go:10: ams.Tx"}
	if !slices.Equal(got, want) {
		t.Fatalf("found %v, want %v", got, want)
	}
}
