package http_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/amstest"
	"github.com/amsdev/ams/internal/testing/pgtest"
	"github.com/amsdev/ams/internal/testing/wait"
	"github.com/amsdev/ams/oauth"
	"github.com/amsdev/ams/openapi"
)

// The bad-input matrix: every POST and PATCH operation and every list
// operation of the OpenAPI document (so that a new route is covered
// without editing this test), each bad class of input, on both engines,
// through HTTP. Each bad request must get its documented 4xx with the
// error body, never a 5xx and never an ERROR log line, and the account's
// data must be the same, byte for byte, afterwards.

func TestBadInputSQLite(t *testing.T) {
	t.Parallel()
	runBadInput(t, nil)
}

func TestBadInputPostgres(t *testing.T) {
	t.Parallel()
	runBadInput(t, pgtest.Open(t))
}

// apiOp is one operation of the OpenAPI document.
type apiOp struct {
	Method, Path string
	Query        []string // its query parameters
	// Objects are the fields of its JSON body that must be objects (type
	// "object", where null is not allowed).
	Objects  []string
	Metadata bool // its request body has a metadata field
}

func (o apiOp) list() bool {
	for _, q := range o.Query {
		if q == "limit" {
			return true
		}
	}
	return false
}

func apiOps(t *testing.T) []apiOp {
	t.Helper()
	var doc struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Parameters map[string]struct {
				Name string `json:"name"`
				In   string `json:"in"`
			} `json:"parameters"`
			Schemas map[string]struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openapi.Document, &doc); err != nil {
		t.Fatal(err)
	}
	var ops []apiOp
	for path, item := range doc.Paths {
		for method, raw := range item {
			if method == "parameters" {
				continue
			}
			var op struct {
				Parameters []struct {
					Ref  string `json:"$ref"`
					Name string `json:"name"`
					In   string `json:"in"`
				} `json:"parameters"`
				RequestBody struct {
					Content map[string]struct {
						Schema struct {
							Ref string `json:"$ref"`
						} `json:"schema"`
					} `json:"content"`
				} `json:"requestBody"`
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				continue
			}
			o := apiOp{Method: strings.ToUpper(method), Path: path}
			if ref := op.RequestBody.Content["application/json"].Schema.Ref; ref != "" {
				_, o.Metadata = doc.Components.Schemas[strings.TrimPrefix(ref, "#/components/schemas/")].Properties["metadata"]
			}
			for _, p := range op.Parameters {
				if p.Ref != "" {
					c := doc.Components.Parameters[strings.TrimPrefix(p.Ref, "#/components/parameters/")]
					p.Name, p.In = c.Name, c.In
				}
				if p.In == "query" {
					o.Query = append(o.Query, p.Name)
				}
			}
			if ref := op.RequestBody.Content["application/json"].Schema.Ref; ref != "" {
				for name, raw := range doc.Components.Schemas[strings.TrimPrefix(ref, "#/components/schemas/")].Properties {
					var prop struct {
						Type any `json:"type"`
					}
					if json.Unmarshal(raw, &prop) == nil && prop.Type == "object" {
						o.Objects = append(o.Objects, name)
					}
				}
				sort.Strings(o.Objects)
			}
			ops = append(ops, o)
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].Path+ops[i].Method < ops[j].Path+ops[j].Method })
	return ops
}

// badFixture is the account the matrix runs on, with one record of every
// kind, and its ids by path parameter.
type badFixture struct {
	*amstest.Fixture
	key  string
	user *ams.User
	ids  map[string]string // path prefix "/v1/tasks/{id}" -> id, and "{action_id}", "{delivery_id}"
	logs *lockedBuffer
}

