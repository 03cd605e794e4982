// Package testenv starts real Coffer binaries for black-box tests: it builds
// cmd/coffer once per test process, runs `coffer serve` on a loopback port
// in a temporary data folder, and offers a small HTTP client for the file
// API. Tests talk to the server only over the wire.
//
// A server started with --tls-cert/--tls-key (StartTLS) serves https; its
// URL and S3URL say so and HTTPClient trusts the test's CA.
package testenv

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/testbackend"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// Binary returns the path of a coffer binary built from this checkout
// (or $COFFER_BIN if set).
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		if p := os.Getenv("COFFER_BIN"); p != "" {
			binPath = p
			return
		}
		dir, err := os.MkdirTemp("", "coffer-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "coffer")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/coffer")
		cmd.Dir = moduleRoot()
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Server is a running `coffer serve` process.
type Server struct {
	t     testing.TB
	Data  string
	Args  []string
	Env   []string // extra environment (scale-out backends)
	URL   string   // file API, http://127.0.0.1:PORT (https:// with TLS)
	S3URL string   // S3 API, http://127.0.0.1:PORT (https:// with TLS)

	// RootCAs is what HTTPClient trusts when the server serves https.
	RootCAs *x509.CertPool

	// Defaults leaves out the relaxed flags (StartDefaults).
	Defaults bool

	// Wrap is a command the server runs under (StartNodeIn: `ip netns
	// exec NS`); it must exec the server, keeping its process ID.
	Wrap []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	before string // the standard error of the processes before a restart
	exited chan error
	addr   string
	s3addr string
}

// Start runs coffer serve with a fresh data folder and extra flags, and
// waits until it is ready. The process is killed at test cleanup.
//
// With COFFER_E2E_BACKEND=scaleout, the server runs on a fresh PostgreSQL
// database and MinIO bucket instead (the scale-out shape), so the same
// suites cover both shapes.
func Start(t testing.TB, extra ...string) *Server {
	t.Helper()
	return startShape(t, false, extra)
}

// relaxed are flags Start and StartNode put before the test's own (which
// win over them): the black-box suites sign up many accounts from
// 127.0.0.1, far past the default --signup-rate; and they test behaviour,
// not overload, so admission is fixed — the adaptive limit follows the
// machine's CPU, which parallel suites and other processes saturate, and
// would shed a correctness test's requests (the overload and guard tests
// choose their admission mode explicitly).
var relaxed = []string{"--signup-rate", "0", "--admission", "fixed"}

// StartDefaults is Start without the relaxed flags: the shipped defaults,
// for the tests of those defaults.
func StartDefaults(t testing.TB, extra ...string) *Server {
	t.Helper()
	return startShape(t, true, extra)
}

func startShape(t testing.TB, defaults bool, extra []string) *Server {
	t.Helper()
	s := &Server{t: t, Data: t.TempDir(), Args: extra, Defaults: defaults}
	if ScaleOut() {
		s.Env = NewBackends(t).Env
	}
	s.start("127.0.0.1:0", "127.0.0.1:0")
	t.Cleanup(func() { s.Kill() })
	return s
}

// StartEnv is Start in the embedded shape with env added to the server's
// environment (and to Command's): credentials of a store it writes to,
// without t.Setenv (so the test may run in parallel).
func StartEnv(t testing.TB, env []string, extra ...string) *Server {
	t.Helper()
	s := &Server{t: t, Data: t.TempDir(), Args: extra, Env: env}
	s.start("127.0.0.1:0", "127.0.0.1:0")
	t.Cleanup(func() { s.Kill() })
	return s
}

// StartIn is Start with the data folder dir (a small file system the test
// mounted, say), always in the embedded shape: dir holds its metadata and
// blobs.
func StartIn(t testing.TB, dir string, extra ...string) *Server {
	t.Helper()
	s := &Server{t: t, Data: dir, Args: extra}
	s.start("127.0.0.1:0", "127.0.0.1:0")
	t.Cleanup(func() { s.Kill() })
	return s
}

// StartTLS is Start for a server serving https: extra must carry
// --tls-cert and --tls-key, and roots the CA that signed the certificate
// (HTTPClient and NewUser trust it).
func StartTLS(t testing.TB, roots *x509.CertPool, extra ...string) *Server {
	t.Helper()
	s := &Server{t: t, Data: t.TempDir(), Args: extra, RootCAs: roots}
	if ScaleOut() {
		s.Env = NewBackends(t).Env
	}
	s.start("127.0.0.1:0", "127.0.0.1:0")
	t.Cleanup(func() { s.Kill() })
	return s
}

// HTTPClient returns a new client for s with its own connections: over
// https it trusts s.RootCAs and speaks HTTP/2.
func (s *Server) HTTPClient() *http.Client {
	c := &http.Client{Timeout: 2 * time.Minute}
	if s.RootCAs != nil {
		c.Transport = &http.Transport{
			TLSClientConfig:   &tls.Config{RootCAs: s.RootCAs},
			ForceAttemptHTTP2: true,
		}
	}
	return c
}

