package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// outboundExempt are the directories, relative to the module root, whose
// code may connect out on its own: package ssrf itself, and code that
// does not run in the service (the Go SDK for ams's users, benchmarks,
// end-to-end tests, test fixtures).
var outboundExempt = []string{"ssrf", "client", "bench", "e2e", "sdk", "internal/testing"}

// outboundNames are, by import path, the functions and variables that
// make a connection or hold a client of their own; outboundTypes the
// types whose values (composite literals, new) do.
var (
	outboundNames = map[string][]string{
		"net/http":                    {"DefaultClient", "DefaultTransport", "Get", "Head", "Post", "PostForm"},
		"net":                         {"Dial", "DialTimeout", "DialTCP", "DialUDP", "DialIP", "DialUnix"},
		"crypto/tls":                  {"Dial", "DialWithDialer"},
		"github.com/wneessen/go-mail": {"NewClient"}, // only in a file that sets WithDialContextFunc
	}
	outboundTypes = map[string][]string{
		"net/http":   {"Transport", "Client"},
		"net":        {"Dialer"},
		"crypto/tls": {"Dialer"},
	}
)

// TestOutboundThroughSSRF: every connection the service makes to a peer
// (webhook receivers, CalDAV servers, the LLM provider, the SMTP relay,
// and whatever comes next, such as MCP servers) goes through package
// ssrf's Guard.Client or Guard.DialBounded, which bound what the peer
// may send back (header and body bytes, time). No other package builds
// an http.Transport, an http.Client, a net or tls Dialer, or uses
// net/http's default client.
func TestOutboundThroughSSRF(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			for _, ex := range outboundExempt {
				if rel == ex {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		checked++
		imports := map[string]string{} // local name -> path
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			name := p[strings.LastIndex(p, "/")+1:]
			if p == "github.com/wneessen/go-mail" {
				name = "mail"
			}
			if im.Name != nil {
				name = im.Name.Name
			}
			imports[name] = p
		}
		setsDial := false
		var uses []*ast.SelectorExpr
		// The types constructed: T{...}, &T{...}, new(T).
		constructed := map[*ast.SelectorExpr]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.CompositeLit:
				if sel, ok := x.Type.(*ast.SelectorExpr); ok {
					constructed[sel] = true
				}
			case *ast.CallExpr:
				if id, ok := x.Fun.(*ast.Ident); ok && id.Name == "new" && len(x.Args) == 1 {
					if sel, ok := x.Args[0].(*ast.SelectorExpr); ok {
						constructed[sel] = true
					}
				}
			}
			return true
		})
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			id, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			p := imports[id.Name]
			if p == "github.com/wneessen/go-mail" && sel.Sel.Name == "WithDialContextFunc" {
				setsDial = true
			}
			for _, name := range outboundNames[p] {
				if sel.Sel.Name == name {
					uses = append(uses, sel)
				}
			}
			for _, name := range outboundTypes[p] {
				if sel.Sel.Name == name && constructed[sel] {
					uses = append(uses, sel)
				}
			}
			return true
		})
		for _, sel := range uses {
			if imports[sel.X.(*ast.Ident).Name] == "github.com/wneessen/go-mail" && setsDial {
				continue
			}
			t.Errorf("%s: %s.%s: outbound connections go through package ssrf (Guard.Client, Guard.DialBounded), which bounds what peers send",
				fset.Position(sel.Pos()), sel.X.(*ast.Ident).Name, sel.Sel.Name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("only %d files checked: is the module root %s?", checked, root)
	}
}
