package ams

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

// apiRecords are this package's records with timestamps in their JSON;
// TestTimestampsHaveThreeDecimals fails when a record with a json-tagged
// time field is missing here.
var apiRecords = map[string]any{
	"Assistant": Assistant{}, "Conversation": Conversation{}, "Message": Message{}, "Task": Task{},
	"CalendarEvent": CalendarEvent{}, "Action": Action{}, "APIKey": APIKey{}, "OAuthClient": OAuthClient{},
	"User": User{}, "Event": Event{}, "Webhook": Webhook{}, "Delivery": Delivery{}, "Integration": Integration{},
	"APIKeyRecord": APIKeyRecord{}, "Account": Account{}, "Turn": Turn{},
}

// TestTimestampsHaveThreeDecimals checks that every record of the package
// whose JSON has a time writes it with exactly three decimals, also when
// the milliseconds end in zeros, where time.Time would shorten them.
func TestTimestampsHaveThreeDecimals(t *testing.T) {
	for _, name := range recordsWithTimes(t) {
		if _, ok := apiRecords[name]; !ok {
			t.Errorf("%s has json-tagged time fields but is not in apiRecords: give it a MarshalJSON that writes them as JSONTime, and list it", name)
		}
	}
	good := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)
	for _, at := range []time.Time{
		time.Date(2026, 11, 24, 18, 30, 0, 0, time.UTC),
		time.Date(2026, 11, 24, 18, 30, 0, 120e6, time.UTC),
		time.Date(2026, 11, 24, 19, 30, 0, 5e6, time.FixedZone("CET", 3600)),
	} {
		for name, rec := range apiRecords {
			v := reflect.New(reflect.TypeOf(rec)).Elem()
			fields := setTimes(v, at)
			b, err := json.Marshal(v.Interface())
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			for _, f := range fields {
				s, _ := m[f].(string)
				if !good.MatchString(s) || s != FormatTime(at) {
					t.Errorf("%s.%s = %q, want %q", name, f, m[f], FormatTime(at))
				}
			}
			// Pointers encode the same way.
			if pb, err := json.Marshal(v.Addr().Interface()); err != nil || string(pb) != string(b) {
				t.Errorf("%s: *%s encodes as %s, %s as %s", name, name, pb, name, b)
			}
		}
	}
}

// setTimes sets every json-tagged time.Time and *time.Time field of v to
// at and returns their JSON names.
func setTimes(v reflect.Value, at time.Time) []string {
	var names []string
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "" || tag == "-" {
			continue
		}
		switch f.Type {
		case reflect.TypeOf(time.Time{}):
			v.Field(i).Set(reflect.ValueOf(at))
		case reflect.TypeOf(&time.Time{}):
			a := at
			v.Field(i).Set(reflect.ValueOf(&a))
		default:
			continue
		}
		names = append(names, tag)
	}
	return names
}

// recordsWithTimes returns the package's struct types with a json-tagged
// time.Time or *time.Time field, read from its source.
func recordsWithTimes(t *testing.T) []string {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range pkgs {
		for _, f := range p.Files {
			ast.Inspect(f, func(n ast.Node) bool {
				ts, ok := n.(*ast.TypeSpec)
				if !ok {
					return true
				}
				st, ok := ts.Type.(*ast.StructType)
				if !ok || !ts.Name.IsExported() {
					return true
				}
				for _, fl := range st.Fields.List {
					typ := fl.Type
					if s, ok := typ.(*ast.StarExpr); ok {
						typ = s.X
					}
					sel, ok := typ.(*ast.SelectorExpr)
					if !ok || sel.Sel.Name != "Time" || fl.Tag == nil {
						continue
					}
					if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "time" {
						continue
					}
					tag := reflect.StructTag(strings.Trim(fl.Tag.Value, "`")).Get("json")
					if tag != "" && tag != "-" {
						out = append(out, ts.Name.Name)
						break
					}
				}
				return true
			})
		}
	}
	return out
}