func newBadFixture(t *testing.T, store ams.Store) *badFixture {
	logs := &lockedBuffer{}
	opts := []amstest.Option{amstest.WithLogger(slog.New(slog.NewTextHandler(logs, nil)))}
	if store != nil {
		opts = append(opts, amstest.OnStore(store))
	}
	f := &badFixture{Fixture: amstest.New(t, opts...), logs: logs, ids: map[string]string{}}
	// An enterprise account with limits the matrix never reaches.
	now := f.Clock.Now()
	f.user = &ams.User{ID: ams.NewID(ams.PrefixUser), Email: "bad@example.com", Plan: ams.PlanEnterprise,
		RPM: 1_000_000, RPD: 10_000_000, Timezone: "UTC", ApprovedAt: &now, CreatedAt: now, UpdatedAt: now}
	if err := f.Data.CreateUser(context.Background(), f.user); err != nil {
		t.Fatal(err)
	}
	f.key = f.NewKey(f.user, "admin")
	ast := f.NewAssistant(f.user, "Bad input's assistant")
	f.ids["/v1/assistants/{id}"] = ast.ID
	create := func(path, body string) map[string]any {
		t.Helper()
		r := f.Do("POST", path, f.key, body)
		if r.Status/100 != 2 {
			t.Fatalf("seed POST %s: %d %s", path, r.Status, r.Body)
		}
		return r.JSON(t)
	}
	f.ids["/v1/tasks/{id}"] = create("/v1/tasks", fmt.Sprintf(`{"assistant_id":%q,"title":"Seed task"}`, ast.ID))["id"].(string)
	f.ids["/v1/calendar/events/{id}"] = create("/v1/calendar/events", fmt.Sprintf(`{"assistant_id":%q,"title":"Seed event","starts_at":"2026-11-23T15:00:00Z"}`, ast.ID))["id"].(string)
	msg := create("/v1/messages", fmt.Sprintf(`{"assistant_id":%q,"message":"Hello"}`, ast.ID))
	f.ids["/v1/messages/{id}"] = msg["id"].(string)
	f.ids["/v1/conversations/{id}"] = msg["conversation_id"].(string)
	turns, err := f.Data.ListTurns(context.Background(), f.user.ID, msg["conversation_id"].(string), ams.ListParams{Limit: 1})
	if err != nil || len(turns.Data) != 1 {
		t.Fatalf("seed turn: %v %v", turns, err)
	}
	f.ids["/v1/turns/{id}"] = turns.Data[0].ID
	f.ids["{action_id}"] = create("/v1/assistants/"+ast.ID+"/actions", `{"type":"list_tasks","input":{}}`)["id"].(string)
	feed := create("/v1/calendar/feed", `{}`)
	if id, ok := feed["id"].(string); ok {
		f.ids["/v1/integrations/{id}"] = id
	} else if in, ok := feed["integration"].(map[string]any); ok {
		f.ids["/v1/integrations/{id}"], _ = in["id"].(string)
	}
	wh := create("/v1/webhooks", `{"url":"https://127.0.0.1:9/hook","events":["task.created"],"secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}`)
	f.ids["/v1/webhooks/{id}"] = wh["id"].(string)
	f.ids["/v1/keys/{id}"] = create("/v1/keys", `{"name":"Seed key","permissions":["read"]}`)["id"].(string)
	f.ids["/v1/oauth/clients/{id}"] = create("/v1/oauth/clients", `{"name":"Seed app","redirect_uris":["https://example.com/cb"]}`)["id"].(string)
	lastEvent := create("/v1/webhooks/"+wh["id"].(string)+"/ping", "")["id"].(string) // the last seed
	var dl struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	json.Unmarshal(f.Do("GET", "/v1/webhooks/"+wh["id"].(string)+"/deliveries", f.key, "").Body, &dl)
	f.ids["{delivery_id}"] = "dlv_0000000000000000000000"
	if len(dl.Data) > 0 {
		f.ids["{delivery_id}"] = dl.Data[0].ID
	}
	var evs struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	// An event is listed once every write that began before it has ended:
	// on PostgreSQL, every write of the server, other tests' included, so
	// under load it can take seconds. The matrix's fingerprint must hold
	// every seed, so wait until the last one is listed (the list's order
	// is commit order: then every earlier one is listed too).
	listed := func() bool {
		evs.Data = nil
		json.Unmarshal(f.Do("GET", "/v1/events?limit=1", f.key, "").Body, &evs)
		return len(evs.Data) == 1 && evs.Data[0].ID == lastEvent
	}
	wait.Eventually(t, "the seeded event "+lastEvent+" to be listed", listed)
	f.ids["/v1/events/{id}"] = evs.Data[0].ID
	return f
}

