package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// loadOpenAPI parses and validates the embedded document as OpenAPI 3.1
// (kin-openapi's loader, then its validator: structure, references,
// path templates and their parameters, JSON Schema 2020-12 schemas,
// defaults and examples).
func loadOpenAPI(t testing.TB, raw []byte) *openapi3.T {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(raw)
	if err != nil {
		t.Fatalf("openapi.json does not load: %v", err)
	}
	if !doc.IsOpenAPI31OrLater() || !strings.HasPrefix(doc.OpenAPI, "3.1.") {
		t.Fatalf("openapi.json is OpenAPI %q, want 3.1.x", doc.OpenAPI)
	}
	if err := doc.Validate(context.Background(), openapi3.EnableMultiError(), openapi3.EnableSchemaFormatValidation(),
		openapi3.EnableExamplesValidation(), openapi3.EnableSchemaDefaultsValidation()); err != nil {
		t.Fatalf("openapi.json is not valid OpenAPI 3.1:\n%v", err)
	}
	return doc
}

func TestOpenAPIDocumentValid(t *testing.T) {
	doc := loadOpenAPI(t, openAPIDoc)
	// Every operation can be named by a generated client.
	ids := map[string]string{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			where := method + " " + path
			if op.OperationID == "" {
				t.Errorf("%s has no operationId", where)
			} else if prev, ok := ids[op.OperationID]; ok {
				t.Errorf("%s and %s share the operationId %q", prev, where, op.OperationID)
			}
			ids[op.OperationID] = where
			if op.Summary == "" {
				t.Errorf("%s has no summary", where)
			}
		}
	}
}

// docPath is the OpenAPI path template of a route pattern: a trailing
// {name...} (the rest of the path) is a plain {name} whose parameter
// says x-coffer-rest-of-path.
func docPath(pattern string) string { return strings.ReplaceAll(pattern, "...}", "}") }

// TestOpenAPIRoutes: the document and the route table describe the same
// endpoints: every route is an operation with its method, path template,
// path parameters and security, and every operation is a route (HEAD
// where the route is a GET, which also answers HEAD).
func TestOpenAPIRoutes(t *testing.T) {
	checkOpenAPIRoutes(t, loadOpenAPI(t, openAPIDoc), New(Services{}, testConfig(nil), nil).Routes())
}

func checkOpenAPIRoutes(t testing.TB, doc *openapi3.T, routes []Route) {
	t.Helper()
	seen := map[string]bool{}
	for _, rt := range routes {
		name := rt.Method + " " + rt.Pattern
		item := doc.Paths.Value(docPath(rt.Pattern))
		if item == nil {
			t.Errorf("route %s: the document has no path %s", name, docPath(rt.Pattern))
			continue
		}
		op := item.GetOperation(rt.Method)
		if op == nil {
			t.Errorf("route %s: path %s has no %s operation", name, docPath(rt.Pattern), rt.Method)
			continue
		}
		seen[rt.Method+" "+docPath(rt.Pattern)] = true
		if rt.Method == http.MethodGet {
			seen[http.MethodHead+" "+docPath(rt.Pattern)] = true
		}
		checkPathParams(t, name, rt.Pattern, item, op)
		if head := item.Head; head != nil && rt.Method == http.MethodGet {
			checkPathParams(t, "HEAD "+rt.Pattern, rt.Pattern, item, head)
			checkSecurity(t, "HEAD "+rt.Pattern, rt.Access, head, false)
		}
		checkSecurity(t, name, rt.Access, op, true)
	}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			if !seen[method+" "+path] {
				t.Errorf("the document's %s %s is no route of the table (HEAD needs a GET route)", method, path)
			}
		}
	}
}

