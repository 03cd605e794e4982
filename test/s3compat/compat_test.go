// Package s3compat runs real S3 clients (boto3, aws cli, rclone, s3cmd,
// restic)
// against a real `coffer serve` on loopback, plus cross-API checks between
// the file API and the S3 API.
//
// The clients are installed by scripts/test.sh (a venv in ~/.cache/coffer-tools/venv
// and rclone from Debian's packages), which also sets COFFER_PYTHON and
// COFFER_REQUIRE_CLIENTS=1. Without COFFER_REQUIRE_CLIENTS a missing
// client skips its sub-test; with it, the sub-test fails.
//
// One server serves the whole package (TestClients); each client gets a
// bucket of its own and runs in parallel with the others.
package s3compat

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/test/testenv"
)

// env is what every client sub-test shares: one server, one user, one key.
type env struct {
	srv       *testenv.Server
	user      *testenv.Client
	accessKey string
	secretKey string
	prefix    string // bucket name prefix of this run
}

func TestClients(t *testing.T) {
	start := time.Now()
	srv := testenv.Start(t, "--log-level", "info")
	user := srv.NewUser(t)
	var key struct {
		AccessKeyID     string `json:"access_key_id"`
		SecretAccessKey string `json:"secret_access_key"`
	}
	if st := user.JSON(t, "POST", "/api/v1/keys", map[string]string{"name": "s3compat"}, &key); st != 201 || key.AccessKeyID == "" || key.SecretAccessKey == "" {
		t.Fatalf("POST /api/v1/keys: status %d, key %+v", st, key)
	}
	var rnd [4]byte
	rand.Read(rnd[:])
	e := &env{srv: srv, user: user, accessKey: key.AccessKeyID, secretKey: key.SecretAccessKey, prefix: "compat-" + hex.EncodeToString(rnd[:])}
	t.Logf("server: file API %s, S3 API %s; bucket prefix %s", srv.URL, srv.S3URL, e.prefix)

	t.Run("group", func(t *testing.T) {
		for _, c := range []struct {
			name string
			run  func(*env, *testing.T)
		}{
			{"boto3", (*env).testBoto3},
			{"awscli", (*env).testAWSCLI},
			{"rclone", (*env).testRclone},
			{"restic", (*env).testRestic},
			{"s3cmd", (*env).testS3cmd},
			{"crossapi", (*env).testCrossAPI},
			{"sigv2", (*env).testSigV2},
			{"post", (*env).testPost},
		} {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				t0 := time.Now()
				c.run(e, t)
				t.Logf("%s took %v", c.name, time.Since(t0).Round(time.Millisecond))
			})
		}
	})
	if t.Failed() {
		t.Logf("server log, S3 requests answered >= 500, warnings and errors (last 40):\n%s", e.failedRequests("", 500, 40))
	}
	t.Logf("suite took %v", time.Since(start).Round(time.Millisecond))
}

func (e *env) bucket(client string) string { return e.prefix + "-" + client }

// ---- finding the clients ----

func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// missing skips, or fails under COFFER_REQUIRE_CLIENTS, when a client is
// not installed.
func missing(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("COFFER_REQUIRE_CLIENTS") != "" {
		t.Fatalf("COFFER_REQUIRE_CLIENTS is set but %s (scripts/test.sh installs the clients)", msg)
	}
	t.Skipf("%s; run scripts/test.sh to install the S3 clients, or set COFFER_PYTHON", msg)
}

