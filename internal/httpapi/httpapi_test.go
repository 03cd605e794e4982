package httpapi

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coffer-storage/coffer/internal/config"
	"github.com/coffer-storage/coffer/internal/errcode"
)

// testConfig is the file API's default configuration (config.Defaults())
// changed by change, if not nil.
func testConfig(change func(*Config)) Config {
	c := ConfigFrom(config.Defaults())
	if change != nil {
		change(&c)
	}
	return c
}

func TestStatusTableComplete(t *testing.T) {
	for _, c := range errcode.All() {
		if _, ok := statusOf[c]; !ok {
			t.Errorf("errcode %v has no HTTP status in statusOf", c)
		}
	}
}

func TestRouter(t *testing.T) {
	api := New(Services{}, testConfig(nil), nil)
	rt := newRouter(api.Routes())
	tests := []struct {
		method, path string
		pattern      string
		code         errcode.Code
		bucket, key  string
	}{
		{"GET", "/api/v1/me", "/api/v1/me", errcode.Unknown, "", ""},
		{"HEAD", "/api/v1/buckets/b1/files/a/b.txt", "/api/v1/buckets/{bucket}/files/{key...}", errcode.Unknown, "b1", "a/b.txt"},
		{"PUT", "/api/v1/buckets/b1/files/a//b%2Fc/", "/api/v1/buckets/{bucket}/files/{key...}", errcode.Unknown, "b1", "a//b/c/"},
		{"PUT", "/api/v1/buckets/b1/files/%E6%97%A5%20x", "/api/v1/buckets/{bucket}/files/{key...}", errcode.Unknown, "b1", "日 x"},
		{"GET", "/api/v1/buckets/b1/files", "/api/v1/buckets/{bucket}/files", errcode.Unknown, "b1", ""},
		{"GET", "/api/v1/buckets/b1/files/", "", errcode.NotFound, "", ""},
		{"GET", "/api/v1/buckets//files", "", errcode.NotFound, "", ""},
		{"PATCH", "/api/v1/me", "", errcode.MethodNotAllowed, "", ""},
		{"GET", "/api/v2/me", "", errcode.NotFound, "", ""},
		{"GET", "/api/v1/me/extra", "", errcode.NotFound, "", ""},
	}
	for _, tc := range tests {
		r := httptest.NewRequest(tc.method, "http://x"+tc.path, nil)
		route, err := rt.match(r)
		if got := errcode.Of(err); got != tc.code || (err == nil) != (tc.code == errcode.Unknown) {
			t.Errorf("%s %s: err %v, want code %v", tc.method, tc.path, err, tc.code)
			continue
		}
		if err != nil {
			continue
		}
		if route.Pattern != tc.pattern || r.PathValue("bucket") != tc.bucket || r.PathValue("key") != tc.key {
			t.Errorf("%s %s: pattern %q bucket %q key %q", tc.method, tc.path, route.Pattern, r.PathValue("bucket"), r.PathValue("key"))
		}
	}
}

func FuzzRouter(f *testing.F) {
	api := New(Services{}, testConfig(nil), nil)
	rt := newRouter(api.Routes())
	for _, p := range []string{"/api/v1/me", "/api/v1/buckets/b/files/a%2F%2F/b", "/api/v1/buckets/b/files/%zz", "/api/v1/buckets/b/move"} {
		f.Add("GET", p)
	}
	f.Fuzz(func(t *testing.T, method, path string) {
		r, err := http.NewRequest(method, "http://x"+path, nil)
		if err != nil {
			return
		}
		route, err := rt.match(r)
		if err == nil && route.Pattern == "" {
			t.Fatalf("matched without a pattern: %s %q", method, path)
		}
		if err == nil && strings.Contains(route.Pattern, "{key...}") && r.PathValue("key") == "" {
			t.Fatalf("empty key matched: %q", path)
		}
	})
}

func TestClientDigests(t *testing.T) {
	h := http.Header{}
	h.Set("Content-Digest", "sha-512=:AAAA:, sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:")
	sha, md5, err := clientDigests(h)
	if err != nil || len(sha) != 32 || md5 != nil {
		t.Fatalf("%x %x %v", sha, md5, err)
	}
	h.Set("X-Checksum-Sha256", strings.Repeat("00", 32))
	if _, _, err := clientDigests(h); !errcode.Is(err, errcode.InvalidArgument) {
		t.Fatalf("disagreeing digests: %v", err)
	}
	for _, bad := range []string{"sha-256=AAAA", "sha-256=:AAAA:", "garbage", "sha-256=:!!!:"} {
		h := http.Header{}
		h.Set("Content-Digest", bad)
		if _, _, err := clientDigests(h); !errcode.Is(err, errcode.InvalidArgument) {
			t.Errorf("Content-Digest %q: %v", bad, err)
		}
	}
}

