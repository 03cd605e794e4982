package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"

	"github.com/coffer-storage/coffer/internal/cli"
	"github.com/coffer-storage/coffer/internal/config"
	"github.com/coffer-storage/coffer/internal/httpapi"
	"github.com/coffer-storage/coffer/internal/server"
)

// The document is checked against the real handlers here: a whole
// server (SQLite, disk, encryption at rest, every guard) on loopback
// listeners, driven through the file API's flows by a client whose
// transport validates every request and every response against the
// document it fetched from GET /api/v1/openapi.json
// (kin-openapi's openapi3filter, which validates OpenAPI 3.1 schemas as
// JSON Schema 2020-12). A response that the document does not describe
// fails the test, and so does an operation of the document that no flow
// exercised.

// oasEnv is the server and the validating client.
type oasEnv struct {
	t      *testing.T
	url    string // the file API
	s3     string // the S3 API (direct-upload part URLs point there)
	doc    *openapi3.T
	api    *httpapi.API // its router names a request's route
	client *http.Client
	plain  *http.Client // for the S3 API, which the document does not describe

	flow   string       // the flow running, for messages
	raw    []byte       // the document as served
	report func(string) // nil: t.Errorf

	mu  sync.Mutex
	ops map[string]bool // "METHOD /path" of the document exercised
}

// expectation of one request: invalid means it breaks the document on
// purpose (the server must refuse it, and the validator must too).
type expectKey struct{}

func withInvalid(r *http.Request) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), expectKey{}, true))
}

func startOpenAPIServer(t *testing.T) *oasEnv {
	t.Helper()
	dir := t.TempDir()
	ctx := context.Background()
	// The administrator, made on the stores as `coffer user create
	// --admin` does.
	var out bytes.Buffer
	noEnv := func(string) string { return "" }
	if code := cli.Run(ctx, []string{"user", "create", "--data", dir, "--email", "root@example.com", "--password", "root password", "--admin"},
		cli.Env{Stdout: &out, Stderr: &out, Getenv: noEnv}); code != 0 {
		t.Fatalf("coffer user create: %d %s", code, out.String())
	}
	cfg := config.Defaults()
	cfg.Data = dir
	cfg.Listen, cfg.S3Listen = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Argon2Memory, cfg.Argon2Time = 8192, 1
	cfg.Encryption = "on"
	cfg.Console = false
	cfg.SignupRate = config.Rate{N: 100, Per: time.Hour}
	s, err := server.New(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	lines := &announceWriter{lines: make(chan string, 4)}
	done := make(chan error, 1)
	go func() { done <- s.Run(runCtx, lines) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("server: %v", err)
		}
	})
	e := &oasEnv{t: t, api: httpapi.New(httpapi.Services{}, httpapi.ConfigFrom(config.Defaults()), nil), ops: map[string]bool{}, plain: &http.Client{}}
	addr := regexp.MustCompile(`(file|S3) API listening on (http://\S+)`)
	for e.url == "" || e.s3 == "" {
		select {
		case l := <-lines.lines:
			if m := addr.FindStringSubmatch(l); m != nil && m[1] == "file" {
				e.url = m[2]
			} else if m != nil {
				e.s3 = m[2]
			}
		case err := <-done:
			t.Fatalf("server stopped: %v", err)
		case <-time.After(30 * time.Second):
			t.Fatal("the server did not announce its listeners")
		}
	}
	e.client = &http.Client{Transport: &validatingTransport{e: e, next: http.DefaultTransport}}
	// The document as served.
	resp, raw := e.do(call{method: "GET", path: "/api/v1/openapi.json"}, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("GET /api/v1/openapi.json: %d", resp.StatusCode)
	}
	e.raw, e.doc = raw, loadDoc(t, raw)
	return e
}

func loadDoc(t testing.TB, raw []byte) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return doc
}

// announceWriter passes the server's start-up lines on (dropping any
// nobody waits for).
type announceWriter struct{ lines chan string }

func (w *announceWriter) Write(p []byte) (int, error) {
	select {
	case w.lines <- string(p):
	default:
	}
	return len(p), nil
}

// validatingTransport validates each exchange against e.doc.
type validatingTransport struct {
	e    *oasEnv
	next http.RoundTripper
}

func (v *validatingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	e := v.e
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	invalid, _ := req.Context().Value(expectKey{}).(bool)
	name := req.Method + " " + req.URL.EscapedPath()
	input, opErr := e.requestInput(req, body)
	if opErr != nil {
		e.fail("%s: %v", name, opErr)
	}
	if input != nil && e.doc != nil {
		err := openapi3filter.ValidateRequest(req.Context(), input)
		switch {
		case err != nil && !invalid:
			e.fail("%s: the request does not match the document: %v", name, err)
		case err == nil && invalid:
			e.fail("%s: a request that breaks the document on purpose passes its validation", name)
		}
	}
	resp, err := v.next.RoundTrip(req)
	if err != nil || input == nil || e.doc == nil {
		return resp, err
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	e.checkResponse(name, input, resp, raw)
	return resp, nil
}

// requestInput finds the document's operation for req through the API's
// own router (object keys are the rest of the path, which OpenAPI path
// templates cannot match).
func (e *oasEnv) requestInput(req *http.Request, body []byte) (*openapi3filter.RequestValidationInput, error) {
	if e.doc == nil {
		return nil, nil
	}
	match := req.Clone(req.Context())
	route := e.api.Classify(match).Route
	method, pattern, ok := strings.Cut(route, " ")
	if !ok {
		return nil, fmt.Errorf("no route (%s)", route)
	}
	path := strings.ReplaceAll(pattern, "...}", "}")
	item := e.doc.Paths.Value(path)
	if item == nil {
		return nil, fmt.Errorf("route %s: no path %s in the document", route, path)
	}
	if req.Method == http.MethodHead {
		method = http.MethodHead
	}
	op := item.GetOperation(method)
	if op == nil {
		return nil, fmt.Errorf("route %s: no %s operation in the document", route, method)
	}
	params := map[string]string{}
	for seg := range strings.SplitSeq(pattern, "/") {
		if n, ok := strings.CutPrefix(seg, "{"); ok {
			n = strings.TrimSuffix(strings.TrimSuffix(n, "}"), "...")
			params[n] = match.PathValue(n)
		}
	}
	e.mu.Lock()
	e.ops[method+" "+path] = true
	e.mu.Unlock()
	vr := req.Clone(req.Context())
	vr.Body = io.NopCloser(bytes.NewReader(body))
	return &openapi3filter.RequestValidationInput{
		Request:    vr,
		PathParams: params,
		Route:      &routers.Route{Spec: e.doc, Path: path, PathItem: item, Method: method, Operation: op},
		Options: &openapi3filter.Options{
			MultiError:          true,
			SkipSettingDefaults: true,
			AuthenticationFunc:  authenticate,
		},
	}, nil
}

// authenticate says whether the request carries the credential a
// security scheme names (the server decides whether it is good).
func authenticate(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	r := in.RequestValidationInput.Request
	s := in.SecurityScheme
	switch {
	case s.Type == "http" && s.Scheme == "bearer":
		if strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
			return nil
		}
	case s.Type == "apiKey" && s.In == "header":
		if r.Header.Get(s.Name) != "" {
			return nil
		}
	case s.Type == "apiKey" && s.In == "cookie":
		if _, err := r.Cookie(s.Name); err == nil {
			return nil
		}
	}
	return fmt.Errorf("no %s credential", in.SecuritySchemeName)
}

// catchAll are the statuses any operation may answer through its
// default response; every other status must be listed by the operation.
var catchAll = []int{http.StatusNotModified, http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusServiceUnavailable}

func (e *oasEnv) checkResponse(name string, input *openapi3filter.RequestValidationInput, resp *http.Response, raw []byte) {
	op := input.Route.Operation
	if !slices.Contains(catchAll, resp.StatusCode) && op.Responses.Status(resp.StatusCode) == nil {
		e.fail("%s: status %d is not listed by the operation (only its default covers it)", name, resp.StatusCode)
	}
	// What the document's description says of every response.
	if resp.Header.Get("X-Request-Id") == "" || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		e.fail("%s: %d without X-Request-Id or X-Content-Type-Options: nosniff: %v", name, resp.StatusCode, resp.Header)
	}
	ndjson := strings.HasPrefix(resp.Header.Get("Content-Type"), "application/x-ndjson")
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: input,
		Status:                 resp.StatusCode,
		Header:                 resp.Header,
		Body:                   io.NopCloser(bytes.NewReader(raw)),
		Options: &openapi3filter.Options{
			IncludeResponseStatus: true,
			MultiError:            true,
			ExcludeResponseBody:   ndjson,
		},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		e.fail("%s: %d %s: the response does not match the document: %v", name, resp.StatusCode, clip(raw), err)
	}
	if ndjson {
		e.checkNDJSON(name, op, resp.StatusCode, raw)
	}
}

