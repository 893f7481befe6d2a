package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// handlerDirs are the packages of handlers, relative to the module root:
// the API and the account pages (web/, or pages/ once renamed).
var handlerDirs = []string{"http", "web", "pages"}

// writePrefixes start the names of the store's writing methods; Update
// alone opens a transaction.
var writePrefixes = []string{"Create", "Update", "Delete", "Revoke", "Save", "Enqueue", "Set", "Touch", "Begin",
	"Finish", "Release", "Add", "Record", "Claim", "Fire", "Purge", "Mark", "Import", "Acquire", "Emit", "Approve"}

// writeNames are writing methods whose names start otherwise.
var writeNames = []string{"PingWebhook"}

// allowed are the store writes handlers still make themselves, by file
// name and method. Every other write goes through a service (account,
// world, messaging, webhook, and package oauth's client functions). An
// entry that is no longer used fails the test too, so the list only
// shrinks.
var allowed = map[string][]string{
	// The API's middleware, not a handler: the request infrastructure
	// that runs around every handler records the key's last use (at most
	// once a minute) and the idempotency records of the requests.
	"middleware.go": {"TouchKey", "BeginIdempotent", "FinishIdempotent", "ReleaseIdempotent"},
}

// isWrite reports whether a store method writes.
func isWrite(name string) bool {
	if name == "Update" || slices.Contains(writeNames, name) {
		return true
	}
	for _, p := range writePrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// finding is a store write in a handler package.
type finding struct {
	pos    token.Position
	method string
}

// storeWrites returns the calls in f of writing methods on a store: on a
// selector that ends in .Store (s.Store, s.World.Store) or on a variable
// assigned one. It also reports every mention of ams.Tx, since a handler
// that names a transaction opens one.
func storeWrites(fset *token.FileSet, f *ast.File) []finding {
	isStore := func(e ast.Expr, aliases map[string]bool) bool {
		switch x := e.(type) {
		case *ast.SelectorExpr:
			return x.Sel.Name == "Store"
		case *ast.Ident:
			return aliases[x.Name]
		}
		return false
	}
	aliases := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if as, ok := n.(*ast.AssignStmt); ok {
			for i, rhs := range as.Rhs {
				if i < len(as.Lhs) && isStore(rhs, nil) {
					if id, ok := as.Lhs[i].(*ast.Ident); ok {
						aliases[id.Name] = true
					}
				}
			}
		}
		return true
	})
	var out []finding
	ast.Inspect(f, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.CallExpr:
			sel, ok := x.Fun.(*ast.SelectorExpr)
			if ok && isWrite(sel.Sel.Name) && isStore(sel.X, aliases) {
				out = append(out, finding{fset.Position(x.Pos()), sel.Sel.Name})
			}
		case *ast.SelectorExpr:
			if id, ok := x.X.(*ast.Ident); ok && id.Name == "ams" && x.Sel.Name == "Tx" {
				out = append(out, finding{fset.Position(x.Pos()), "ams.Tx"})
			}
		}
		return true
	})
	return out
}

// TestHandlersDoNotWrite: no handler of the API or the account pages opens
// a transaction or calls a writing method of the store; they decode, call
// a service, and encode. Writes go through the services, which get the
// one watched store (app.New), so every change wakes the workers.
func TestHandlersDoNotWrite(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	files := 0
	for _, dir := range handlerDirs {
		matches, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range matches {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			files++
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, src, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range storeWrites(fset, f) {
				base := filepath.Base(path)
				if slices.Contains(allowed[base], w.method) {
					used[base+" "+w.method] = true
					continue
				}
				rel, _ := filepath.Rel(root, w.pos.Filename)
				t.Errorf("%s:%d: a handler writes to the store (%s); call a service instead", rel, w.pos.Line, w.method)
			}
		}
	}
	if files == 0 {
		t.Fatalf("no handler files found under %s in %v", root, handlerDirs)
	}
	for base, methods := range allowed {
		for _, m := range methods {
			if !used[base+" "+m] {
				t.Errorf("allowed %s in %s is no longer used: remove it from the list", m, base)
			}
		}
	}
}

// TestStoreWritesFound: the check finds the writes it is meant to find, so
// that TestHandlersDoNotWrite passing means something.
func TestStoreWritesFound(t *testing.T) {
	const src = `package x

func (s *Server) h(r *http.Request) error {
	s.Store.FindWebhook(ctx, u, id)        // a read: fine
	s.Store.CreateWebhook(ctx, wh)         // 1
	s.World.Store.Update(ctx, func(tx ams.Tx) error { return nil }) // 2 and 3 (ams.Tx)
	st := s.Store
	st.EnqueueDelivery(ctx, u, id, e, now) // 4
	s.Store.PingWebhook(ctx, u, id, e)     // 5
	s.Webhooks.Create(ctx, u, in)          // a service: fine
	return nil
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range storeWrites(fset, f) {
		got = append(got, fmt.Sprintf("%d:%s", w.pos.Line, w.method))
	}
	want := []string{"5:CreateWebhook", "6:Update", "6:ams.Tx", "8:EnqueueDelivery", "9:PingWebhook"}
	if !slices.Equal(got, want) {
		t.Fatalf("found %v, want %v", got, want)
	}
}