// checkPathParams: the operation's path parameters (its own, else its
// path item's) are exactly the pattern's wildcards, required, and a
// {name...} wildcard's is marked x-coffer-rest-of-path.
func checkPathParams(t testing.TB, name, pattern string, item *openapi3.PathItem, op *openapi3.Operation) {
	t.Helper()
	want := map[string]bool{} // name → rest of path
	for seg := range strings.SplitSeq(pattern, "/") {
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
			n := strings.TrimSuffix(strings.Trim(seg, "{}"), "...")
			want[n] = strings.HasSuffix(seg, "...}")
		}
	}
	got := map[string]*openapi3.Parameter{}
	for _, ps := range []openapi3.Parameters{item.Parameters, op.Parameters} { // the operation's win
		for _, p := range ps {
			if p.Value.In == openapi3.ParameterInPath {
				got[p.Value.Name] = p.Value
			}
		}
	}
	if g, w := slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)); !slices.Equal(g, w) {
		t.Errorf("%s: path parameters %v, want %v", name, g, w)
		return
	}
	for n, rest := range want {
		p := got[n]
		if !p.Required {
			t.Errorf("%s: path parameter %s is not required", name, n)
		}
		if marked, _ := p.Extensions["x-coffer-rest-of-path"].(bool); marked != rest {
			t.Errorf("%s: path parameter %s has x-coffer-rest-of-path %v, want %v (the pattern's {%s...})", name, n, marked, rest, n)
		}
	}
}

// checkSecurity: the operation's security says what the route's Access
// does: nothing (public), a bearer token (user, admin), either
// (optional), or no bearer token but the link with an optional grant
// (share); with body, a route that needs a token lists its 401 (and an
// admin route its 403). HEAD refusals have no body to describe.
func checkSecurity(t testing.TB, name string, access Access, op *openapi3.Operation, body bool) {
	t.Helper()
	if op.Security == nil {
		t.Errorf("%s: no security (write [] for a public route)", name)
		return
	}
	var schemes []string
	anonymous := false
	for _, req := range *op.Security {
		if len(req) == 0 {
			anonymous = true
		}
		for s := range req {
			schemes = append(schemes, s)
		}
	}
	bearer := slices.Contains(schemes, "bearer")
	ok := false
	switch access {
	case Public:
		ok = len(*op.Security) == 0
	case User, Admin:
		ok = !anonymous && bearer && len(schemes) == 1
	case Optional:
		ok = anonymous && bearer
	case Share:
		ok = anonymous && !bearer
	}
	if !ok {
		t.Errorf("%s: security %v does not say %s access", name, *op.Security, access)
	}
	if body && access == Admin && op.Responses.Status(http.StatusForbidden) == nil {
		t.Errorf("%s: an admin route without its 403", name)
	}
	if body && (access == User || access == Admin) && op.Responses.Status(http.StatusUnauthorized) == nil {
		t.Errorf("%s: a route that needs a token without its 401", name)
	}
}

// TestOpenAPIRoutesCatchDrift: the comparison fails when the table and
// the document part: a route missing from the document, a method or a
// parameter that differs, an operation without a route.
func TestOpenAPIRoutesCatchDrift(t *testing.T) {
	routes := New(Services{}, testConfig(nil), nil).Routes()
	for _, tc := range []struct {
		name   string
		routes func([]Route) []Route
		doc    func(*openapi3.T)
		want   string
	}{
		{"a route the document lacks", func(rs []Route) []Route {
			return append(rs, Route{Method: "POST", Pattern: "/api/v1/buckets/{bucket}/rename", Access: User})
		}, nil, "has no path"},
		{"another method", func(rs []Route) []Route {
			for i := range rs {
				if rs[i].Pattern == "/api/v1/buckets/{bucket}/move" {
					rs[i].Method = "PUT"
				}
			}
			return rs
		}, nil, "has no PUT operation"},
		{"a renamed wildcard", func(rs []Route) []Route {
			for i := range rs {
				if rs[i].Pattern == "/api/v1/shares/{id}" && rs[i].Method == "GET" {
					rs[i].Pattern = "/api/v1/shares/{share}"
				}
			}
			return rs
		}, nil, "has no path"},
		{"a parameter no longer the rest of the path", nil, func(d *openapi3.T) {
			delete(d.Components.Parameters["Key"].Value.Extensions, "x-coffer-rest-of-path")
		}, "x-coffer-rest-of-path false"},
		{"an operation without a route", nil, func(d *openapi3.T) {
			d.Paths.Value("/api/v1/me").Put = d.Paths.Value("/api/v1/me").Get
		}, "is no route of the table"},
		{"public security on a user route", nil, func(d *openapi3.T) {
			d.Paths.Value("/api/v1/me").Get.Security = openapi3.NewSecurityRequirements()
		}, "does not say user access"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := slices.Clone(routes)
			if tc.routes != nil {
				rs = tc.routes(rs)
			}
			doc := loadOpenAPI(t, openAPIDoc)
			if tc.doc != nil {
				tc.doc(doc)
			}
			rec := &recorder{TB: t}
			checkOpenAPIRoutes(rec, doc, rs)
			if !strings.Contains(strings.Join(rec.errs, "\n"), tc.want) {
				t.Errorf("errors %q, want one with %q", rec.errs, tc.want)
			}
		})
	}
}