// checkNDJSON validates each line of an application/x-ndjson body
// against the media type's schema (the schema of one line).
func (e *oasEnv) checkNDJSON(name string, op *openapi3.Operation, status int, raw []byte) {
	r := op.Responses.Status(status)
	if r == nil || r.Value.Content["application/x-ndjson"] == nil {
		e.fail("%s: no application/x-ndjson response for %d", name, status)
		return
	}
	schema := r.Value.Content["application/x-ndjson"].Schema.Value
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		var v any
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			e.fail("%s: line %q is not JSON: %v", name, sc.Text(), err)
			continue
		}
		if err := schema.VisitJSON(v, openapi3.EnableJSONSchema2020(), openapi3.VisitAsResponse()); err != nil {
			e.fail("%s: line %s does not match the document: %v", name, sc.Text(), err)
		}
	}
}

func clip(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}

func (e *oasEnv) fail(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if e.report != nil {
		e.report(msg)
		return
	}
	e.t.Errorf("%s: %s", e.flow, msg)
}

// call is one request to the file API.
type call struct {
	method, path string
	token        string
	json         any    // a JSON body
	body         []byte // a raw body (with ctype)
	ctype        string
	hdr          []string // name, value pairs
	invalid      bool     // breaks the document on purpose
}

func (e *oasEnv) do(c call, out any) (*http.Response, []byte) {
	e.t.Helper()
	var body io.Reader
	switch {
	case c.json != nil:
		b, err := json.Marshal(c.json)
		if err != nil {
			e.t.Fatal(err)
		}
		body, c.ctype = bytes.NewReader(b), "application/json"
	case c.body != nil:
		body = bytes.NewReader(c.body)
	}
	req, err := http.NewRequest(c.method, e.url+c.path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	if c.ctype != "" {
		req.Header.Set("Content-Type", c.ctype)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for i := 0; i+1 < len(c.hdr); i += 2 {
		req.Header.Set(c.hdr[i], c.hdr[i+1])
	}
	if c.invalid {
		req = withInvalid(req)
	}
	client := e.client
	if client == nil {
		client = e.plain
	}
	resp, err := client.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", c.method, c.path, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(b, out); err != nil {
			e.t.Fatalf("%s %s: %v in %s", c.method, c.path, err, b)
		}
	}
	return resp, b
}

// want sends c and fails unless it answers status (and, for a problem,
// the code).
func (e *oasEnv) want(status int, c call, out any, code ...string) *http.Response {
	e.t.Helper()
	resp, b := e.do(c, out)
	if resp.StatusCode != status {
		e.t.Fatalf("%s %s: %d %s, want %d", c.method, c.path, resp.StatusCode, clip(b), status)
	}
	if len(code) > 0 {
		var p struct{ Code string }
		if json.Unmarshal(b, &p); p.Code != code[0] {
			e.t.Fatalf("%s %s: code %q, want %q", c.method, c.path, p.Code, code[0])
		}
	}
	return resp
}

// wantProblem sends c and fails unless it answers the problem status
// with the type docs/errors.md#typ and, unless nil, exactly extra.
func (e *oasEnv) wantProblem(status int, c call, typ string, extra map[string]any) {
	e.t.Helper()
	resp, b := e.do(c, nil)
	var p struct {
		Type  string
		Extra map[string]any
	}
	if err := json.Unmarshal(b, &p); resp.StatusCode != status || err != nil || p.Type != httpapi.ErrorTypeBase+typ ||
		(extra != nil && !reflect.DeepEqual(p.Extra, extra)) {
		e.t.Fatalf("%s %s: %d %s, want %d #%s %v", c.method, c.path, resp.StatusCode, clip(b), status, typ, extra)
	}
}

type session struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	UserID       string `json:"user_id"`
}

// TestOpenAPIResponses drives the real handlers through the main flows
// and validates every request and response against the document.
func TestOpenAPIResponses(t *testing.T) {
	e := startOpenAPIServer(t)
	flows := []struct {
		name string
		run  func(e *oasEnv)
	}{
		{"document", flowDocument},
		{"accounts", flowAccounts},
		{"buckets and files", flowFiles},
		{"versions", flowVersions}, // after flowFiles: bob's bucket
		{"keys", flowKeys},
		{"shares", flowShares},
		{"direct uploads", flowDirectUploads},
		{"tus", flowTus},
		{"admin", flowAdmin},
		{"errors", flowErrors},
	}
	for _, f := range flows {
		e.flow = f.name
		f.run(e)
	}
	for path, item := range e.doc.Paths.Map() {
		for method := range item.Operations() {
			if !e.ops[method+" "+path] {
				t.Errorf("no flow exercised %s %s: add it", method, path)
			}
		}
	}
	t.Run("a wrong document fails", func(t *testing.T) { checkWrongDocuments(t, e) })
}

// checkWrongDocuments: the validation above can fail. Each case breaks a
// copy of the document in one place and replays a real exchange it
// describes; the validator must report the mismatch.
func checkWrongDocuments(t *testing.T, e *oasEnv) {
	good := e.doc
	e.flow = "wrong documents"
	s, bucket := e.signup("oscar@example.com")
	tok, b := s.AccessToken, "/api/v1/buckets/"+bucket
	e.want(201, call{method: "PUT", path: b + "/files/r.txt", token: tok, body: []byte("0123456789")}, nil)
	var link struct{ Token string }
	e.want(201, call{method: "POST", path: "/api/v1/shares", token: tok, json: map[string]any{"bucket": bucket, "key": "r.txt"}}, &link)
	defer func() { e.doc, e.report = good, nil }()
	schema := func(d *openapi3.T, name string) *openapi3.Schema { return d.Components.Schemas[name].Value }
	for _, tc := range []struct {
		name   string
		mutate func(d *openapi3.T)
		c      call
		want   string
	}{
		{"a field of another type", func(d *openapi3.T) {
			schema(d, "File").Properties["size"].Value.Type = &openapi3.Types{"string"}
		}, call{method: "PUT", path: b + "/files/a.txt", token: tok, body: []byte("a")}, "response body doesn't match"},
		{"a field the document does not name", func(d *openapi3.T) {
			f := schema(d, "File")
			delete(f.Properties, "etag")
			f.Required = slices.DeleteFunc(f.Required, func(s string) bool { return s == "etag" })
		}, call{method: "GET", path: b + "/files", token: tok}, "response body doesn't match"},
		{"another constant", func(d *openapi3.T) {
			schema(d, "Session").Properties["token_type"].Value.Const = "Basic"
		}, call{method: "POST", path: "/api/v1/auth/login", json: map[string]any{"email": "oscar@example.com", "password": "a good password"}}, "response body doesn't match"},
		{"another problem code", func(d *openapi3.T) {
			d.Components.Responses["BadRequest"].Value.Content["application/problem+json"].Schema.Value.AllOf[1].Value.Properties["code"].Value.Enum = []any{"checksum_mismatch"}
		}, call{method: "GET", path: b + "/files?limit=0", token: tok, invalid: true}, "response body doesn't match"},
		{"a status the operation does not list", func(d *openapi3.T) {
			d.Paths.Value("/api/v1/buckets/{bucket}").Get.Responses.Delete("404")
		}, call{method: "GET", path: "/api/v1/buckets/no-such-bucket", token: tok}, "status 404 is not listed"},
		{"a header of another form", func(d *openapi3.T) {
			d.Components.Headers["Content-Range"].Value.Schema.Value.Pattern = "^items "
		}, call{method: "GET", path: b + "/files/r.txt", token: tok, hdr: []string{"Range", "bytes=1-2"}}, `"Content-Range" doesn't match schema`},
		{"a line of a stream", func(d *openapi3.T) {
			schema(d, "BatchDeleteLine").OneOf[0].Value.Properties["status"].Value.Enum = []any{"deleted", "error"}
		}, call{method: "POST", path: b + "/delete", token: tok, json: map[string]any{"keys": []string{"never.txt"}}}, "does not match the document"},
		{"a problem's extra of another form", func(d *openapi3.T) {
			schema(d, "ZipLimit").Properties["max_prefixes"].Value.Type = &openapi3.Types{"string"}
		}, call{method: "POST", path: b + "/zip", token: tok, json: map[string]any{"prefixes": manyPrefixes(1001)}}, "response body doesn't match"},
		{"one of two bodies, neither as answered", func(d *openapi3.T) {
			schema(d, "ShareInfo").Properties["kind"].Value.Enum = []any{"folder"}
		}, call{method: "GET", path: "/s/" + link.Token + "?info=1"}, "response body doesn't match"},
		{"the other answer of two", func(d *openapi3.T) {
			schema(d, "ResumeResult").OneOf[1].Value.Properties["signed_in"].Value.Const = true
		}, call{method: "POST", path: "/api/v1/auth/resume", json: map[string]any{}, hdr: []string{"X-Coffer-Session", "cookie"}}, "response body doesn't match"},
		{"a bucket's counts the document does not name", func(d *openapi3.T) {
			delete(schema(d, "Bucket").Properties, "bytes")
		}, call{method: "GET", path: "/api/v1/buckets", token: tok}, "response body doesn't match"},
		{"a request the document refuses", func(d *openapi3.T) {
			schema(d, "CreateBucketRequest").Properties["name"].Value.MaxLength = openapi3.Ptr(uint64(3))
		}, call{method: "POST", path: "/api/v1/buckets", token: tok, json: map[string]any{"name": "oscar-more"}}, "the request does not match"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := loadDoc(t, e.raw)
			tc.mutate(d)
			var got []string
			e.doc, e.report = d, func(msg string) { got = append(got, msg) }
			e.do(tc.c, nil)
			e.doc, e.report = good, nil
			if !strings.Contains(strings.Join(got, "\n"), tc.want) {
				t.Errorf("validation reported %q, want %q", got, tc.want)
			}
		})
	}
}