// validBody is a body that op accepts but for the field added to it (the
// metadata classes of the matrix), by method and path.
func (f *badFixture) validBody(method, path string) (string, bool) {
	ast := f.ids["/v1/assistants/{id}"]
	switch method + " " + path {
	case "POST /v1/assistants":
		return `{"name":"Never stored"}`, true
	case "POST /v1/conversations":
		return fmt.Sprintf(`{"assistant_id":%q,"title":"Never stored"}`, ast), true
	case "POST /v1/messages":
		return fmt.Sprintf(`{"assistant_id":%q,"message":"Never stored"}`, ast), true
	case "POST /v1/tasks":
		return fmt.Sprintf(`{"assistant_id":%q,"title":"Never stored"}`, ast), true
	case "POST /v1/calendar/events":
		return fmt.Sprintf(`{"assistant_id":%q,"title":"Never stored","starts_at":"2026-11-23T15:00:00Z"}`, ast), true
	case "POST /v1/webhooks":
		return `{"url":"https://127.0.0.1:9/never","events":["task.created"],"secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}`, true
	}
	if method == "PATCH" {
		return `{"title":"Never stored"}`, !strings.HasPrefix(path, "/v1/messages/") && !strings.HasPrefix(path, "/v1/assistants/") &&
			!strings.HasPrefix(path, "/v1/webhooks/")
	}
	return "", false
}

// path fills in an operation's path parameters with the seeded ids.
func (f *badFixture) path(p string) string {
	for prefix, id := range f.ids {
		if strings.HasPrefix(prefix, "/") {
			p = strings.Replace(p, prefix, strings.TrimSuffix(prefix, "{id}")+id, 1)
		}
	}
	p = strings.Replace(p, "{action_id}", f.ids["{action_id}"], 1)
	p = strings.Replace(p, "{delivery_id}", f.ids["{delivery_id}"], 1)
	return p
}

// fingerprint reads every list (all pages of 100, oldest first) and every
// seeded record: what the account holds, as the API shows it.
func (f *badFixture) fingerprint(t *testing.T, ops []apiOp) string {
	t.Helper()
	var b strings.Builder
	for _, o := range ops {
		if o.Method != "GET" || strings.Contains(f.path(o.Path), "{") || o.Path == "/v1/events/stream" { // a stream does not end
			continue
		}
		q := ""
		if o.list() {
			q = "?limit=100&order=asc"
		}
		r := f.Do("GET", f.path(o.Path)+q, f.key, "")
		if r.Status != 200 {
			t.Fatalf("fingerprint GET %s: %d %s", f.path(o.Path), r.Status, r.Body)
		}
		fmt.Fprintf(&b, "%s\n%s\n", o.Path, r.Body)
	}
	return b.String()
}

// badCase is one bad request and the answer it must get.
type badCase struct {
	name         string
	method, path string
	body         string // sent as application/json unless ""
	status       int
	code         string // "" accepts any documented code
	param        string // checked when not ""
}