func FuzzClientDigests(f *testing.F) {
	f.Add("sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:", "", "")
	f.Fuzz(func(t *testing.T, cd, xs, cm string) {
		h := http.Header{}
		h.Set("Content-Digest", cd)
		h.Set("X-Checksum-Sha256", xs)
		h.Set("Content-MD5", cm)
		sha, md5, err := clientDigests(h)
		if err == nil && (sha != nil && len(sha) != 32 || md5 != nil && len(md5) != 16) {
			t.Fatalf("bad digest lengths %d %d", len(sha), len(md5))
		}
	})
}

// failingBody yields data, then err.
type failingBody struct {
	data string
	err  error
}

func (b *failingBody) Read(p []byte) (int, error) {
	if b.data == "" {
		return 0, b.err
	}
	n := copy(p, b.data)
	b.data = b.data[n:]
	return n, nil
}

// TestDecodeJSONErrors: a body that cannot be read keeps the reader's code
// (a stalled body is a 408, not a 400 "invalid JSON").
func TestDecodeJSONErrors(t *testing.T) {
	api := New(Services{}, testConfig(func(c *Config) { c.MaxJSONBody = 64 }), nil)
	for _, tc := range []struct {
		name string
		body io.Reader
		want errcode.Code
	}{
		{"valid", strings.NewReader(`{"email":"a"}`), errcode.Unknown},
		{"invalid", strings.NewReader(`{"email":`), errcode.InvalidArgument},
		{"empty", strings.NewReader(``), errcode.InvalidArgument},
		{"too large", strings.NewReader(`{"email":"` + strings.Repeat("a", 100) + `"}`), errcode.TooLarge},
		{"stalled past the deadline", &failingBody{`{"email":`, errcode.New(errcode.Timeout, "request body still arriving at the request deadline")}, errcode.Timeout},
		{"client gone", &failingBody{`{"em`, errcode.New(errcode.Canceled, "client went away")}, errcode.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/api/v1/auth/login", tc.body)
			var v struct{ Email string }
			err := api.sessions.decodeJSON(r, &v)
			if got, want := errcode.Of(err), tc.want; got != want || (err == nil) != (want == errcode.Unknown) {
				t.Errorf("decodeJSON: %v (code %v), want code %v", err, got, want)
			}
		})
	}
}

// TestClassifyShareRoutes: requests through a share link are classified
// with a stable key of the link (for per-link limits), never as carrying
// credentials, and other routes carry no share key.
func TestClassifyShareRoutes(t *testing.T) {
	api := New(Services{}, testConfig(nil), nil)
	for _, tc := range []struct {
		method, path, auth string
		share              bool
		route              string
	}{
		{"GET", "/s/tokenA", "", true, "GET /s/{token}"},
		{"GET", "/s/tokenA/a/b.txt", "Bearer x", true, "GET /s/{token}/{path...}"},
		{"PUT", "/s/tokenA/up.txt", "", true, "PUT /s/{token}/{path...}"},
		{"POST", "/s/tokenA/unlock", "", true, "POST /s/{token}/{path...}"},
		{"GET", "/api/v1/me", "Bearer x", false, "GET /api/v1/me"},
	} {
		r := httptest.NewRequest(tc.method, "http://x"+tc.path, nil)
		if tc.auth != "" {
			r.Header.Set("Authorization", tc.auth)
		}
		k := api.Classify(r)
		if k.Route != tc.route || (k.Share != "") != tc.share {
			t.Errorf("%s %s: route %q share %q", tc.method, tc.path, k.Route, k.Share)
		}
		if tc.share && (k.Credentials || !strings.HasPrefix(k.Share, "share:") || strings.Contains(k.Share, "tokenA")) {
			t.Errorf("%s %s: credentials %v share %q: want no credentials and a key that is not the token", tc.method, tc.path, k.Credentials, k.Share)
		}
	}
	a := api.Classify(httptest.NewRequest("GET", "http://x/s/tokenA", nil)).Share
	b := api.Classify(httptest.NewRequest("GET", "http://x/s/tokenA/x", nil)).Share
	c := api.Classify(httptest.NewRequest("GET", "http://x/s/tokenB", nil)).Share
	if a != b || a == c {
		t.Errorf("share keys %q %q %q: want one key per link", a, b, c)
	}
}

// TestClassifyCompleteFinishes: the direct upload's complete is marked as
// finishing admitted work (not shed by the adaptive limit); the other
// steps of the flow are not.
func TestClassifyCompleteFinishes(t *testing.T) {
	api := New(Services{}, testConfig(nil), nil)
	for _, tc := range []struct {
		method, path string
		finishes     bool
	}{
		{"POST", "/api/v1/uploads/u1/complete", true},
		{"POST", "/api/v1/uploads", false},
		{"DELETE", "/api/v1/uploads/u1", false},
		{"PUT", "/api/v1/buckets/b/files/k", false},
		{"POST", "/api/v1/auth/refresh", false},
	} {
		r := httptest.NewRequest(tc.method, "http://x"+tc.path, nil)
		r.Header.Set("Authorization", "Bearer x")
		if k := api.Classify(r); k.Finishes != tc.finishes {
			t.Errorf("%s %s: %+v, want Finishes %v", tc.method, tc.path, k, tc.finishes)
		}
	}
}