func flowDocument(e *oasEnv) {
	resp := e.want(200, call{method: "GET", path: "/api/v1/openapi.json"}, nil)
	e.want(304, call{method: "GET", path: "/api/v1/openapi.json", hdr: []string{"If-None-Match", resp.Header.Get("ETag")}}, nil)
	e.want(412, call{method: "GET", path: "/api/v1/openapi.json", hdr: []string{"If-Match", `"other"`}}, nil, "precondition_failed")
}

// signup makes an account through the API and logs it in.
func (e *oasEnv) signup(email string) (session, string) {
	e.t.Helper()
	var su struct {
		Bucket struct{ Name string } `json:"bucket"`
	}
	e.want(201, call{method: "POST", path: "/api/v1/auth/signup", json: map[string]any{"email": email, "password": "a good password"}}, &su)
	var s session
	e.want(200, call{method: "POST", path: "/api/v1/auth/login", json: map[string]any{"email": email, "password": "a good password"}}, &s)
	return s, su.Bucket.Name
}

func flowAccounts(e *oasEnv) {
	s, _ := e.signup("alice@example.com")
	e.want(409, call{method: "POST", path: "/api/v1/auth/signup", json: map[string]any{"email": "alice@example.com", "password": "another password"}}, nil, "already_exists")
	e.want(400, call{method: "POST", path: "/api/v1/auth/signup", json: map[string]any{"email": "x@example.com", "password": "short"}}, nil, "invalid_argument")
	e.want(401, call{method: "POST", path: "/api/v1/auth/login", json: map[string]any{"email": "alice@example.com", "password": "wrong password"}}, nil, "unauthenticated")
	var me struct{ Admin *bool }
	if e.want(200, call{method: "GET", path: "/api/v1/me", token: s.AccessToken}, &me); me.Admin == nil || *me.Admin {
		e.t.Errorf("GET /me of a user: admin %v, want false", me.Admin)
	}

	var s2 session
	e.want(200, call{method: "POST", path: "/api/v1/auth/refresh", json: map[string]any{"refresh_token": s.RefreshToken}}, &s2)
	e.want(401, call{method: "POST", path: "/api/v1/auth/refresh", json: map[string]any{"refresh_token": s.RefreshToken}}, nil, "unauthenticated") // reused
	e.want(401, call{method: "POST", path: "/api/v1/auth/logout", json: map[string]any{"refresh_token": "forged"}}, nil, "unauthenticated")

	// A cookie session: the refresh token in a cookie, "" in the body.
	resp := e.want(200, call{method: "POST", path: "/api/v1/auth/login", hdr: []string{"X-Coffer-Session", "cookie"},
		json: map[string]any{"email": "alice@example.com", "password": "a good password"}}, nil)
	cookieSession := []string{"X-Coffer-Session", "cookie"}
	cookie := refreshCookie(resp)
	if cookie == "" {
		e.t.Fatal("no coffer_refresh cookie")
	}
	cookie = refreshCookie(e.want(200, call{method: "POST", path: "/api/v1/auth/refresh", json: map[string]any{}, hdr: append(cookieSession, "Cookie", cookie)}, nil))

	// Resume: the cookie's session, or signed_in false (never a 401).
	var resumed struct {
		SignedIn    bool   `json:"signed_in"`
		AccessToken string `json:"access_token"`
	}
	resp = e.want(200, call{method: "POST", path: "/api/v1/auth/resume", json: map[string]any{}, hdr: append(cookieSession, "Cookie", cookie)}, &resumed)
	next := refreshCookie(resp)
	if !resumed.SignedIn || resumed.AccessToken == "" || next == "" || next == cookie {
		e.t.Errorf("resume with a live cookie: %+v, cookie %q", resumed, next)
	}
	resumed.SignedIn = true
	e.want(200, call{method: "POST", path: "/api/v1/auth/resume", json: map[string]any{}, hdr: cookieSession}, &resumed) // no cookie
	if resumed.SignedIn {
		e.t.Error("resume without a cookie: signed in")
	}
	resp = e.want(200, call{method: "POST", path: "/api/v1/auth/resume", json: map[string]any{}, hdr: append(cookieSession, "Cookie", cookie)}, &resumed) // rotated already: reused
	if resumed.SignedIn || !slices.ContainsFunc(resp.Cookies(), func(c *http.Cookie) bool { return c.Name == "coffer_refresh" && c.MaxAge < 0 }) {
		e.t.Errorf("resume with a reused cookie: signed in %v, Set-Cookie %q", resumed.SignedIn, resp.Header.Values("Set-Cookie"))
	}
	e.want(400, call{method: "POST", path: "/api/v1/auth/resume", json: map[string]any{}, hdr: []string{"Cookie", next}, invalid: true}, nil, "invalid_argument")
	e.want(400, call{method: "POST", path: "/api/v1/auth/resume", json: map[string]any{"refresh_token": "x"}, hdr: cookieSession, invalid: true}, nil, "invalid_argument")
	e.want(204, call{method: "POST", path: "/api/v1/auth/logout", json: map[string]any{"refresh_token": s2.RefreshToken}}, nil)

	var s3 session
	e.want(200, call{method: "POST", path: "/api/v1/me/password", token: s.AccessToken,
		json: map[string]any{"old_password": "a good password", "new_password": "a better password"}}, &s3)
	e.want(401, call{method: "GET", path: "/api/v1/me", token: s.AccessToken}, nil, "unauthenticated") // the old session ended
	e.want(401, call{method: "POST", path: "/api/v1/me/password", token: s3.AccessToken,
		json: map[string]any{"old_password": "wrong", "new_password": "whatever password"}}, nil, "unauthenticated")

	// An account that owns files is deleted only with purge.
	e.want(201, call{method: "PUT", path: "/api/v1/buckets/" + e.bucketOf(s3.AccessToken) + "/files/a.txt", token: s3.AccessToken, body: []byte("a"), ctype: "text/plain"}, nil)
	e.want(409, call{method: "DELETE", path: "/api/v1/me", token: s3.AccessToken, json: map[string]any{"password": "a better password"}}, nil, "conflict")
	e.want(204, call{method: "DELETE", path: "/api/v1/me", token: s3.AccessToken, json: map[string]any{"password": "a better password", "purge": true}}, nil)
}

// refreshCookie is the coffer_refresh cookie resp sets, as a Cookie
// header's pair ("" if none).
func refreshCookie(resp *http.Response) string {
	for _, c := range resp.Cookies() {
		if c.Name == "coffer_refresh" && c.Value != "" {
			return c.Name + "=" + c.Value
		}
	}
	return ""
}

func (e *oasEnv) bucketOf(token string) string {
	e.t.Helper()
	var bs struct{ Buckets []struct{ Name string } }
	e.want(200, call{method: "GET", path: "/api/v1/buckets", token: token}, &bs)
	if len(bs.Buckets) == 0 {
		e.t.Fatal("no bucket")
	}
	return bs.Buckets[0].Name
}