// recorder collects Errorf calls instead of failing.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, strings.TrimSpace(fmt.Sprintf(format, args...)))
}

// TestOpenAPIProblems: the document's problem responses are the
// translation table's: one response per status of statusOf, listing
// exactly the codes of that status, and the Problem schema's code enum
// is every code a problem body can carry.
func TestOpenAPIProblems(t *testing.T) {
	doc := loadOpenAPI(t, openAPIDoc)
	byStatus := map[int][]string{}
	var all []string
	for _, c := range errcode.All() {
		st := statusOf[c]
		if st == http.StatusNotModified || c == errcode.Canceled { // no body; never reaches a client
			continue
		}
		byStatus[st] = append(byStatus[st], c.String())
		all = append(all, c.String())
	}
	var enum []string
	for _, v := range doc.Components.Schemas["Problem"].Value.Properties["code"].Value.Enum {
		enum = append(enum, v.(string))
	}
	if g, w := slices.Sorted(slices.Values(enum)), slices.Sorted(slices.Values(all)); !slices.Equal(g, w) {
		t.Errorf("Problem.code enum %v, want %v", g, w)
	}
	found := map[int]string{}
	for name, r := range doc.Components.Responses {
		mt := r.Value.Content["application/problem+json"]
		if mt == nil || len(mt.Schema.Value.AllOf) != 2 {
			continue
		}
		props := mt.Schema.Value.AllOf[1].Value.Properties
		// status is a one-value enum (a const would do, but client
		// generators fail to merge it with Problem's integer).
		st, ok := 0.0, false
		if e := props["status"].Value.Enum; len(e) == 1 {
			st, ok = e[0].(float64)
		}
		if !ok {
			t.Errorf("response %s: status is no one-value enum", name)
			continue
		}
		var codes []string
		for _, v := range props["code"].Value.Enum {
			codes = append(codes, v.(string))
		}
		if g, w := slices.Sorted(slices.Values(codes)), slices.Sorted(slices.Values(byStatus[int(st)])); !slices.Equal(g, w) {
			t.Errorf("response %s (%d): codes %v, want %v (statusOf)", name, int(st), g, w)
		}
		found[int(st)] = name
	}
	for st := range byStatus {
		if _, ok := found[st]; !ok {
			t.Errorf("no problem response for status %d (codes %v)", st, byStatus[st])
		}
	}
	// Every operation names its own refusals and has the default
	// problem for the rest.
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if method != http.MethodHead && op.Responses.Default() == nil {
				t.Errorf("%s %s has no default (problem) response", method, path)
			}
		}
	}
}

// TestOpenAPIServed: GET /api/v1/openapi.json answers the embedded
// document, public and cacheable, and 304 to its ETag.
func TestOpenAPIServed(t *testing.T) {
	h := New(Services{}, testConfig(nil), nil).Handler()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/api/v1/openapi.json", nil))
	if w.Code != 200 || w.Header().Get("Content-Type") != "application/json" || !strings.HasPrefix(w.Header().Get("Cache-Control"), "public") {
		t.Fatalf("GET: %d %v", w.Code, w.Header())
	}
	var v map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil || v["openapi"] != "3.1.0" {
		t.Fatalf("body: %v %v", err, v["openapi"])
	}
	etag := w.Header().Get("ETag")
	for _, tc := range []struct {
		method, inm string
		status      int
		body        bool
	}{
		{"GET", etag, 304, false},
		{"GET", `"other"`, 200, true},
		{"HEAD", "", 200, false},
	} {
		r := httptest.NewRequest(tc.method, "/api/v1/openapi.json", nil)
		if tc.inm != "" {
			r.Header.Set("If-None-Match", tc.inm)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tc.status || (w.Body.Len() > 0) != tc.body || w.Header().Get("ETag") != etag {
			t.Errorf("%s If-None-Match %q: %d, %d bytes, ETag %q", tc.method, tc.inm, w.Code, w.Body.Len(), w.Header().Get("ETag"))
		}
	}
}