// ScaleOut reports whether the suites run against the scale-out shape.
func ScaleOut() bool { return os.Getenv("COFFER_E2E_BACKEND") == "scaleout" }

// Backends are the shared stores of a scale-out cluster: a fresh
// PostgreSQL database, a fresh MinIO bucket and one server key, on the
// test process's shared PostgreSQL and MinIO servers.
type Backends struct {
	Env   []string
	PG    *testbackend.Postgres
	MinIO *testbackend.MinIO
}

// NewBackends makes a database, a bucket and a server key for a cluster.
func NewBackends(t testing.TB) *Backends {
	t.Helper()
	pg := testbackend.SharedPostgres(t)
	m := testbackend.SharedMinIO(t)
	return NewBackendsOn(t, pg, m)
}

// NewBackendsOn is NewBackends on given servers (fault tests stop them).
func NewBackendsOn(t testing.TB, pg *testbackend.Postgres, m *testbackend.MinIO) *Backends {
	t.Helper()
	keyFile := filepath.Join(t.TempDir(), "server.key")
	if err := os.WriteFile(keyFile, []byte(testbackend.RandomHex(32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append([]string{
		"COFFER_META=" + pg.CreateDatabase(t),
		"COFFER_BLOB=" + m.BlobURL(m.CreateBucket(t)),
		"COFFER_SERVER_KEY_FILE=" + keyFile,
	}, m.Env()...)
	return &Backends{Env: env, PG: pg, MinIO: m}
}

// StartNode starts a node of the cluster b (its own data folder, for
// nothing but logs).
func StartNode(t testing.TB, b *Backends, extra ...string) *Server {
	t.Helper()
	s := &Server{t: t, Data: t.TempDir(), Args: extra, Env: b.Env}
	s.start("127.0.0.1:0", "127.0.0.1:0")
	t.Cleanup(func() { s.Kill() })
	return s
}

// StartNodeIn is StartNode for a node run under wrap (a command that
// execs the server: `ip netns exec NS`), listening on host (an address
// of its network namespace).
func StartNodeIn(t testing.TB, b *Backends, wrap []string, host string, extra ...string) *Server {
	t.Helper()
	s := &Server{t: t, Data: t.TempDir(), Args: extra, Env: b.Env, Wrap: wrap}
	s.start(host+":0", host+":0")
	t.Cleanup(func() { s.Kill() })
	return s
}

// Command is a coffer command (an admin CLI) on this server's stores.
func (s *Server) Command(args ...string) *exec.Cmd {
	cmd := exec.Command(Binary(s.t), args...)
	cmd.Env = append(os.Environ(), s.Env...)
	return cmd
}

var announceRE = regexp.MustCompile(`(file|S3) API listening on (https?://\S+)`)

func (s *Server) start(listen, s3listen string) {
	s.t.Helper()
	args := []string{"serve", "--data", s.Data, "--listen", listen, "--s3-listen", s3listen, "--log-level", "warn"}
	if !s.Defaults {
		args = append(args, relaxed...)
	}
	args = append(args, s.Args...)
	argv := append(append(slices.Clip(s.Wrap), Binary(s.t)), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), s.Env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		s.t.Fatal(err)
	}
	stderr := &bytes.Buffer{}
	cmd.Stderr = &lockedWriter{w: stderr}
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	exited := make(chan error, 1)
	addrCh := make(chan [2]string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		var file, s3 string
		for sc.Scan() {
			if m := announceRE.FindStringSubmatch(sc.Text()); m != nil {
				// m[2] is scheme://host:port.
				if m[1] == "file" {
					file = m[2]
				} else {
					s3 = m[2]
				}
				if file != "" && s3 != "" {
					addrCh <- [2]string{file, s3}
				}
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	go func() { exited <- cmd.Wait() }()
	select {
	case addrs := <-addrCh:
		s.mu.Lock()
		s.URL, s.S3URL = addrs[0], addrs[1]
		_, file, _ := strings.Cut(addrs[0], "://")
		_, s3, _ := strings.Cut(addrs[1], "://")
		if s.stderr != nil {
			s.before += s.stderr.String() + "--- restarted ---\n"
		}
		s.cmd, s.stderr, s.exited, s.addr, s.s3addr = cmd, stderr, exited, file, s3
		s.mu.Unlock()
	case err := <-exited:
		s.t.Fatalf("coffer serve exited before listening: %v\n%s", err, stderr.String())
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		s.t.Fatalf("coffer serve did not announce its address in 30s\n%s", stderr.String())
	}
	s.waitReady()
}

func (s *Server) waitReady() {
	deadline := time.Now().Add(15 * time.Second)
	hc := s.HTTPClient()
	defer hc.CloseIdleConnections()
	for time.Now().Before(deadline) {
		resp, err := hc.Get(s.URL + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.t.Fatalf("server not ready in 15s\n%s", s.Stderr())
}

// Stderr returns what the server's current process logged so far.
func (s *Server) Stderr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stderr == nil {
		return ""
	}
	return s.stderr.String()
}

// AllStderr returns what the server logged so far, with what its
// processes before every restart logged.
func (s *Server) AllStderr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stderr == nil {
		return s.before
	}
	return s.before + s.stderr.String()
}

// PID returns the server's process ID (0 while no process runs: a
// restart that failed).
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Kill sends SIGKILL and waits for the process to die.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Kill()
	<-exited
}

// Term sends SIGTERM and waits up to timeout for a clean exit, returning
// the process's exit error.
func (s *Server) Term(timeout time.Duration) error {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return nil
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		return err
	case <-time.After(timeout):
		cmd.Process.Kill()
		<-exited
		return fmt.Errorf("server did not exit within %v of SIGTERM", timeout)
	}
}

// Restart starts the server again on the same data folder and address.
func (s *Server) Restart() {
	s.t.Helper()
	s.Kill()
	s.start(s.addr, s.s3addr)
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// ---- client ----

// Client talks to the file API as one user.
type Client struct {
	Base    string
	HTTP    *http.Client
	Token   string
	Refresh string
	Email   string
	Bucket  string // the default bucket
}

// NewClient returns an anonymous client of base.
func NewClient(base string) *Client {
	return &Client{Base: base, HTTP: &http.Client{Timeout: 2 * time.Minute}}
}

var userSeq struct {
	sync.Mutex
	n int
}

// NewUser signs up a fresh user on s, logs in and returns its client.
func (s *Server) NewUser(t testing.TB) *Client {
	t.Helper()
	userSeq.Lock()
	userSeq.n++
	n := userSeq.n
	userSeq.Unlock()
	c := NewClient(s.URL)
	c.HTTP = s.HTTPClient()
	c.Email = fmt.Sprintf("user%d-%d@example.com", n, time.Now().UnixNano())
	var signup struct {
		Bucket struct{ Name string } `json:"bucket"`
	}
	if st := c.JSON(t, "POST", "/api/v1/auth/signup", map[string]string{"email": c.Email, "password": "correct horse battery"}, &signup); st != 201 {
		t.Fatalf("signup: status %d", st)
	}
	c.Bucket = signup.Bucket.Name
	c.Login(t, "correct horse battery")
	return c
}

// Login logs c in with password.
func (c *Client) Login(t testing.TB, password string) {
	t.Helper()
	var sess struct {
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
	}
	if st := c.JSON(t, "POST", "/api/v1/auth/login", map[string]string{"email": c.Email, "password": password}, &sess); st != 200 {
		t.Fatalf("login: status %d", st)
	}
	c.Token, c.Refresh = sess.AccessToken, sess.RefreshToken
}

// Do sends a request with c's token and returns the response (body unread).
func (c *Client) Do(t testing.TB, method, path string, body io.Reader, hdr ...string) *http.Response {
	t.Helper()
	resp, err := c.DoErr(context.Background(), method, path, body, -1, hdr...)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp
}

// DoErr is Do returning transport errors; size >= 0 sets Content-Length.
// hdr is pairs of header names and values.
func (c *Client) DoErr(ctx context.Context, method, path string, body io.Reader, size int64, hdr ...string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, body)
	if err != nil {
		return nil, err
	}
	if size >= 0 {
		req.ContentLength = size
		if size == 0 {
			req.Body = http.NoBody
		}
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return c.HTTP.Do(req)
}

// JSON sends v as a JSON body (nil for none), decodes a JSON response into
// out (if non-nil and the response is JSON) and returns the status.
func (c *Client) JSON(t testing.TB, method, path string, v, out any, hdr ...string) int {
	t.Helper()
	var body io.Reader
	if v != nil {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		body = bytes.NewReader(b)
		hdr = append(hdr, "Content-Type", "application/json")
	}
	resp := c.Do(t, method, path, body, hdr...)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, path, err)
	}
	if out != nil && len(data) > 0 && strings.Contains(resp.Header.Get("Content-Type"), "json") {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: decoding %q: %v", method, path, data, err)
		}
	}
	return resp.StatusCode
}

// Problem is the problem+json body of an error response.
type Problem struct {
	Type      string         `json:"type"`
	Title     string         `json:"title"`
	Status    int            `json:"status"`
	Detail    string         `json:"detail"`
	Code      string         `json:"code"`
	RequestID string         `json:"request_id"`
	Extra     map[string]any `json:"extra"`
}

// FileURL returns the API path of a file.
func FileURL(bucket, key string) string {
	return "/api/v1/buckets/" + bucket + "/files/" + EscapeKey(key)
}

// EscapeKey percent-encodes each segment of key.
func EscapeKey(key string) string {
	segs := strings.Split(key, "/")
	for i, s := range segs {
		segs[i] = pathEscape(s)
	}
	return strings.Join(segs, "/")
}

func pathEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}