func runBadInput(t *testing.T, store ams.Store) {
	ops := apiOps(t)
	f := newBadFixture(t, store)
	// The seed's last events may be listed a moment after their commit:
	// the data is read until two readings agree.
	before := f.fingerprint(t, ops)
	wait.Eventually(t, "two readings of the data to agree", func() bool {
		again := f.fingerprint(t, ops)
		agree := again == before
		before = again
		return agree
	})
	huge := strings.Repeat("x", 500<<10)
	over := `{"title":"` + strings.Repeat("x", 1<<20) + `"}`

	var cases []badCase
	add := func(c badCase) { cases = append(cases, c) }
	nullObjects := 0
	for _, o := range ops {
		p := f.path(o.Path)
		// Path parameters: NUL and invalid UTF-8 in each, on every method.
		for _, name := range []string{"id", "action_id", "delivery_id"} {
			if !strings.Contains(o.Path, "{"+name+"}") {
				continue
			}
			for _, bad := range []string{"%00", "%FF", "evt_%00", "ast_%C3%28"} {
				bp := strings.Replace(o.Path, "{"+name+"}", bad, 1)
				body := ""
				if o.Method == "POST" || o.Method == "PATCH" {
					body = "{}"
				}
				add(badCase{"path " + name + "=" + bad, o.Method, f.path(bp), body, 400, "invalid_encoding", name})
			}
		}
		if o.list() {
			for _, qp := range append([]string{"after", "before", "limit", "order"}, o.Query...) {
				for _, bad := range []string{"%00", "%FF", "evt_%00", "x%C3%28"} {
					add(badCase{"query " + qp + "=" + bad, "GET", p + "?" + qp + "=" + bad, "", 400, "invalid_encoding", qp})
				}
				add(badCase{"query huge " + qp, "GET", p + "?" + qp + "=" + strings.Repeat("y", 20000), "", 400, "", qp})
			}
			add(badCase{"query name %FF", "GET", p + "?x%FF=1", "", 400, "invalid_encoding", ""})
			add(badCase{"limit wrong type", "GET", p + "?limit=ten", "", 400, "parameter_invalid", "limit"})
			add(badCase{"limit too large", "GET", p + "?limit=101", "", 400, "parameter_invalid", "limit"})
			add(badCase{"unknown cursor", "GET", p + "?after=zzz_" + strings.Repeat("z", 22), "", 400, "", "after"})
		}
		if o.Method != "POST" && o.Method != "PATCH" {
			continue
		}
		body := func(name, b string, status int, code, param string) {
			add(badCase{name, o.Method, p, b, status, code, param})
		}
		body("NUL escape", `{"title":"a\u0000b"}`, 400, "invalid_encoding", "title")
		body("NUL escape nested", `{"input":{"title":"a\u0000b"}}`, 400, "invalid_encoding", "input.title")
		body("NUL in key", `{"ti\u0000tle":"a"}`, 400, "invalid_encoding", "")
		body("raw NUL", "{\"title\":\"a\x00b\"}", 400, "invalid_json", "")
		body("invalid UTF-8", "{\"title\":\"a\xffb\"}", 400, "invalid_encoding", "title")
		body("invalid UTF-8 in array", "{\"events\":[\"task.created\",\"\xc3\x28\"]}", 400, "invalid_encoding", "events[1]")
		body("invalid UTF-8 in key", "{\"t\xfftle\":\"a\"}", 400, "invalid_encoding", "")
		body("wrong type array", `[{}]`, 400, "invalid_json", "")
		body("wrong type string", `"{}"`, 400, "invalid_json", "")
		body("wrong type number", `5`, 400, "invalid_json", "")
		body("wrong type field", `{"title":{"a":1}}`, 400, "", "")
		body("null", `null`, 400, "invalid_json", "")
		for _, name := range o.Objects {
			// An object field given null is refused, not taken as absent.
			body("null object "+name, `{"`+name+`":null}`, 400, "invalid_type", name)
			nullObjects++
		}
		body("duplicate key", `{"title":"a","title":"b"}`, 400, "duplicate_key", "title")
		body("duplicate key nested", `{"input":{"limit":1,"limit":2}}`, 400, "duplicate_key", "input.limit")
		body("duplicate key in array", `{"x":[{"a":1},{"a":1,"a":2}]}`, 400, "duplicate_key", "x[1].a")
		body("huge key", `{"`+huge+`":1}`, 400, "unknown_parameter", "")
		body("huge value", `{"title":"`+huge+`"}`, 400, "", "")
		body("trailing garbage", `{} x`, 400, "invalid_json", "")
		body("two objects", `{}{}`, 400, "invalid_json", "")
		body("truncated", `{"title":"a`, 400, "invalid_json", "")
		body("over 1 MiB", over, 413, "request_too_large", "")
		if !o.Metadata {
			continue
		}
		// Metadata past its limits, with every other field valid: 400
		// naming the parameter, nothing stored.
		base, ok := f.validBody(o.Method, o.Path)
		if !ok {
			base = "{}"
			if o.Method == "POST" {
				t.Fatalf("%s %s takes metadata: give it a valid body in validBody", o.Method, o.Path)
			}
		}
		with := func(md string) string {
			if base == "{}" {
				return `{"metadata":` + md + `}`
			}
			return strings.TrimSuffix(base, "}") + `,"metadata":` + md + `}`
		}
		keys := make([]string, ams.MaxMetadataKeys+1)
		for i := range keys {
			keys[i] = fmt.Sprintf(`"key%02d":"v"`, i)
		}
		long41 := strings.Repeat("k", 41)
		body("metadata 51 keys", with("{"+strings.Join(keys, ",")+"}"), 400, "parameter_invalid", "metadata")
		body("metadata 41-character key", with(`{"`+long41+`":"v"}`), 400, "parameter_invalid", "metadata."+long41)
		body("metadata 501-character value", with(`{"k":"`+strings.Repeat("é", 501)+`"}`), 400, "parameter_invalid", "metadata.k")
		body("metadata empty key", with(`{"":"v"}`), 400, "parameter_invalid", "metadata.")
		body("metadata number value", with(`{"k":5}`), 400, "parameter_invalid", "metadata.k")
		body("metadata object value", with(`{"k":{"a":"b"}}`), 400, "parameter_invalid", "metadata.k")
		body("metadata not an object", with(`["k","v"]`), 400, "parameter_invalid", "metadata")
		body("metadata null", with(`null`), 400, "parameter_invalid", "metadata")
	}

	if nullObjects == 0 {
		t.Fatal("no body field of type object found in the OpenAPI document (POST /v1/integrations has config and secrets)")
	}
	for _, c := range cases {
		r := f.Do(c.method, c.path, f.key, c.body)
		label := fmt.Sprintf("%s %s: %s", c.method, clipPath(c.path), c.name)
		if r.Status != c.status {
			t.Errorf("%s: status %d, want %d: %.300s", label, r.Status, c.status, r.Body)
			continue
		}
		var e struct {
			Error struct {
				Type, Code, Message, Param string
			} `json:"error"`
			RequestID string `json:"request_id"`
		}
		if err := json.Unmarshal(r.Body, &e); err != nil || e.Error.Type != "invalid_request_error" || e.RequestID == "" {
			t.Errorf("%s: not the documented error body: %.300s", label, r.Body)
			continue
		}
		if c.code != "" && e.Error.Code != c.code {
			t.Errorf("%s: code %q, want %q (%s)", label, e.Error.Code, c.code, e.Error.Message)
		}
		if c.param != "" && e.Error.Param != c.param {
			t.Errorf("%s: param %q, want %q (%s)", label, e.Error.Param, c.param, e.Error.Message)
		}
		if len(r.Body) > 1000 {
			t.Errorf("%s: error answer of %d bytes quotes too much input", label, len(r.Body))
		}
	}
	// Headers ams reads: a credential that is not valid text is 401, an
	// Idempotency-Key that is not printable ASCII 400.
	for _, token := range []string{"ams_sk_\xff\xfe", "ams_at_\xff\xfe", "ams_at_a\xc3\x28.b", "ams_sk_" + strings.Repeat("\xff", 40)} {
		if r := f.Do("GET", "/v1/tasks", token, ""); r.Status != 401 {
			t.Errorf("Authorization: Bearer %q: %d, want 401: %.300s", token, r.Status, r.Body)
		}
	}
	if r := f.Do("POST", "/v1/tasks", f.key, "{}", "Idempotency-Key", "k\xff"); r.Status != 400 {
		t.Errorf("Idempotency-Key with invalid UTF-8: %d, want 400: %.300s", r.Status, r.Body)
	}
	t.Logf("%d bad requests", len(cases))
	if after := f.fingerprint(t, ops); after != before {
		t.Errorf("the account's data changed:\nbefore: %.2000s\nafter:  %.2000s", before, after)
	}
	if errs := f.logs.errors(); len(errs) > 0 {
		t.Errorf("%d ERROR log lines, first: %s", len(errs), errs[0])
	}

	t.Run("pages and login", func(t *testing.T) {
		// The login form (no session needed) with NUL and invalid UTF-8 in
		// the e-mail, and a signed-in user's page ids: 400 and 404.
		// With the login form's own CSRF token and cookie, as a browser sends
		// it, so that the e-mail would reach the store.
		jar, _ := cookiejar.New(nil)
		browser := &http.Client{Jar: jar}
		page, err := browser.Get(f.Server.URL + "/login")
		if err != nil {
			t.Fatal(err)
		}
		html, _ := io.ReadAll(page.Body)
		page.Body.Close()
		m := regexp.MustCompile(`name="csrf_token" value="([^"]+)"`).FindSubmatch(html)
		if m == nil {
			t.Fatalf("no CSRF token in the login form: %.500s", html)
		}
		for _, email := range []string{"a%00b@example.com", "a%FFb@example.com", "%00"} {
			req, _ := http.NewRequest("POST", f.Server.URL+"/login",
				strings.NewReader("email="+email+"&password=secret-password-1&csrf_token="+url.QueryEscape(string(m[1]))))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			r, err := browser.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			r.Body.Close()
			if r.StatusCode != 400 {
				t.Errorf("POST /login email=%s: %d, want 400", email, r.StatusCode)
			}
		}
		sid := "badinput-session-" + ams.NewID("")
		now := f.Clock.Now()
		if err := f.Data.CreateLoginSession(context.Background(), &ams.LoginSession{IDHash: ams.HashSecret(sid), UserID: f.user.ID,
			CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		cookie := &http.Cookie{Name: oauth.SessionCookie, Value: sid}
		for _, p := range []string{"/account/assistants/%FF", "/account/assistants/%00", "/account/assistants/ast_%00",
			"/account/webhooks/%FF", "/account/webhooks/%00/edit", "/account/keys/%00/created", "/account/apps/%FF",
			"/account/assistants/ast_x/conversations/%00"} {
			req, _ := http.NewRequest("GET", f.Server.URL+p, nil)
			req.AddCookie(cookie)
			r, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			r.Body.Close()
			if r.StatusCode != 404 {
				t.Errorf("GET %s: %d, want 404", p, r.StatusCode)
			}
		}
		// A form field that is not text: the form's page again (400),
		// naming the field, and no key stored.
		keysBefore, err := f.Data.ListKeys(context.Background(), f.user.ID)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("GET", f.Server.URL+"/account/keys", nil)
		req.AddCookie(cookie)
		kp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		html, _ = io.ReadAll(kp.Body)
		kp.Body.Close()
		if m = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`).FindSubmatch(html); m == nil {
			t.Fatalf("no CSRF token on the keys page: %.500s", html)
		}
		for _, name := range []string{"a%00b", "a%FFb"} {
			req, _ := http.NewRequest("POST", f.Server.URL+"/account/keys",
				strings.NewReader("name="+name+"&permissions=read&csrf_token="+url.QueryEscape(string(m[1]))))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", f.Server.URL)
			req.AddCookie(cookie)
			r, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(r.Body)
			r.Body.Close()
			if r.StatusCode != 400 || !strings.Contains(string(body), `href="#name"`) {
				t.Errorf("POST /account/keys name=%s: %d, want 400 with the form error of name: %.300s", name, r.StatusCode, body)
			}
		}
		if keys, err := f.Data.ListKeys(context.Background(), f.user.ID); err != nil || len(keys) != len(keysBefore) {
			t.Errorf("keys after refused forms: %d (%v), want %d", len(keys), err, len(keysBefore))
		}
		req, _ = http.NewRequest("GET", f.Server.URL+"/account/assistants?after=ast_%00", nil)
		req.AddCookie(cookie)
		if r, err := http.DefaultClient.Do(req); err != nil {
			t.Fatal(err)
		} else if r.Body.Close(); r.StatusCode != 400 {
			t.Errorf("GET /account/assistants?after=ast_%%00: %d, want 400", r.StatusCode)
		}
		if errs := f.logs.errors(); len(errs) > 0 {
			t.Errorf("%d ERROR log lines, first: %s", len(errs), errs[0])
		}
	})
}

func clipPath(p string) string {
	if u, err := url.Parse(p); err == nil && len(p) > 120 {
		return u.Path + "?…"
	}
	return p
}
