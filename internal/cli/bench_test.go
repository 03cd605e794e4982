package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// lyingFileAPI implements just enough of the file API for upload-proxy:
// signup, login, refresh (with reuse detection), list, upload, download
// and /healthz. With dropEvery > 0 it acknowledges every upload but
// forgets every dropEvery-th one.
type lyingFileAPI struct {
	dropEvery int

	mu      sync.Mutex
	users   map[string]string // email → bucket
	access  map[string]string // access token → bucket
	refresh map[string]string // live refresh token → bucket
	used    map[string]bool   // rotated refresh tokens
	files   map[string][]byte // bucket/key → content
	uploads int
	reused  int
}

func newLyingFileAPI(dropEvery int) *lyingFileAPI {
	return &lyingFileAPI{dropEvery: dropEvery, users: map[string]string{}, access: map[string]string{},
		refresh: map[string]string{}, used: map[string]bool{}, files: map[string][]byte{}}
}

func token() string {
	b := make([]byte, 12)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func (f *lyingFileAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	reply := func(status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(v)
	}
	problem := func(status int, code string) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"status":%d,"code":%q}`, status, code)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	pair := func(bucket string) map[string]any {
		a, rt := token(), token()
		f.access[a], f.refresh[rt] = bucket, bucket
		return map[string]any{"access_token": a, "refresh_token": rt, "token_type": "Bearer", "expires_in": 900}
	}
	var body struct {
		Email        string `json:"email"`
		Password     string `json:"password"`
		RefreshToken string `json:"refresh_token"`
	}
	if r.Method == http.MethodPost {
		json.NewDecoder(r.Body).Decode(&body)
	}
	switch p := r.URL.Path; {
	case p == "/healthz":
		io.WriteString(w, "ok")
	case p == "/api/v1/auth/signup":
		bucket := "b" + token()[:10]
		f.users[body.Email] = bucket
		reply(201, map[string]any{"user": map[string]any{"email": body.Email}, "bucket": map[string]any{"name": bucket}})
	case p == "/api/v1/auth/login":
		bucket, ok := f.users[body.Email]
		if !ok {
			problem(401, "unauthenticated")
			return
		}
		reply(200, pair(bucket))
	case p == "/api/v1/auth/refresh":
		bucket, ok := f.refresh[body.RefreshToken]
		if !ok {
			if f.used[body.RefreshToken] {
				f.reused++
			}
			problem(401, "unauthenticated")
			return
		}
		delete(f.refresh, body.RefreshToken)
		f.used[body.RefreshToken] = true
		reply(200, pair(bucket))
	case strings.HasPrefix(p, "/api/v1/buckets/"):
		bucket, ok := f.access[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		rest := strings.TrimPrefix(p, "/api/v1/buckets/"+bucket)
		if !ok || !strings.HasPrefix(p, "/api/v1/buckets/"+bucket+"/") {
			problem(401, "unauthenticated")
			return
		}
		switch {
		case rest == "/files" && r.Method == http.MethodGet:
			reply(200, map[string]any{"files": []any{}})
		case strings.HasPrefix(rest, "/files/") && r.Method == http.MethodPut:
			b, _ := io.ReadAll(r.Body)
			sum := sha256.Sum256(b)
			if r.Header.Get("X-Checksum-Sha256") != hex.EncodeToString(sum[:]) {
				problem(400, "checksum_mismatch")
				return
			}
			f.uploads++
			if f.dropEvery == 0 || f.uploads%f.dropEvery != 0 {
				f.files[bucket+rest] = b
			}
			reply(201, map[string]any{"key": strings.TrimPrefix(rest, "/files/"), "size": len(b), "sha256": hex.EncodeToString(sum[:])})
		case strings.HasPrefix(rest, "/files/") && r.Method == http.MethodGet:
			b, ok := f.files[bucket+rest]
			if !ok {
				problem(404, "not_found")
				return
			}
			w.Write(b)
		default:
			problem(404, "not_found")
		}
	default:
		problem(404, "not_found")
	}
}

func runBench(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Run(context.Background(), append([]string{"bench"}, args...), Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }})
	return code, out.String(), errb.String()
}

func TestBenchAuditCatchesALyingServer(t *testing.T) {
	api := newLyingFileAPI(10)
	srv := httptest.NewServer(api)
	defer srv.Close()
	jsonPath := filepath.Join(t.TempDir(), "report.json")
	code, stdout, stderr := runBench(t, "upload-proxy", "--target", srv.URL, "--vus", "4", "--users", "2",
		"--duration", "800ms", "--size", "4KiB", "--metrics-url", "off", "--json", jsonPath)
	if code == 0 {
		t.Fatalf("exit status 0 although every 10th upload was dropped\n%s\n%s", stdout, stderr)
	}
	if !strings.Contains(stderr, "audit failed") || !strings.Contains(stdout, "missing") {
		t.Errorf("no audit failure reported:\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Requests struct{ Total, Failed int64 }
		Audit    struct{ Acknowledged, Verified, Missing, Corrupt int64 }
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	a := rep.Audit
	if a.Acknowledged < 10 || a.Missing != a.Acknowledged/10 || a.Verified != a.Acknowledged-a.Missing || a.Corrupt != 0 {
		t.Errorf("audit = %+v, want a tenth of the acknowledged uploads missing", a)
	}
	if rep.Requests.Failed != 0 {
		t.Errorf("%d requests failed: the lie is only visible to the audit", rep.Requests.Failed)
	}
	if api.reused != 0 {
		t.Errorf("%d refresh tokens were presented twice: sessions must not be shared", api.reused)
	}
}

func TestBenchHonestServerPasses(t *testing.T) {
	srv := httptest.NewServer(newLyingFileAPI(0))
	defer srv.Close()
	htmlPath := filepath.Join(t.TempDir(), "report.html")
	code, stdout, stderr := runBench(t, "--target", srv.URL, "upload-proxy", "--vus", "3", "--duration", "500ms",
		"--size", "1KiB", "--metrics-url", "off", "--html", htmlPath)
	if code != 0 {
		t.Fatalf("exit status %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "audit") || !strings.Contains(stdout, "OK") {
		t.Errorf("summary lacks the audit verdict:\n%s", stdout)
	}
	page, err := os.ReadFile(htmlPath)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(page, []byte("<svg")); n < 4 {
		t.Errorf("HTML report has %d charts, want at least 4", n)
	}
	for _, bad := range []string{"<script src", "<link", "https://", "@import"} {
		if bytes.Contains(page, []byte(bad)) {
			t.Errorf("HTML report is not self-contained: contains %q", bad)
		}
	}
}

func TestBenchUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"nope", "--target", "http://127.0.0.1:1"},
		{"upload-proxy"},
		{"s3-put", "--s3-target", "http://127.0.0.1:1"},
		{"ping", "--target", "http://127.0.0.1:1", "--stages", "1s:x"},
		{"ping", "--target", "http://127.0.0.1:1", "--stages", "1s:3", "--vus", "2"},
		{"ping", "--target", "http://127.0.0.1:1", "--s3-payload", "maybe"},
		{"ping", "--target", "http://127.0.0.1:1", "extra"},
		{"ping", "--target", "http://127.0.0.1:1", "--keep", "--cleanup"},
	} {
		if code, _, stderr := runBench(t, args...); code != 2 {
			t.Errorf("coffer bench %v: exit %d, want 2 (usage)\n%s", args, code, stderr)
		}
	}
}

// TestBenchHelp: flags spelled --name as in docs/bench.md, with the
// variables bench reads named in the help.
func TestBenchHelp(t *testing.T) {
	code, help, stderr := runBench(t, "-h")
	if code != 0 || stderr != "" {
		t.Fatalf("coffer bench -h: exit %d, stderr %q, want 0 and the help on stdout", code, stderr)
	}
	for _, want := range []string{"\n  --cleanup\n", "\n  --keep\n", "\n  --target string\n", "env COFFER_BENCH_ACCESS_KEY",
		"env COFFER_BENCH_COMPARE_SECRET_KEY", "\n  --admin-token string\n", "env COFFER_BENCH_ADMIN_TOKEN"} {
		if !strings.Contains(help, want) {
			t.Errorf("help lacks %q:\n%s", want, help)
		}
	}
	for line := range strings.Lines(help) {
		if l := strings.TrimLeft(line, " "); strings.HasPrefix(l, "-") && !strings.HasPrefix(l, "--") {
			t.Errorf("flag spelled with one dash: %q", line)
		}
	}
}