// python returns the interpreter that has boto3, requests and pytest:
// $COFFER_PYTHON, else ./.tools/venv/bin/python, else python3.
func python(t *testing.T) string {
	t.Helper()
	p := os.Getenv("COFFER_PYTHON")
	if p != "" && !filepath.IsAbs(p) && strings.ContainsRune(p, '/') {
		p = filepath.Join(moduleRoot(), p) // relative to the repository
	}
	if p == "" {
		p = filepath.Join(moduleRoot(), ".tools", "venv", "bin", "python")
		if _, err := os.Stat(p); err != nil {
			p = "python3"
		}
	}
	path, err := exec.LookPath(p)
	if err != nil {
		missing(t, "no Python interpreter %q: %v", p, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "-c", "import boto3, botocore, requests, pytest")
	cmd.Env = childEnv(nil)
	if out, err := cmd.CombinedOutput(); err != nil {
		missing(t, "%s cannot import boto3/botocore/requests/pytest: %v\n%s", path, err, trim(out))
	}
	return path
}

// tool finds a command: next to the venv's Python first, then on PATH.
func tool(t *testing.T, name string) string {
	t.Helper()
	var dirs []string
	if p := os.Getenv("COFFER_PYTHON"); p != "" {
		if !filepath.IsAbs(p) {
			p = filepath.Join(moduleRoot(), p)
		}
		dirs = append(dirs, filepath.Dir(p))
	}
	dirs = append(dirs, filepath.Join(moduleRoot(), ".tools", "venv", "bin"))
	for _, d := range dirs {
		c := filepath.Join(d, name)
		if st, err := os.Stat(c); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return c
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		missing(t, "%s is not installed: %v", name, err)
	}
	return p
}

// ---- running them ----

// childEnv is the environment of a client process: ours without anything
// that could send it elsewhere than loopback or change its credentials
// (AWS_*, proxies, CA bundles, client config variables), plus extra.
func childEnv(extra map[string]string) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		u := strings.ToUpper(k)
		switch {
		case strings.HasPrefix(u, "AWS_"), strings.HasPrefix(u, "RCLONE_"), strings.HasPrefix(u, "S3CMD"),
			strings.HasPrefix(u, "BOTO"), strings.HasSuffix(u, "_PROXY"), u == "NO_PROXY",
			u == "REQUESTS_CA_BUNDLE", u == "CURL_CA_BUNDLE", u == "SSL_CERT_FILE", u == "SSL_CERT_DIR",
			u == "PYTHONPATH", u == "PYTHONHOME", u == "PYTHONSTARTUP", u == "HOME",
			u == "LANG", strings.HasPrefix(u, "LC_"), u == "PYTEST_ADDOPTS":
			continue
		}
		out = append(out, kv)
	}
	out = append(out,
		"NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost",
		"AWS_EC2_METADATA_DISABLED=true",
		"PYTHONDONTWRITEBYTECODE=1", "PYTHONUTF8=1", "PYTHONIOENCODING=utf-8",
		"LANG=C.UTF-8", "LC_ALL=C.UTF-8",
	)
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, k+"="+extra[k])
	}
	return out
}

// runner runs one client's commands with a fixed environment.
type runner struct {
	e       *env
	name    string // client, for messages
	bin     string
	pre     []string // arguments before every command's own
	env     []string
	dir     string
	bucket  string        // for server log excerpts
	timeout time.Duration // per command
}

type result struct {
	cmdline        string
	stdout, stderr string
	err            error
	took           time.Duration
}

func (r result) String() string {
	return fmt.Sprintf("$ %s\n(exit: %v, %v)\n--- stdout ---\n%s\n--- stderr ---\n%s", r.cmdline, exitText(r.err), r.took.Round(time.Millisecond), trim([]byte(r.stdout)), trim([]byte(r.stderr)))
}

func exitText(err error) string {
	if err == nil {
		return "0"
	}
	return err.Error()
}

// try runs the client with args and returns what happened.
func (r *runner) try(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	all := append(append([]string(nil), r.pre...), args...)
	cmd := exec.CommandContext(ctx, r.bin, all...)
	cmd.Env = r.env
	cmd.Dir = r.dir
	cmd.WaitDelay = 10 * time.Second
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	t0 := time.Now()
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("timed out after %v: %w", r.timeout, err)
	}
	return result{cmdline: r.name + " " + strings.Join(args, " "), stdout: so.String(), stderr: se.String(), err: err, took: time.Since(t0)}
}

// run runs the client and fails the test (Fatal) unless it exits 0.
func (r *runner) run(t *testing.T, args ...string) result {
	t.Helper()
	res := r.try(t, args...)
	if res.took > 10*time.Second {
		t.Logf("slow: %s took %v", res.cmdline, res.took.Round(time.Millisecond))
	}
	if res.err != nil {
		t.Fatalf("%s failed:\n%s\n%s", r.name, res, r.e.evidence(r.bucket))
	}
	return res
}

// evidence is the server's log of failed S3 requests on bucket.
func (e *env) evidence(bucket string) string {
	return "--- server: S3 requests answered >= 400 on this bucket (last 15) ---\n" + e.failedRequests(bucket, 400, 15)
}