// flowVersions: the versioning setting, a file's versions, a version's
// download and removal, restore, the deleted files and undelete.
func flowVersions(e *oasEnv) {
	s, bucket := e.signup("vera@example.com")
	tok := s.AccessToken
	b := "/api/v1/buckets/" + bucket
	var bk struct{ Versioning string }
	if e.want(200, call{method: "PATCH", path: b, token: tok, json: map[string]any{"versioning": "Enabled"}}, &bk); bk.Versioning != "Enabled" {
		e.t.Errorf("versioning %q after enabling", bk.Versioning)
	}
	e.want(400, call{method: "PATCH", path: b, token: tok, json: map[string]any{"versioning": "Off"}, invalid: true}, nil, "invalid_argument")
	var v1, v2 struct {
		VersionID string `json:"version_id"`
	}
	e.want(201, call{method: "PUT", path: b + "/files/v.txt", token: tok, body: []byte("first")}, &v1)
	e.want(201, call{method: "PUT", path: b + "/files/v.txt", token: tok, body: []byte("second")}, &v2)
	var list struct {
		Versions []struct {
			VersionID string `json:"version_id"`
		}
		NextCursor string `json:"next_cursor"`
	}
	e.want(200, call{method: "GET", path: b + "/versions/v.txt?limit=1", token: tok}, &list)
	if len(list.Versions) != 1 || list.Versions[0].VersionID != v2.VersionID || list.NextCursor == "" {
		e.t.Fatalf("first page of versions %+v, want %s and a cursor", list, v2.VersionID)
	}
	e.want(200, call{method: "GET", path: b + "/versions/v.txt?cursor=" + list.NextCursor, token: tok}, nil)
	// ?versions on the download route: 308 to the list (followed).
	e.want(200, call{method: "GET", path: b + "/files/v.txt?versions&limit=1", token: tok}, &list)
	if len(list.Versions) != 1 || list.Versions[0].VersionID != v2.VersionID {
		e.t.Errorf("?versions followed: %+v", list)
	}
	e.want(400, call{method: "GET", path: b + "/versions/v.txt?cursor=!", token: tok}, nil, "invalid_argument")
	e.want(200, call{method: "GET", path: b + "/files/v.txt?version_id=" + v1.VersionID, token: tok}, nil)
	e.want(206, call{method: "GET", path: b + "/files/v.txt?version_id=" + v1.VersionID, token: tok, hdr: []string{"Range", "bytes=0-1"}}, nil)
	e.want(200, call{method: "HEAD", path: b + "/files/v.txt?version_id=" + v1.VersionID, token: tok}, nil)
	e.want(400, call{method: "GET", path: b + "/files/v.txt?version_id=nope", token: tok, invalid: true}, nil, "invalid_argument")
	e.want(404, call{method: "GET", path: b + "/files/v.txt?version_id=" + strings.Repeat("0", 32), token: tok}, nil, "not_found")
	var v3 struct {
		VersionID string `json:"version_id"`
	}
	e.want(201, call{method: "POST", path: b + "/restore", token: tok, json: map[string]any{"key": "v.txt", "version_id": v1.VersionID}}, &v3)
	e.want(409, call{method: "POST", path: b + "/restore", token: tok, json: map[string]any{"key": "v.txt", "version_id": v3.VersionID}}, nil, "conflict")
	e.want(204, call{method: "DELETE", path: b + "/files/v.txt?version_id=" + v2.VersionID, token: tok}, nil)
	e.want(404, call{method: "DELETE", path: b + "/files/v.txt?version_id=" + v2.VersionID, token: tok}, nil, "not_found")
	e.want(204, call{method: "DELETE", path: b + "/files/v.txt", token: tok}, nil)
	var trash struct {
		Files []struct{ Key string }
	}
	if e.want(200, call{method: "GET", path: b + "/trash?limit=10", token: tok}, &trash); len(trash.Files) != 1 || trash.Files[0].Key != "v.txt" {
		e.t.Errorf("trash %+v, want v.txt", trash.Files)
	}
	e.want(200, call{method: "POST", path: b + "/undelete", token: tok, json: map[string]any{"key": "v.txt"}}, nil)
	e.want(409, call{method: "POST", path: b + "/undelete", token: tok, json: map[string]any{"key": "v.txt"}}, nil, "conflict")
	e.want(404, call{method: "POST", path: b + "/undelete", token: tok, json: map[string]any{"key": "never.txt"}}, nil, "not_found")
	e.want(400, call{method: "POST", path: b + "/undelete", token: tok, json: map[string]any{}, invalid: true}, nil, "invalid_argument")
	e.want(403, call{method: "GET", path: "/api/v1/buckets/bob/trash", token: tok}, nil, "permission_denied")
}

func flowFiles(e *oasEnv) {
	s, bucket := e.signup("bob@example.com")
	tok := s.AccessToken
	b := "/api/v1/buckets/" + bucket
	e.want(201, call{method: "POST", path: "/api/v1/buckets", token: tok, json: map[string]any{"name": "bob-extra", "visibility": "private"}}, nil)
	e.want(409, call{method: "POST", path: "/api/v1/buckets", token: tok, json: map[string]any{"name": "bob-extra"}}, nil, "already_exists")
	e.want(200, call{method: "GET", path: "/api/v1/buckets/bob-extra", token: tok}, nil)
	e.want(200, call{method: "PATCH", path: "/api/v1/buckets/bob-extra", token: tok, json: map[string]any{"visibility": "public-read", "encryption": map[string]any{"default": "AES256"}}}, nil)
	e.want(400, call{method: "PATCH", path: "/api/v1/buckets/bob-extra", token: tok, json: map[string]any{}, invalid: true}, nil, "invalid_argument")
	e.want(404, call{method: "GET", path: "/api/v1/buckets/no-such-bucket", token: tok}, nil, "not_found")

	// Uploads: raw, create-only, with a digest, and from a form.
	data := []byte("hello, openapi\n")
	sum := sha256.Sum256(data)
	e.want(201, call{method: "PUT", path: b + "/files/docs/hello.txt", token: tok, body: data, ctype: "text/plain",
		hdr: []string{"X-Checksum-Sha256", hex.EncodeToString(sum[:])}}, nil)
	e.want(201, call{method: "PUT", path: b + "/files/docs/hello.txt", token: tok, body: data, ctype: "text/plain"}, nil)
	e.want(412, call{method: "PUT", path: b + "/files/docs/hello.txt", token: tok, body: data, hdr: []string{"If-None-Match", "*"}}, nil, "precondition_failed")
	e.want(400, call{method: "PUT", path: b + "/files/bad.txt", token: tok, body: data, hdr: []string{"Content-MD5", "AAAAAAAAAAAAAAAAAAAAAA=="}}, nil, "checksum_mismatch")
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	mw.WriteField("prefix", "form/")
	for _, n := range []string{"one.txt", "two.txt"} {
		w, _ := mw.CreateFormFile("files", n)
		w.Write([]byte("form file " + n))
	}
	mw.Close()
	e.want(201, call{method: "POST", path: b + "/files", token: tok, body: form.Bytes(), ctype: mw.FormDataContentType()}, nil)
	e.want(400, call{method: "POST", path: b + "/files", token: tok, body: []byte("not a form"), ctype: "text/plain", invalid: true}, nil, "invalid_argument")

	// Listings, pages and folders.
	var page struct {
		NextCursor string `json:"next_cursor"`
	}
	e.want(200, call{method: "GET", path: b + "/files?limit=1", token: tok}, &page)
	if page.NextCursor == "" {
		e.t.Fatal("no next_cursor")
	}
	e.want(200, call{method: "GET", path: b + "/files?limit=1&cursor=" + page.NextCursor, token: tok}, nil)
	// A folder marker: an empty "name/" object, listed among the folders.
	e.want(201, call{method: "PUT", path: b + "/files/docs/empty/", token: tok, body: []byte{}, hdr: []string{"If-None-Match", "*"}}, nil)
	var folders struct{ Folders []string }
	if e.want(200, call{method: "GET", path: b + "/files?prefix=docs/&delimiter=/", token: tok}, &folders); !slices.Contains(folders.Folders, "docs/empty/") {
		e.t.Errorf("folders %v: no docs/empty/", folders.Folders)
	}
	var inside struct{ Files []struct{ Key string } }
	if e.want(200, call{method: "GET", path: b + "/files?prefix=docs/empty/", token: tok}, &inside); len(inside.Files) != 1 || inside.Files[0].Key != "docs/empty/" {
		e.t.Errorf("the listing of a folder marker's prefix: %+v, want the marker", inside.Files)
	}
	var counts struct {
		Buckets []struct {
			Name           string
			Objects, Bytes int64
		}
	}
	e.want(200, call{method: "GET", path: "/api/v1/buckets", token: tok}, &counts)
	for _, c := range counts.Buckets {
		if want := int64(len(data) + 2*len("form file one.txt")); c.Name == bucket && (c.Objects != 4 || c.Bytes != want) {
			e.t.Errorf("bucket %s counts %d objects, %d bytes; want 4 (the marker too), %d", bucket, c.Objects, c.Bytes, want)
		}
	}
	e.want(200, call{method: "GET", path: b + "/files?delimiter=/", token: tok}, nil)
	e.want(400, call{method: "GET", path: b + "/files?limit=0", token: tok, invalid: true}, nil, "invalid_argument")

	// Downloads: whole, a range, past the end, conditional, HEAD, anonymous.
	file := b + "/files/docs/hello.txt"
	resp := e.want(200, call{method: "GET", path: file + "?download=1", token: tok}, nil)
	etag := resp.Header.Get("ETag")
	e.want(206, call{method: "GET", path: file, token: tok, hdr: []string{"Range", "bytes=0-4"}}, nil)
	e.want(416, call{method: "GET", path: file, token: tok, hdr: []string{"Range", "bytes=100-"}}, nil, "range_not_satisfiable")
	e.want(304, call{method: "GET", path: file, token: tok, hdr: []string{"If-None-Match", etag}}, nil)
	e.want(412, call{method: "GET", path: file, token: tok, hdr: []string{"If-Match", `"nope"`}}, nil, "precondition_failed")
	e.want(200, call{method: "HEAD", path: file, token: tok}, nil)
	e.want(404, call{method: "GET", path: b + "/files/missing.txt", token: tok}, nil, "not_found")
	e.want(401, call{method: "GET", path: file}, nil, "unauthenticated")
	e.want(201, call{method: "PUT", path: "/api/v1/buckets/bob-extra/files/pub.txt", token: tok, body: data}, nil)
	e.want(200, call{method: "GET", path: "/api/v1/buckets/bob-extra/files/pub.txt"}, nil) // public-read
	e.want(409, call{method: "DELETE", path: "/api/v1/buckets/bob-extra", token: tok}, nil, "conflict")

	// Move, copy, delete.
	e.want(200, call{method: "POST", path: b + "/move", token: tok, json: map[string]any{"from": "docs/hello.txt", "to": "docs/moved.txt"}}, nil)
	e.want(201, call{method: "POST", path: b + "/copy", token: tok, json: map[string]any{"from": "docs/moved.txt", "to": "docs/copy.txt"}}, nil)
	e.want(412, call{method: "POST", path: b + "/move", token: tok, json: map[string]any{"from": "docs/moved.txt", "to": "docs/copy.txt"}}, nil, "precondition_failed")
	e.want(201, call{method: "POST", path: b + "/copy", token: tok, json: map[string]any{"from": "docs/copy.txt", "to": "x.txt", "to_bucket": "bob-extra", "overwrite": true}}, nil)
	e.want(404, call{method: "POST", path: b + "/copy", token: tok, json: map[string]any{"from": "nothing", "to": "x"}}, nil, "not_found")
	e.want(204, call{method: "DELETE", path: b + "/files/docs/copy.txt", token: tok}, nil)
	e.want(404, call{method: "DELETE", path: b + "/files/docs/copy.txt", token: tok}, nil, "not_found")

	// Zip and batch delete.
	e.want(200, call{method: "POST", path: b + "/zip", token: tok, json: map[string]any{"keys": []string{"docs/moved.txt"}, "prefixes": []string{"form/"}, "compress": true}}, nil)
	e.want(404, call{method: "POST", path: b + "/zip", token: tok, json: map[string]any{"keys": []string{"nothing"}}}, nil, "not_found")
	e.want(400, call{method: "POST", path: b + "/zip", token: tok, json: map[string]any{}, invalid: true}, nil, "invalid_argument")
	prefixes := manyPrefixes(1001)
	e.wantProblem(413, call{method: "POST", path: b + "/zip", token: tok, json: map[string]any{"prefixes": append(prefixes, prefixes[:10]...)}},
		"zip_too_large", map[string]any{"reason": "zip_too_large", "max_prefixes": 1000.0})
	e.want(200, call{method: "POST", path: b + "/zip", token: tok, json: map[string]any{"prefixes": append(prefixes, "")}}, nil) // "" covers them
	e.wantProblem(413, call{method: "POST", path: b + "/zip", token: tok, json: map[string]any{"keys": []string{strings.Repeat("k", 70<<10)}}},
		"too_large", nil) // the body, not the zip
	e.want(200, call{method: "POST", path: b + "/delete", token: tok, json: map[string]any{"keys": []string{"docs/moved.txt", "gone.txt", "a/../b"}}}, nil)
	e.want(200, call{method: "POST", path: b + "/delete", token: tok, json: map[string]any{"prefix": "form/"}}, nil)
	e.want(400, call{method: "POST", path: b + "/delete", token: tok, json: map[string]any{"keys": []string{"a"}, "prefix": ""}, invalid: true}, nil, "invalid_argument")
	e.want(200, call{method: "POST", path: "/api/v1/buckets/bob-extra/delete", token: tok, json: map[string]any{"prefix": ""}}, nil)
	e.want(204, call{method: "DELETE", path: "/api/v1/buckets/bob-extra", token: tok}, nil)
}

