package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// keyedConnFiles are the files of package sqlstore that may reach the
// engine's own connections: where the store wraps them so that a write
// in the context of an idempotent request records its key in its
// transaction (keyed.go: keyedWriter, tracked, inTx).
var keyedConnFiles = []string{"sqlstore.go"}

// TestWritesRecordIdempotencyKeys (issue 26, M2): every write of package
// sqlstore goes through the connections New and inTx give Queries (the
// keyed writer, the tracked transaction), never the engine's own: no
// Writer() or InTx( outside keyedConnFiles. A new POST then needs nothing
// of its own for its Idempotency-Key to commit with its change: the
// middleware puts the request in the context, the store records it.
func TestWritesRecordIdempotencyKeys(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	matches, err := filepath.Glob(filepath.Join(root, "sqlstore", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, path := range matches {
		name := filepath.Base(path)
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		allowed := false
		for _, a := range keyedConnFiles {
			allowed = allowed || a == name
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if ok && (sel.Sel.Name == "Writer" || sel.Sel.Name == "InTx") && !allowed {
				t.Errorf("%s: %s() reaches the engine's connection around the keyed writer and transactions (sqlstore/keyed.go)",
					fset.Position(call.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
	if checked == 0 {
		t.Fatal("no file of package sqlstore checked")
	}
}