// failedRequests extracts the server's request log lines (JSON, level
// info) of S3 requests with status >= minStatus, on bucket if not empty,
// and any warning or error the server logged.
func (e *env) failedRequests(bucket string, minStatus, max int) string {
	var lines []string
	for _, l := range strings.Split(e.srv.Stderr(), "\n") {
		var rec struct {
			Msg       string  `json:"msg"`
			API       string  `json:"api"`
			Method    string  `json:"method"`
			Path      string  `json:"path"`
			Route     string  `json:"route"`
			Status    int     `json:"status"`
			RequestID string  `json:"request_id"`
			Duration  float64 `json:"duration_ms"`
		}
		if json.Unmarshal([]byte(l), &rec) != nil {
			if strings.Contains(l, "ERROR") || strings.Contains(l, "panic") {
				lines = append(lines, l)
			}
			continue
		}
		if rec.Msg != "request" {
			if !strings.Contains(l, `"level":"INFO"`) {
				lines = append(lines, l) // warnings and errors
			}
			continue
		}
		if rec.API != "s3" || rec.Status < minStatus {
			continue
		}
		if bucket != "" && rec.Path != "/"+bucket && !strings.HasPrefix(rec.Path, "/"+bucket+"/") {
			continue
		}
		lines = append(lines, fmt.Sprintf("%s %s -> %d (%s, request %s, %.1f ms)", rec.Method, rec.Path, rec.Status, rec.Route, rec.RequestID, rec.Duration))
	}
	if len(lines) > max {
		lines = lines[len(lines)-max:]
	}
	if len(lines) == 0 {
		return "(none)"
	}
	return strings.Join(lines, "\n")
}

// trim keeps the head and tail of long client output.
func trim(b []byte) string {
	s := strings.TrimRight(string(b), "\n")
	const head, tail = 3000, 5000
	if len(s) <= head+tail {
		return s
	}
	return s[:head] + fmt.Sprintf("\n[... %d bytes cut ...]\n", len(s)-head-tail) + s[len(s)-tail:]
}

// ---- files ----

func shaHex(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
func md5Hex(b []byte) string { s := md5.Sum(b); return hex.EncodeToString(s[:]) }

func fileSHA(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return shaHex(b)
}

// writeRandom writes n pseudo-random bytes (fast, seeded) to path.
func writeRandom(t *testing.T, path string, n int, seed uint64) {
	t.Helper()
	r := mrand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), byte(seed >> 16), 0xC0, 0xFF, 0xE4})
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	for n > 0 {
		m := min(n, len(buf))
		r.Read(buf[:m])
		if _, err := f.Write(buf[:m]); err != nil {
			t.Fatal(err)
		}
		n -= m
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// makeTree writes n files under dir: nested folders, some names with
// spaces, '+' and non-ASCII letters, sizes 0–48 KiB (some empty if
// empties). It returns the contents by slash-separated relative path.
func makeTree(t *testing.T, dir string, n int, seed uint64, empties bool) map[string][]byte {
	t.Helper()
	r := mrand.New(mrand.NewPCG(seed, 42))
	files := map[string][]byte{}
	for i := 0; i < n; i++ {
		var rel string
		switch i % 8 {
		case 0:
			rel = fmt.Sprintf("top-%03d.txt", i)
		case 1:
			rel = fmt.Sprintf("d%d/file-%03d.bin", i%5, i)
		case 2:
			rel = fmt.Sprintf("d%d/sub %d/deep/f%03d.dat", i%3, i%4, i)
		case 3:
			rel = fmt.Sprintf("ünïcödé/日本語-%03d.txt", i)
		case 4:
			rel = fmt.Sprintf("spaces here/file %03d with spaces.txt", i)
		case 5:
			rel = fmt.Sprintf("plus+dir/a+b=c-%03d.txt", i)
		case 6:
			rel = fmt.Sprintf("d%d/ß-straße-%03d", i%2, i)
		default:
			rel = fmt.Sprintf("a/b/c/d/e/%03d.json", i)
		}
		size := 1 + r.IntN(48<<10)
		if empties && i%37 == 0 {
			size = 0
		}
		b := make([]byte, size)
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		writeFile(t, filepath.Join(dir, filepath.FromSlash(rel)), b)
		files[rel] = b
	}
	return files
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// readTree returns the files under dir by slash-separated relative path.
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	got := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		got[filepath.ToSlash(rel)] = b
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return got
}

// compareTree reports every file of want missing from, differing in, or
// extra in dir. It returns whether they matched.
func compareTree(t *testing.T, what string, want map[string][]byte, dir string) bool {
	t.Helper()
	got := readTree(t, dir)
	var bad []string
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			bad = append(bad, "missing: "+k)
		case !bytes.Equal(g, w):
			bad = append(bad, fmt.Sprintf("differs: %s (%d bytes sha256 %.12s, want %d bytes sha256 %.12s)", k, len(g), shaHex(g), len(w), shaHex(w)))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			bad = append(bad, "extra: "+k)
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		if len(bad) > 20 {
			bad = append(bad[:20], fmt.Sprintf("... and %d more", len(bad)-20))
		}
		t.Errorf("%s: %d of %d files wrong:\n%s", what, len(bad), len(want), strings.Join(bad, "\n"))
		return false
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