// manyPrefixes returns n prefixes none of which covers another.
func manyPrefixes(n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("p%04d/", i))
	}
	return out
}

func flowKeys(e *oasEnv) {
	s, bucket := e.signup("carol@example.com")
	var k struct {
		ID string `json:"access_key_id"`
	}
	e.want(201, call{method: "POST", path: "/api/v1/keys", token: s.AccessToken, json: map[string]any{"name": "laptop"}}, &k)
	e.want(201, call{method: "POST", path: "/api/v1/keys", token: s.AccessToken}, nil) // no body: no name
	e.want(201, call{method: "POST", path: "/api/v1/keys", token: s.AccessToken, json: map[string]any{"name": "ro",
		"scope": map[string]any{"bucket": "photos", "prefix": "in/", "access": "read"}, "expires_in": 30 * 24 * 3600}}, nil)
	e.want(201, call{method: "POST", path: "/api/v1/keys", token: s.AccessToken, json: map[string]any{
		"scope": map[string]any{"access": "write"}, "expires_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}}, nil)
	e.want(400, call{method: "POST", path: "/api/v1/keys", token: s.AccessToken, json: map[string]any{
		"scope": map[string]any{"prefix": "in/", "access": "read"}}}, nil, "invalid_argument")
	e.want(400, call{method: "POST", path: "/api/v1/keys", token: s.AccessToken, json: map[string]any{
		"scope": map[string]any{"bucket": "photos", "access": "everything"}, "expires_in": 60}, invalid: true}, nil, "invalid_argument")
	e.want(400, call{method: "POST", path: "/api/v1/keys", token: s.AccessToken, json: map[string]any{
		"expires_at": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)}}, nil, "invalid_argument")
	e.want(200, call{method: "GET", path: "/api/v1/keys", token: s.AccessToken}, nil)
	e.want(204, call{method: "DELETE", path: "/api/v1/keys/" + k.ID, token: s.AccessToken}, nil)
	e.want(404, call{method: "DELETE", path: "/api/v1/keys/" + k.ID, token: s.AccessToken}, nil, "not_found")

	// App tokens: made, listed, used on a file route within their scope,
	// refused outside it and on the account's routes, revoked.
	var tok struct {
		ID    string `json:"id"`
		Token string `json:"token"`
	}
	e.want(201, call{method: "POST", path: "/api/v1/tokens", token: s.AccessToken, json: map[string]any{"name": "app",
		"scope": map[string]any{"bucket": bucket, "prefix": "in/", "access": "read-write"}, "expires_in": 3600}}, &tok)
	e.want(201, call{method: "POST", path: "/api/v1/tokens", token: s.AccessToken}, nil)
	e.want(201, call{method: "POST", path: "/api/v1/tokens", token: s.AccessToken, json: map[string]any{
		"scope": map[string]any{"policy": `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::` + bucket + `/*"}]}`}}}, nil)
	e.want(400, call{method: "POST", path: "/api/v1/keys", token: s.AccessToken, json: map[string]any{
		"scope": map[string]any{"policy": `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:Nothing","Resource":"*"}]}`}}}, nil, "invalid_argument")
	e.want(400, call{method: "POST", path: "/api/v1/tokens", token: s.AccessToken, json: map[string]any{"expires_in": 0}, invalid: true}, nil, "invalid_argument")
	e.want(200, call{method: "GET", path: "/api/v1/tokens", token: s.AccessToken}, nil)
	e.want(201, call{method: "PUT", path: "/api/v1/buckets/" + bucket + "/files/in/a.txt", token: tok.Token, body: []byte("by the app"), ctype: "text/plain"}, nil)
	e.want(403, call{method: "PUT", path: "/api/v1/buckets/" + bucket + "/files/out.txt", token: tok.Token, body: []byte("outside"), ctype: "text/plain"}, nil, "permission_denied")
	e.want(403, call{method: "GET", path: "/api/v1/tokens", token: tok.Token}, nil, "permission_denied")
	e.want(403, call{method: "POST", path: "/api/v1/tokens", token: tok.Token}, nil, "permission_denied")
	e.want(204, call{method: "DELETE", path: "/api/v1/tokens/" + tok.ID, token: s.AccessToken}, nil)
	e.want(401, call{method: "GET", path: "/api/v1/buckets/" + bucket + "/files/in/a.txt", token: tok.Token}, nil, "unauthenticated")
	e.want(404, call{method: "DELETE", path: "/api/v1/tokens/" + tok.ID, token: s.AccessToken}, nil, "not_found")
}

func flowShares(e *oasEnv) {
	s, bucket := e.signup("dave@example.com")
	tok := s.AccessToken
	b := "/api/v1/buckets/" + bucket
	for _, k := range []string{"photos/a.txt", "photos/sub/b.txt", "report.txt"} {
		e.want(201, call{method: "PUT", path: b + "/files/" + k, token: tok, body: []byte("contents of " + k), ctype: "text/plain"}, nil)
	}
	type shareOut struct {
		ID    string `json:"id"`
		Token string `json:"token"`
	}
	var file, folder, box shareOut
	e.want(201, call{method: "POST", path: "/api/v1/shares", token: tok, json: map[string]any{"bucket": bucket, "key": "report.txt", "max_downloads": 5, "note": "the report"}}, &file)
	e.want(201, call{method: "POST", path: "/api/v1/shares", token: tok, json: map[string]any{"bucket": bucket, "prefix": "photos/", "password": "open sesame", "expires_in": 3600}}, &folder)
	e.want(201, call{method: "POST", path: "/api/v1/shares", token: tok, json: map[string]any{"bucket": bucket, "prefix": "inbox", "allow_upload": true, "expires_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}}, &box)
	e.want(400, call{method: "POST", path: "/api/v1/shares", token: tok, json: map[string]any{"bucket": bucket, "key": "report.txt", "prefix": "x/"}, invalid: true}, nil, "invalid_argument")
	e.want(404, call{method: "POST", path: "/api/v1/shares", token: tok, json: map[string]any{"bucket": bucket, "key": "missing.txt"}}, nil, "not_found")
	e.want(200, call{method: "GET", path: "/api/v1/shares", token: tok}, nil)
	e.want(200, call{method: "GET", path: "/api/v1/shares/" + file.ID, token: tok}, nil)
	e.want(200, call{method: "PATCH", path: "/api/v1/shares/" + file.ID, token: tok, json: map[string]any{"expires_in": 7200}}, nil)
	e.want(400, call{method: "PATCH", path: "/api/v1/shares/" + file.ID, token: tok, json: map[string]any{}, invalid: true}, nil, "invalid_argument")
	e.want(404, call{method: "GET", path: "/api/v1/shares/nope", token: tok}, nil, "not_found")

	// Anonymous: a file link, a locked folder, its unlock, a drop box.
	e.want(200, call{method: "GET", path: "/s/" + file.Token}, nil)
	e.want(206, call{method: "GET", path: "/s/" + file.Token, hdr: []string{"Range", "bytes=2-"}}, nil)
	e.want(200, call{method: "HEAD", path: "/s/" + file.Token}, nil)
	var info map[string]any
	e.want(200, call{method: "GET", path: "/s/" + file.Token + "?info=1"}, &info)
	if info["kind"] != "file" || info["name"] != "report.txt" || info["downloads_left"] == nil || info["content_type"] != "text/plain" {
		e.t.Errorf("info of a file link: %v", info)
	}
	e.want(401, call{method: "GET", path: "/s/" + folder.Token}, nil, "unauthenticated")
	e.want(401, call{method: "GET", path: "/s/" + folder.Token + "?info=1"}, nil, "unauthenticated")
	e.want(401, call{method: "HEAD", path: "/s/" + folder.Token + "/sub/b.txt"}, nil)
	e.want(401, call{method: "POST", path: "/s/" + folder.Token + "/unlock", json: map[string]any{"password": "wrong"}}, nil, "unauthenticated")
	var g struct{ Grant string }
	e.want(200, call{method: "POST", path: "/s/" + folder.Token + "/unlock", json: map[string]any{"password": "open sesame"}}, &g)
	grant := []string{"X-Share-Grant", g.Grant}
	info = nil
	e.want(200, call{method: "GET", path: "/s/" + folder.Token + "?info=1", hdr: grant}, &info)
	if info["kind"] != "folder" || info["name"] != "photos" || info["size"] != nil || info["downloads_left"] != nil {
		e.t.Errorf("info of a folder link: %v", info)
	}
	var listing struct {
		NextCursor string `json:"next_cursor"`
	}
	e.want(200, call{method: "GET", path: "/s/" + folder.Token + "?limit=1", hdr: grant}, &listing)
	e.want(200, call{method: "GET", path: "/s/" + folder.Token + "?cursor=" + listing.NextCursor, hdr: grant}, nil)
	e.want(200, call{method: "GET", path: "/s/" + folder.Token + "?zip=1&compress=1", hdr: grant}, nil)
	e.want(200, call{method: "GET", path: "/s/" + folder.Token + "/sub/b.txt", hdr: grant}, nil)
	e.want(200, call{method: "HEAD", path: "/s/" + folder.Token + "/sub/b.txt", hdr: grant}, nil)
	e.want(404, call{method: "GET", path: "/s/" + folder.Token + "/nothing.txt", hdr: grant}, nil, "not_found")
	e.want(403, call{method: "PUT", path: "/s/" + folder.Token + "/up.txt", hdr: grant, body: []byte("x")}, nil, "permission_denied")
	info = nil
	e.want(200, call{method: "GET", path: "/s/" + box.Token + "?info=1"}, &info)
	if info["kind"] != "folder" || info["name"] != "inbox" || info["allow_upload"] != true {
		e.t.Errorf("info of a drop box: %v", info)
	}
	e.want(201, call{method: "PUT", path: "/s/" + box.Token + "/drop.txt", body: []byte("dropped"), ctype: "text/plain"}, nil)
	e.want(412, call{method: "PUT", path: "/s/" + box.Token + "/drop.txt", body: []byte("again")}, nil, "precondition_failed")
	e.want(404, call{method: "POST", path: "/s/" + box.Token + "/other", json: map[string]any{"password": "x"}, invalid: true}, nil, "not_found")
	e.want(400, call{method: "POST", path: "/s/" + box.Token + "/unlock", json: map[string]any{"password": "x"}}, nil, "invalid_argument") // no password
	e.want(404, call{method: "GET", path: "/s/no-such-token"}, nil, "not_found")

	// DELETE revokes an active link (it stays listed), deletes a dead one.
	revoked := map[string]any{"reason": "share_unavailable", "state": "revoked"}
	e.want(204, call{method: "DELETE", path: "/api/v1/shares/" + file.ID, token: tok}, nil)
	var sh struct{ State string }
	if e.want(200, call{method: "GET", path: "/api/v1/shares/" + file.ID, token: tok}, &sh); sh.State != "revoked" {
		e.t.Errorf("a deleted active link is %q, want revoked", sh.State)
	}
	e.wantProblem(404, call{method: "GET", path: "/s/" + file.Token}, "share_unavailable", revoked)
	e.wantProblem(404, call{method: "GET", path: "/s/" + file.Token + "?info=1"}, "share_unavailable", revoked)
	e.want(204, call{method: "DELETE", path: "/api/v1/shares/" + file.ID, token: tok}, nil)
	e.want(404, call{method: "GET", path: "/api/v1/shares/" + file.ID, token: tok}, nil, "not_found")
	e.wantProblem(404, call{method: "GET", path: "/s/" + file.Token}, "not_found", nil) // an unknown token now
	e.want(404, call{method: "DELETE", path: "/api/v1/shares/" + file.ID, token: tok}, nil, "not_found")

	// Download grants: within an hour, no password, listed only on request.
	e.want(400, call{method: "POST", path: "/api/v1/shares", token: tok, json: map[string]any{"bucket": bucket, "key": "report.txt", "grant": true}}, nil, "invalid_argument") // no expiry
	e.want(400, call{method: "POST", path: "/api/v1/shares", token: tok, json: map[string]any{"bucket": bucket, "key": "report.txt", "grant": true, "expires_in": 7200}}, nil, "invalid_argument")
	e.want(400, call{method: "POST", path: "/api/v1/shares", token: tok, json: map[string]any{"bucket": bucket, "key": "report.txt", "grant": true, "expires_in": 300, "password": "secret"}}, nil, "invalid_argument")
	var dl, preview shareOut
	e.want(201, call{method: "POST", path: "/api/v1/shares", token: tok, json: map[string]any{"bucket": bucket, "key": "report.txt", "grant": true, "expires_in": 300, "max_downloads": 1}}, &dl)
	e.want(200, call{method: "GET", path: "/s/" + dl.Token + "?download=1"}, nil)
	e.want(201, call{method: "POST", path: "/api/v1/shares", token: tok, json: map[string]any{"bucket": bucket, "prefix": "photos/", "grant": true, "expires_at": time.Now().Add(5 * time.Minute).UTC().Format(time.RFC3339)}}, &preview)
	e.want(404, call{method: "GET", path: "/api/v1/shares/" + dl.ID, token: tok}, nil, "not_found") // spent: the new grant deleted it
	listed := func(grants string) (ids []string) {
		var l struct{ Shares []struct{ ID string } }
		e.want(200, call{method: "GET", path: "/api/v1/shares" + grants, token: tok}, &l)
		for _, s := range l.Shares {
			ids = append(ids, s.ID)
		}
		return ids
	}
	if ids := listed(""); slices.Contains(ids, preview.ID) || !slices.Contains(ids, folder.ID) {
		e.t.Errorf("GET /shares lists %v: want the links without the grant %s", ids, preview.ID)
	}
	if ids := listed("?grants=true"); !slices.Contains(ids, preview.ID) || !slices.Contains(ids, folder.ID) {
		e.t.Errorf("GET /shares?grants=true lists %v: want the grant %s too", ids, preview.ID)
	}
	listed("?grants=false")
	e.want(400, call{method: "GET", path: "/api/v1/shares?grants=maybe", token: tok, invalid: true}, nil, "invalid_argument")
	e.want(200, call{method: "GET", path: "/s/" + preview.Token + "?info=1"}, nil)
	e.want(204, call{method: "DELETE", path: "/api/v1/shares/" + preview.ID, token: tok}, nil) // an active grant is deleted, not revoked
	e.wantProblem(404, call{method: "GET", path: "/s/" + preview.Token}, "not_found", nil)

	// A limit of one download: ranged reads count, a used-up link serves
	// only the resume of the download it counted.
	usedUp := map[string]any{"reason": "share_unavailable", "state": "used_up"}
	var once, onceFolder shareOut
	e.want(201, call{method: "POST", path: "/api/v1/shares", token: tok, json: map[string]any{"bucket": bucket, "key": "report.txt", "max_downloads": 1}}, &once)
	etag := e.want(200, call{method: "GET", path: "/s/" + once.Token}, nil).Header.Get("ETag")
	e.want(206, call{method: "GET", path: "/s/" + once.Token, hdr: []string{"Range", "bytes=3-", "If-Range", etag}}, nil) // its resume
	e.want(206, call{method: "GET", path: "/s/" + once.Token, hdr: []string{"Range", "bytes=5-"}}, nil)
	e.wantProblem(404, call{method: "GET", path: "/s/" + once.Token}, "share_unavailable", usedUp)
	e.wantProblem(404, call{method: "GET", path: "/s/" + once.Token, hdr: []string{"Range", "bytes=1-"}}, "share_unavailable", usedUp) // going back
	e.wantProblem(404, call{method: "GET", path: "/s/" + once.Token, hdr: []string{"If-None-Match", etag}}, "share_unavailable", usedUp)
	e.want(404, call{method: "HEAD", path: "/s/" + once.Token}, nil)
	e.wantProblem(404, call{method: "GET", path: "/s/" + once.Token + "?info=1"}, "share_unavailable", usedUp)
	// info is no resume of a download, however it is asked.
	e.wantProblem(404, call{method: "GET", path: "/s/" + once.Token + "?info=1", hdr: []string{"Range", "bytes=3-"}}, "share_unavailable", usedUp)
	// Used up: deleted.
	e.want(204, call{method: "DELETE", path: "/api/v1/shares/" + once.ID, token: tok}, nil)
	e.want(404, call{method: "GET", path: "/api/v1/shares/" + once.ID, token: tok}, nil, "not_found")
	e.want(201, call{method: "POST", path: "/api/v1/shares", token: tok, json: map[string]any{"bucket": bucket, "prefix": "photos/", "max_downloads": 1}}, &onceFolder)
	e.want(200, call{method: "GET", path: "/s/" + onceFolder.Token + "?zip=1"}, nil)
	e.wantProblem(404, call{method: "GET", path: "/s/" + onceFolder.Token}, "share_unavailable", usedUp)
	e.wantProblem(404, call{method: "GET", path: "/s/" + onceFolder.Token + "?zip=1"}, "share_unavailable", usedUp)
	e.wantProblem(404, call{method: "GET", path: "/s/" + onceFolder.Token + "/a.txt"}, "share_unavailable", usedUp)
	e.want(404, call{method: "HEAD", path: "/s/" + onceFolder.Token + "/a.txt"}, nil)
}

func flowDirectUploads(e *oasEnv) {
	s, bucket := e.signup("erin@example.com")
	tok := s.AccessToken
	var up struct {
		ID    string `json:"upload_id"`
		Parts []struct {
			URL string `json:"url"`
		} `json:"parts"`
	}
	data := []byte("direct upload bytes")
	e.want(201, call{method: "POST", path: "/api/v1/uploads", token: tok, json: map[string]any{"bucket": bucket, "key": "big/file.bin", "size": len(data), "content_type": "application/octet-stream"}}, &up)
	if len(up.Parts) != 1 {
		e.t.Fatalf("parts: %+v", up.Parts)
	}
	// The part goes to the S3 API (not this document's).
	req, _ := http.NewRequest("PUT", up.Parts[0].URL, bytes.NewReader(data))
	resp, err := e.plain.Do(req)
	if err != nil || resp.StatusCode != 200 {
		e.t.Fatalf("part PUT: %v %v", err, resp)
	}
	resp.Body.Close()
	etag := strings.Trim(resp.Header.Get("ETag"), `"`)
	e.want(200, call{method: "GET", path: "/api/v1/uploads/" + up.ID, token: tok}, nil)
	e.want(400, call{method: "POST", path: "/api/v1/uploads/" + up.ID + "/complete", token: tok, json: map[string]any{"parts": []map[string]any{{"part_number": 1, "etag": "wrong"}}}}, nil, "invalid_argument")
	e.want(200, call{method: "POST", path: "/api/v1/uploads/" + up.ID + "/complete", token: tok, json: map[string]any{"parts": []map[string]any{{"part_number": 1, "etag": etag}}}}, nil)
	e.want(404, call{method: "GET", path: "/api/v1/uploads/" + up.ID, token: tok}, nil, "not_found")
	e.want(201, call{method: "POST", path: "/api/v1/uploads", token: tok, json: map[string]any{"bucket": bucket, "key": "aborted.bin", "size": 10 << 20, "part_size": 5 << 20}}, &up)
	e.want(204, call{method: "DELETE", path: "/api/v1/uploads/" + up.ID, token: tok}, nil)
	e.want(400, call{method: "POST", path: "/api/v1/uploads", token: tok, json: map[string]any{"bucket": bucket, "key": "x", "size": 1, "part_size": 1}}, nil, "invalid_argument")
}

func flowTus(e *oasEnv) {
	s, bucket := e.signup("frank@example.com")
	tok := s.AccessToken
	tus := []string{"Tus-Resumable", "1.0.0"}
	e.want(200, call{method: "OPTIONS", path: "/api/v1/tus/"}, nil)
	meta := "bucket " + b64(bucket) + ",key " + b64("tus/file.txt") + ",content-type " + b64("text/plain")
	resp := e.want(201, call{method: "POST", path: "/api/v1/tus/", token: tok, hdr: append([]string{"Upload-Length", "10", "Upload-Metadata", meta}, tus...)}, nil)
	loc := resp.Header.Get("Location")
	i := strings.Index(loc, "/api/v1/tus/")
	if i < 0 {
		e.t.Fatalf("Location %q", loc)
	}
	up := loc[i:]
	e.want(200, call{method: "OPTIONS", path: up}, nil)
	e.want(200, call{method: "HEAD", path: up, token: tok, hdr: tus}, nil)
	e.want(405, call{method: "GET", path: up, token: tok}, nil, "method_not_allowed")
	e.want(409, call{method: "PATCH", path: up, token: tok, body: []byte("12345"), ctype: "application/offset+octet-stream", hdr: append([]string{"Upload-Offset", "3"}, tus...)}, nil)
	e.want(415, call{method: "PATCH", path: up, token: tok, body: []byte("12345"), ctype: "application/octet-stream", hdr: append([]string{"Upload-Offset", "0"}, tus...), invalid: true}, nil)
	e.want(204, call{method: "PATCH", path: up, token: tok, body: []byte("12345"), ctype: "application/offset+octet-stream", hdr: append([]string{"Upload-Offset", "0"}, tus...)}, nil)
	e.want(460, call{method: "PATCH", path: up, token: tok, body: []byte("67890"), ctype: "application/offset+octet-stream",
		hdr: append([]string{"Upload-Offset", "5", "Upload-Checksum", "sha1 " + b64("not the sha1 of it!!")}, tus...)}, nil)
	e.want(204, call{method: "DELETE", path: up, token: tok, hdr: tus}, nil)
	e.want(404, call{method: "HEAD", path: up, token: tok, hdr: tus}, nil)
	e.want(412, call{method: "POST", path: "/api/v1/tus/", token: tok, hdr: []string{"Upload-Length", "10", "Upload-Metadata", meta}, invalid: true}, nil)
}

func b64(s string) string { return base64Std(s) }

func flowAdmin(e *oasEnv) {
	var root session
	e.want(200, call{method: "POST", path: "/api/v1/auth/login", json: map[string]any{"email": "root@example.com", "password": "root password"}}, &root)
	tok := root.AccessToken
	user, _ := e.signup("grace@example.com")
	e.want(403, call{method: "GET", path: "/api/v1/admin/server", token: user.AccessToken}, nil, "permission_denied")
	e.want(401, call{method: "GET", path: "/api/v1/admin/server", invalid: true}, nil, "unauthenticated")
	e.want(200, call{method: "GET", path: "/api/v1/admin/server", token: tok}, nil)
	e.want(403, call{method: "GET", path: "/api/v1/admin/scrub", token: user.AccessToken}, nil, "permission_denied")
	var scrub struct {
		Running  bool
		Findings []any
	}
	if e.want(200, call{method: "GET", path: "/api/v1/admin/scrub", token: tok}, &scrub); scrub.Running || scrub.Findings == nil {
		e.t.Errorf("GET /admin/scrub of a new server: %+v, want no run and an empty list", scrub)
	}
	e.want(403, call{method: "GET", path: "/api/v1/admin/audit", token: user.AccessToken}, nil, "permission_denied")
	e.want(400, call{method: "GET", path: "/api/v1/admin/audit?since=yesterday", token: tok, invalid: true}, nil, "invalid_argument")
	var events struct {
		Enabled bool
		Events  []any
	}
	if e.want(200, call{method: "GET", path: "/api/v1/admin/audit?action=auth.&limit=5", token: tok}, &events); events.Events == nil {
		e.t.Errorf("GET /admin/audit: %+v, want a list", events)
	}
	var me struct{ Admin bool }
	if e.want(200, call{method: "GET", path: "/api/v1/me", token: tok}, &me); !me.Admin {
		e.t.Error("GET /me of an administrator: admin false")
	}

	var page struct {
		NextCursor string `json:"next_cursor"`
	}
	e.want(200, call{method: "GET", path: "/api/v1/admin/users?limit=1", token: tok}, &page)
	e.want(200, call{method: "GET", path: "/api/v1/admin/users?q=example&cursor=" + page.NextCursor, token: tok}, nil)
	var created struct {
		User struct{ ID string } `json:"user"`
	}
	e.want(201, call{method: "POST", path: "/api/v1/admin/users", token: tok, json: map[string]any{"email": "heidi@example.com", "password": "heidi password", "quota_bytes": 1 << 20}}, &created)
	e.want(409, call{method: "POST", path: "/api/v1/admin/users", token: tok, json: map[string]any{"email": "heidi@example.com", "password": "heidi password"}}, nil, "already_exists")
	u := "/api/v1/admin/users/" + created.User.ID
	e.want(200, call{method: "GET", path: u, token: tok}, nil)
	e.want(404, call{method: "GET", path: "/api/v1/admin/users/nobody", token: tok}, nil, "not_found")
	e.want(200, call{method: "PUT", path: u + "/quota", token: tok, json: map[string]any{"quota_bytes": 0}}, nil)
	e.want(400, call{method: "PUT", path: u + "/quota", token: tok, json: map[string]any{}, invalid: true}, nil, "invalid_argument")
	e.want(200, call{method: "GET", path: u + "/limits", token: tok}, nil)
	e.want(200, call{method: "PUT", path: u + "/limits", token: tok, json: map[string]any{"requests": 600, "bytes": 0, "window_seconds": 60}}, nil)
	e.want(200, call{method: "POST", path: u + "/disable", token: tok}, nil)
	e.want(200, call{method: "POST", path: u + "/enable", token: tok}, nil)
	e.want(409, call{method: "POST", path: "/api/v1/admin/users/" + root.UserID + "/disable", token: tok}, nil, "conflict")
	e.want(204, call{method: "POST", path: u + "/password", token: tok, json: map[string]any{"password": "new heidi password"}}, nil)
	e.want(200, call{method: "GET", path: u + "/buckets", token: tok}, nil)
	e.want(200, call{method: "GET", path: u + "/keys", token: tok}, nil)
	e.want(404, call{method: "DELETE", path: u + "/keys/AKNOSUCHKEY", token: tok}, nil, "not_found")
	var key struct {
		ID     string `json:"access_key_id"`
		Secret string `json:"secret_access_key"`
	}
	e.want(201, call{method: "POST", path: "/api/v1/keys", token: user.AccessToken}, &key)
	e.want(204, call{method: "DELETE", path: "/api/v1/admin/users/" + user.UserID + "/keys/" + key.ID, token: tok}, nil)
	e.want(400, call{method: "DELETE", path: u + "?purge=maybe", token: tok, invalid: true}, nil, "invalid_argument")
	e.want(204, call{method: "DELETE", path: u + "?purge=true", token: tok}, nil)

	// Invites.
	var inv struct{ ID string }
	e.want(201, call{method: "POST", path: "/api/v1/admin/invites", token: tok, json: map[string]any{"email": "ivan@example.com", "expires_in": 3600, "uses": 1}}, &inv)
	e.want(400, call{method: "POST", path: "/api/v1/admin/invites", token: tok, json: map[string]any{"expires_in": -1}, invalid: true}, nil, "invalid_argument")
	e.want(200, call{method: "GET", path: "/api/v1/admin/invites", token: tok}, nil)
	e.want(204, call{method: "DELETE", path: "/api/v1/admin/invites/" + inv.ID, token: tok}, nil)
	e.want(204, call{method: "DELETE", path: "/api/v1/admin/invites/" + inv.ID, token: tok}, nil) // revoked already
	e.want(404, call{method: "DELETE", path: "/api/v1/admin/invites/no-such-invite", token: tok}, nil, "not_found")

	// Encryption at rest: rotate, re-wrap, encrypt, the jobs.
	e.want(200, call{method: "POST", path: "/api/v1/admin/kms/rotate", token: tok}, nil)
	e.want(202, call{method: "POST", path: "/api/v1/admin/kms/rewrap", token: tok}, nil)
	e.want(202, call{method: "POST", path: "/api/v1/admin/kms/encrypt", token: tok, json: map[string]any{"all": true}}, nil)
	e.want(404, call{method: "POST", path: "/api/v1/admin/kms/encrypt", token: tok, json: map[string]any{"bucket": "no-such-bucket"}}, nil, "not_found")
	e.want(400, call{method: "POST", path: "/api/v1/admin/kms/encrypt", token: tok, json: map[string]any{"bucket": "b", "all": true}}, nil, "invalid_argument")
	e.want(200, call{method: "GET", path: "/api/v1/admin/kms/jobs", token: tok}, nil)
	e.want(200, call{method: "GET", path: "/api/v1/admin/kms/jobs/rewrap", token: tok}, nil)
	e.want(404, call{method: "GET", path: "/api/v1/admin/kms/jobs/nothing", token: tok}, nil, "not_found")

	// The SSE-KMS key allow list (grace keeps her grants: she is not deleted).
	grant := "/api/v1/admin/users/" + user.UserID + "/kms-keys/"
	var grants struct {
		Grants []struct {
			Key    string `json:"key"`
			UserID string `json:"user_id"`
		} `json:"grants"`
	}
	e.want(200, call{method: "GET", path: "/api/v1/admin/kms/grants", token: tok}, &grants)
	var first, again struct {
		CreatedAt string `json:"created_at"`
	}
	e.want(200, call{method: "PUT", path: grant + "alias/finance", token: tok}, &first) // a name with a /
	e.want(200, call{method: "PUT", path: grant + "alias/finance", token: tok}, &again) // again: no change
	if first.CreatedAt != again.CreatedAt {
		e.t.Errorf("a grant allowed again answers created_at %s, first %s", again.CreatedAt, first.CreatedAt)
	}
	e.want(403, call{method: "PUT", path: grant + "alias/finance", token: user.AccessToken}, nil, "permission_denied")
	e.want(404, call{method: "PUT", path: "/api/v1/admin/users/nobody/kms-keys/finance", token: tok}, nil, "not_found")
	e.want(400, call{method: "PUT", path: grant + "two%20words", token: tok, invalid: true}, nil, "invalid_argument")
	e.want(200, call{method: "GET", path: "/api/v1/admin/kms/grants", token: tok}, &grants)
	if len(grants.Grants) != 1 || grants.Grants[0].Key != "alias/finance" || grants.Grants[0].UserID != user.UserID {
		e.t.Fatalf("grants: %+v", grants.Grants)
	}
	e.want(204, call{method: "DELETE", path: grant + "alias/finance", token: tok}, nil)
	e.want(404, call{method: "DELETE", path: grant + "alias/finance", token: tok}, nil, "not_found")

	// Gateway buckets: one over this server's own S3 API.
	e.want(200, call{method: "GET", path: "/api/v1/admin/gateways", token: tok}, nil)
	e.want(400, call{method: "POST", path: "/api/v1/admin/gateways", token: tok, json: map[string]any{"name": "gw", "url": "s3://b?secret_key=x", "owner": "grace@example.com"}}, nil, "invalid_argument")
	var gk struct {
		ID     string `json:"access_key_id"`
		Secret string `json:"secret_access_key"`
	}
	e.want(201, call{method: "POST", path: "/api/v1/keys", token: user.AccessToken}, &gk)
	creds := filepath.Join(e.t.TempDir(), "gw.creds")
	if err := os.WriteFile(creds, []byte("access_key="+gk.ID+"\nsecret_key="+gk.Secret+"\n"), 0o600); err != nil {
		e.t.Fatal(err)
	}
	graceBucket := e.bucketOf(user.AccessToken)
	e.want(201, call{method: "PUT", path: "/api/v1/buckets/" + graceBucket + "/files/in/mirror.txt", token: user.AccessToken, body: []byte("mirrored"), ctype: "text/plain"}, nil)
	gwURL := "s3://" + graceBucket + "?endpoint=" + e.s3 + "&region=us-east-1&mode=ro&credentials_file=" + creds
	e.want(201, call{method: "POST", path: "/api/v1/admin/gateways", token: tok, json: map[string]any{"name": "gw-mirror", "url": gwURL, "owner": "grace@example.com"}}, nil)
	// A gateway bucket's listings (the backend's carry no content type).
	e.want(200, call{method: "GET", path: "/api/v1/buckets/gw-mirror/files", token: user.AccessToken}, nil)
	e.want(200, call{method: "GET", path: "/api/v1/buckets", token: user.AccessToken}, nil) // a gateway bucket has no counts
	var gwShare struct{ Token string }
	e.want(201, call{method: "POST", path: "/api/v1/shares", token: user.AccessToken, json: map[string]any{"bucket": "gw-mirror", "prefix": "in/"}}, &gwShare)
	e.want(200, call{method: "GET", path: "/s/" + gwShare.Token}, nil)
	e.want(200, call{method: "GET", path: "/api/v1/admin/gateways", token: tok}, nil)
	e.want(204, call{method: "DELETE", path: "/api/v1/admin/gateways/gw-mirror", token: tok}, nil)
	e.want(404, call{method: "DELETE", path: "/api/v1/admin/gateways/gw-mirror", token: tok}, nil, "not_found")
}

func flowErrors(e *oasEnv) {
	s, bucket := e.signup("judy@example.com")
	tok := s.AccessToken
	e.want(400, call{method: "POST", path: "/api/v1/buckets", token: tok, body: []byte(`{"name":`), ctype: "application/json", invalid: true}, nil, "invalid_argument")
	e.want(400, call{method: "POST", path: "/api/v1/buckets", token: tok, json: map[string]any{"name": "judy-x", "color": "red"}, invalid: true}, nil, "invalid_argument")
	e.want(413, call{method: "POST", path: "/api/v1/buckets", token: tok, json: map[string]any{"name": strings.Repeat("x", 70<<10)}}, nil, "too_large")
	e.want(401, call{method: "GET", path: "/api/v1/buckets", token: "not-a-token"}, nil, "unauthenticated")
	e.want(401, call{method: "GET", path: "/api/v1/buckets", invalid: true}, nil, "unauthenticated")
	other, _ := e.signup("mallory@example.com")
	e.want(403, call{method: "GET", path: "/api/v1/buckets/" + bucket + "/files", token: other.AccessToken}, nil, "permission_denied")
	e.want(403, call{method: "PUT", path: "/api/v1/buckets/" + bucket + "/files/x.txt", token: other.AccessToken, body: []byte("x")}, nil, "permission_denied")
}

func base64Std(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
