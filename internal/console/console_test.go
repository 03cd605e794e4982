package console

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
)

func testFS() fstest.MapFS {
	return fstest.MapFS{
		"index.html":             {Data: []byte("<!doctype html><title>index</title>")},
		"index.html.gz":          {Data: []byte("gz-index")},
		"index.html.br":          {Data: []byte("br-index")},
		"assets/main-AB12.js":    {Data: []byte("console.log(1)")},
		"assets/main-AB12.js.gz": {Data: []byte("gz-js")},
		"assets/main-AB12.css":   {Data: []byte("body{}")},
		"robots.txt":             {Data: []byte("User-agent: *")},
	}
}

var notFound = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	http.Error(w, "fallback", http.StatusNotFound)
})

func serve(t *testing.T, h http.Handler, method, path, acceptEncoding string) *http.Response {
	t.Helper()
	r := httptest.NewRequest(method, path, nil)
	if acceptEncoding != "" {
		r.Header.Set("Accept-Encoding", acceptEncoding)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Result()
}

func TestServe(t *testing.T) {
	h := NewFS(testFS(), notFound)
	for _, tc := range []struct {
		name, method, path, ae     string
		status                     int
		body, cache, ctype, encode string
	}{
		{"root is index", "GET", "/", "", 200, "<!doctype html><title>index</title>", "no-cache", "text/html; charset=utf-8", ""},
		{"index by name", "GET", "/index.html", "", 200, "<!doctype html><title>index</title>", "no-cache", "text/html; charset=utf-8", ""},
		{"route falls back to index", "GET", "/b/photos/2024/", "", 200, "<!doctype html><title>index</title>", "no-cache", "text/html; charset=utf-8", ""},
		{"route with encoded key", "GET", "/b/x/a%20b/c", "", 200, "<!doctype html><title>index</title>", "no-cache", "text/html; charset=utf-8", ""},
		{"share page", "GET", "/share", "", 200, "<!doctype html><title>index</title>", "no-cache", "text/html; charset=utf-8", ""},
		{"asset is immutable", "GET", "/assets/main-AB12.js", "", 200, "console.log(1)", "public, max-age=31536000, immutable", "text/javascript; charset=utf-8", ""},
		{"css", "GET", "/assets/main-AB12.css", "", 200, "body{}", "public, max-age=31536000, immutable", "text/css; charset=utf-8", ""},
		{"gzip variant", "GET", "/assets/main-AB12.js", "gzip, deflate", 200, "gz-js", "public, max-age=31536000, immutable", "text/javascript; charset=utf-8", "gzip"},
		{"brotli preferred", "GET", "/", "gzip, br", 200, "br-index", "no-cache", "text/html; charset=utf-8", "br"},
		{"brotli refused with q=0", "GET", "/", "br;q=0, gzip", 200, "gz-index", "no-cache", "text/html; charset=utf-8", "gzip"},
		{"no br variant: gzip", "GET", "/assets/main-AB12.js", "br, gzip", 200, "gz-js", "public, max-age=31536000, immutable", "text/javascript; charset=utf-8", "gzip"},
		{"no variant at all", "GET", "/assets/main-AB12.css", "br, gzip", 200, "body{}", "public, max-age=31536000, immutable", "text/css; charset=utf-8", ""},
		{"HEAD has no body", "HEAD", "/", "", 200, "", "no-cache", "text/html; charset=utf-8", ""},
		{"missing asset is 404", "GET", "/assets/main-ZZ.js", "", 404, "fallback\n", "", "", ""},
		{"missing file with a dot is 404", "GET", "/favicon.ico", "", 404, "fallback\n", "", "", ""},
		{"POST goes to the fallback", "POST", "/", "", 404, "fallback\n", "", "", ""},
		{"dot-dot stays in the tree: a route", "GET", "/../../etc/passwd", "", 200, "<!doctype html><title>index</title>", "no-cache", "text/html; charset=utf-8", ""},
		{"dot-dot stays in the tree: a file", "GET", "/../../robots.txt", "", 200, "User-agent: *", "no-cache", "text/plain; charset=utf-8", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := serve(t, h, tc.method, tc.path, tc.ae)
			body, _ := io.ReadAll(res.Body)
			if got, want := res.StatusCode, tc.status; got != want {
				t.Fatalf("status: got %d, want %d", got, want)
			}
			if got, want := string(body), tc.body; got != want {
				t.Errorf("body: got %q, want %q", got, want)
			}
			if tc.status != 200 {
				if got := res.Header.Get("Content-Security-Policy"); got != "" {
					t.Errorf("fallback answer carries the console CSP %q", got)
				}
				return
			}
			if got, want := res.Header.Get("Cache-Control"), tc.cache; got != want {
				t.Errorf("Cache-Control: got %q, want %q", got, want)
			}
			if got, want := res.Header.Get("Content-Type"), tc.ctype; got != want {
				t.Errorf("Content-Type: got %q, want %q", got, want)
			}
			if got, want := res.Header.Get("Content-Encoding"), tc.encode; got != want {
				t.Errorf("Content-Encoding: got %q, want %q", got, want)
			}
			if got, want := res.Header.Get("Vary"), "Accept-Encoding"; got != want {
				t.Errorf("Vary: got %q, want %q", got, want)
			}
			if got, want := res.Header.Get("Content-Security-Policy"), CSP; got != want {
				t.Errorf("CSP: got %q, want %q", got, want)
			}
			if got, want := res.Header.Get("X-Content-Type-Options"), "nosniff"; got != want {
				t.Errorf("X-Content-Type-Options: got %q, want %q", got, want)
			}
		})
	}
}

// TestCSPIsStrict checks the policy's promises: no inline script, no
// eval, nothing from another origin, no framing of the console.
func TestCSPIsStrict(t *testing.T) {
	directives := map[string]string{}
	for _, d := range strings.Split(CSP, ";") {
		name, value, _ := strings.Cut(strings.TrimSpace(d), " ")
		directives[name] = value
	}
	if got, want := directives["script-src"], "'self'"; got != want {
		t.Errorf("script-src: got %q, want %q", got, want)
	}
	if got, want := directives["default-src"], "'none'"; got != want {
		t.Errorf("default-src: got %q, want %q", got, want)
	}
	if got, want := directives["frame-ancestors"], "'none'"; got != want {
		t.Errorf("frame-ancestors: got %q, want %q", got, want)
	}
	if got, want := directives["connect-src"], "'self'"; got != want {
		t.Errorf("connect-src: got %q, want %q", got, want)
	}
	for name, value := range directives {
		for _, bad := range []string{"'unsafe-inline'", "'unsafe-eval'", "*", "http:", "https:", "'wasm-unsafe-eval'"} {
			if strings.Contains(" "+value+" ", " "+bad+" ") {
				t.Errorf("%s allows %s", name, bad)
			}
		}
	}
}

// TestEmbeddedBuild checks the committed build: an index.html naming a
// script and a stylesheet that exist, with precompressed variants.
func TestEmbeddedBuild(t *testing.T) {
	if !Available() {
		t.Fatal("internal/console/dist has no index.html: run scripts/build-console.sh")
	}
	h := New(notFound)
	res := serve(t, h, "GET", "/", "")
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("GET /: %d", res.StatusCode)
	}
	if strings.Contains(string(body), "<script>") || strings.Contains(string(body), "style=") {
		t.Errorf("index.html has inline script or style, which the CSP refuses:\n%s", body)
	}
	var assets []string
	for _, part := range strings.Split(string(body), `"`) {
		if strings.HasPrefix(part, "/assets/") {
			assets = append(assets, part)
		}
	}
	if got, want := len(assets), 2; got != want {
		t.Fatalf("index.html names %d assets (%q), want %d", got, assets, want)
	}
	for _, a := range assets {
		for _, ae := range []string{"", "gzip", "br"} {
			res := serve(t, h, "GET", a, ae)
			if got, want := res.StatusCode, 200; got != want {
				t.Errorf("GET %s (Accept-Encoding %q): got %d, want %d", a, ae, got, want)
			}
			if got, want := res.Header.Get("Content-Encoding"), ae; got != want {
				t.Errorf("GET %s: Content-Encoding got %q, want %q", a, got, want)
			}
		}
	}
}

func FuzzAccepts(f *testing.F) {
	for _, s := range []string{"", "gzip", "br;q=0", "gzip, br;q=0.5", "identity;q=1, *;q=0", "br ; q = 0", ";;,,q="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		// Never panics; a coding listed with q=0 is never accepted.
		if accepts(header, "br") && strings.TrimSpace(header) == "br;q=0" {
			t.Fatalf("accepts(%q, br)", header)
		}
		_ = accepts(header, "gzip")
	})
}
