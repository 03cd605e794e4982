// Package testbackend starts real PostgreSQL and MinIO servers for tests, on
// loopback ports, in temporary folders, and stops them when the test (or the
// test process) ends.
//
// Binaries: PostgreSQL's initdb and postgres are looked up in $COFFER_PG_BIN,
// then /usr/lib/postgresql/*/bin, then $PATH; MinIO in $COFFER_MINIO, then
// $PATH, then .tools/bin/minio of the module root (scripts/test.sh installs
// it there). When a binary is missing the test is skipped — unless
// COFFER_REQUIRE_BACKENDS=1 (set by scripts/test.sh), where it fails: the
// README's test command never silently skips the scale-out suites.
//
// PostgreSQL refuses to run as root; when the tests run as root, the server
// runs as the "postgres" user (its data folder is handed to that user).
package testbackend

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"
)

// Required reports whether missing backends fail tests instead of skipping
// them.
func Required() bool { return os.Getenv("COFFER_REQUIRE_BACKENDS") == "1" }

func skipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	if Required() {
		t.Fatalf(format, args...)
	}
	t.Skipf(format+" (set COFFER_REQUIRE_BACKENDS=1 to fail instead)", args...)
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// RandomHex returns n random bytes in hex.
func RandomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// ModuleRoot is the folder of go.mod.
func ModuleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// tempDir makes a folder that outlives t.TempDir's cleanup ordering
// problems (servers are stopped before it is removed) and that another
// user (postgres) can traverse.
func tempDir(t testing.TB, pattern string) string {
	t.Helper()
	base := os.Getenv("COFFER_TEST_TMP")
	dir, err := os.MkdirTemp(base, pattern)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// process is a server child process that can be stopped and started again
// on the same folder and port.
type process struct {
	mu   sync.Mutex
	name string
	argv []string
	env  []string
	cred *syscall.Credential
	log  string
	cmd  *exec.Cmd
	done chan struct{}
}

func (p *process) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return nil
	}
	logf, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o666)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Die with the test process, whatever happens to it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Credential: p.cred, Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(done) }()
	p.cmd, p.done = cmd, done
	return nil
}

// stop stops the process gracefully (SIGTERM, or sig), waiting up to 20 s
// before killing it.
func (p *process) stop(sig syscall.Signal) {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.cmd = nil
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, sig)
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

func (p *process) exited() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return true
	}
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// ---------------------------------------------------------------- PostgreSQL

// Postgres is a running PostgreSQL server.
type Postgres struct {
	Dir      string
	Port     int
	Password string
	proc     *process
}

func findPGBin() string {
	if d := os.Getenv("COFFER_PG_BIN"); d != "" {
		return d
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return pgVersion(dirs[i]) > pgVersion(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			return d
		}
	}
	if p, err := exec.LookPath("postgres"); err == nil {
		return filepath.Dir(p)
	}
	return ""
}

func pgVersion(dir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return v
}

// StartPostgres initialises and starts a fresh PostgreSQL server, stopped
// at the end of t.
func StartPostgres(t testing.TB) *Postgres {
	t.Helper()
	pg, err := startPostgres(t)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pg.Close)
	return pg
}

func startPostgres(t testing.TB) (*Postgres, error) {
	t.Helper()
	bin := findPGBin()
	if bin == "" {
		skipOrFail(t, "PostgreSQL binaries not found (apt-get install postgresql, or set COFFER_PG_BIN)")
	}
	dir := tempDir(t, "coffer-pg-")
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("running as root needs a postgres user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	pg := &Postgres{Dir: dir, Port: FreePort(t), Password: RandomHex(12)}
	pwfile := filepath.Join(dir, "pwfile")
	if err := os.WriteFile(pwfile, []byte(pg.Password+"\n"), 0o644); err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "--pwfile", pwfile,
		"--auth=scram-sha-256", "-E", "UTF8", "--locale=C", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	pg.proc = &process{
		name: "postgres",
		argv: []string{filepath.Join(bin, "postgres"), "-D", data,
			"-c", "listen_addresses=127.0.0.1", "-c", "port=" + strconv.Itoa(pg.Port),
			"-c", "unix_socket_directories=" + dir,
			"-c", "max_connections=300", "-c", "shared_buffers=128MB",
			// Durable like production (fsync on): the crash tests rely on it.
			"-c", "fsync=on", "-c", "synchronous_commit=on",
			"-c", "log_min_messages=warning"},
		cred: cred,
		log:  filepath.Join(dir, "postgres.log"),
	}
	if err := pg.Start(); err != nil {
		pg.Close()
		return nil, err
	}
	return pg, nil
}

// Start (re)starts the server and waits until it accepts connections.
func (pg *Postgres) Start() error {
	if err := pg.proc.start(); err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if pg.exec("SELECT 1") == nil {
			return nil
		}
		if pg.proc.exited() {
			return fmt.Errorf("postgres exited:\n%s", tail(pg.proc.log))
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("postgres not ready after 30s:\n%s", tail(pg.proc.log))
}

// Stop stops the server (fast shutdown: clients are disconnected).
func (pg *Postgres) Stop() { pg.proc.stop(syscall.SIGINT) }

// Kill stops the server abruptly (SIGKILL), as in a crash.
func (pg *Postgres) Kill() { pg.proc.stop(syscall.SIGKILL) }

// Close stops the server and removes its folder.
func (pg *Postgres) Close() {
	if pg.proc != nil {
		pg.Stop()
	}
	os.RemoveAll(pg.Dir)
}

// URL returns a connection URL for database db.
func (pg *Postgres) URL(db string) string {
	return fmt.Sprintf("postgres://postgres:%s@127.0.0.1:%d/%s?sslmode=disable", pg.Password, pg.Port, db)
}

// CreateDatabase creates a fresh database and returns its URL. The database
// is dropped at the end of t (if the server still runs).
func (pg *Postgres) CreateDatabase(t testing.TB) string {
	t.Helper()
	name := "t_" + RandomHex(8)
	if err := pg.exec("CREATE DATABASE " + name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() { _ = pg.exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)") })
	return pg.URL(name)
}

// exec runs one statement on the postgres database.
func (pg *Postgres) exec(sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, pg.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

var (
	sharedMu sync.Mutex
	sharedPG *Postgres
	sharedS3 *MinIO
)

// SharedPostgres returns one server per test process, started on first use
// and stopped by Shutdown (call it from TestMain after m.Run) or, failing
// that, killed with the process.
func SharedPostgres(t testing.TB) *Postgres {
	t.Helper()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if sharedPG == nil {
		pg, err := startPostgres(t)
		if err != nil {
			t.Fatal(err)
		}
		sharedPG = pg
	}
	return sharedPG
}

// SharedMinIO is SharedPostgres for MinIO.
func SharedMinIO(t testing.TB) *MinIO {
	t.Helper()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if sharedS3 == nil {
		m, err := startMinIO(t)
		if err != nil {
			t.Fatal(err)
		}
		sharedS3 = m
	}
	return sharedS3
}

// Shutdown stops the shared servers.
func Shutdown() {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if sharedPG != nil {
		sharedPG.Close()
		sharedPG = nil
	}
	if sharedS3 != nil {
		sharedS3.Close()
		sharedS3 = nil
	}
}

// Main runs a package's tests and stops the shared servers afterwards:
//
//	func TestMain(m *testing.M) { testbackend.Main(m) }
func Main(m *testing.M) {
	code := m.Run()
	Shutdown()
	os.Exit(code)
}

// --------------------------------------------------------------------- MinIO

// MinIO is a running MinIO server (single drive).
type MinIO struct {
	Dir       string
	Port      int
	AccessKey string
	SecretKey string
	proc      *process
}

func findMinIO() string {
	if p := os.Getenv("COFFER_MINIO"); p != "" {
		return p
	}
	if p, err := exec.LookPath("minio"); err == nil {
		return p
	}
	p := filepath.Join(ModuleRoot(), ".tools", "bin", "minio")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return ""
}

// StartMinIO starts a fresh MinIO server, stopped at the end of t.
func StartMinIO(t testing.TB) *MinIO {
	t.Helper()
	m, err := startMinIO(t)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

func startMinIO(t testing.TB) (*MinIO, error) {
	t.Helper()
	bin := findMinIO()
	if bin == "" {
		skipOrFail(t, "minio not found (GOBIN=$PWD/.tools/bin go install github.com/minio/minio@latest, or set COFFER_MINIO)")
	}
	dir := tempDir(t, "coffer-minio-")
	m := &MinIO{Dir: dir, Port: FreePort(t), AccessKey: "testadmin", SecretKey: "testsecret-" + RandomHex(8)}
	m.proc = &process{
		name: "minio",
		argv: []string{bin, "server", filepath.Join(dir, "data"), "--quiet",
			"--address", fmt.Sprintf("127.0.0.1:%d", m.Port),
			"--console-address", fmt.Sprintf("127.0.0.1:%d", FreePort(t))},
		env: []string{"MINIO_ROOT_USER=" + m.AccessKey, "MINIO_ROOT_PASSWORD=" + m.SecretKey,
			"MINIO_BROWSER=off", "MINIO_UPDATE=off", "CI=true"},
		log: filepath.Join(dir, "minio.log"),
	}
	if err := m.Start(); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// Endpoint is the server's base URL.
func (m *MinIO) Endpoint() string { return fmt.Sprintf("http://127.0.0.1:%d", m.Port) }

// Start (re)starts the server and waits until it is live.
func (m *MinIO) Start() error {
	if err := m.proc.start(); err != nil {
		return err
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		req, _ := http.NewRequestWithContext(ctx, "GET", m.Endpoint()+"/minio/health/ready", nil)
		resp, err := http.DefaultClient.Do(req)
		cancel()
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		if m.proc.exited() {
			return fmt.Errorf("minio exited:\n%s", tail(m.proc.log))
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("minio not ready after 60s:\n%s", tail(m.proc.log))
}

// Stop stops the server.
func (m *MinIO) Stop() { m.proc.stop(syscall.SIGTERM) }

// Close stops the server and removes its folder.
func (m *MinIO) Close() {
	if m.proc != nil {
		m.Stop()
	}
	os.RemoveAll(m.Dir)
}

// CreateBucket creates a fresh bucket and returns its name.
func (m *MinIO) CreateBucket(t testing.TB) string {
	t.Helper()
	name := "t-" + RandomHex(6)
	cfg := aws.Config{
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider(m.AccessKey, m.SecretKey, ""),
	}
	c := s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(m.Endpoint())
		o.UsePathStyle = true
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &name}); err != nil {
		t.Fatalf("create bucket: %v", err)
	}
	return name
}

// BlobURL is the coffer --blob URL of a bucket of m.
func (m *MinIO) BlobURL(bucket string) string {
	return "s3://" + bucket + "?endpoint=" + m.Endpoint() + "&region=us-east-1"
}

// Env is the AWS credentials environment of m.
func (m *MinIO) Env() []string {
	return []string{"AWS_ACCESS_KEY_ID=" + m.AccessKey, "AWS_SECRET_ACCESS_KEY=" + m.SecretKey, "AWS_REGION=us-east-1"}
}

// ---------------------------------------------------------------------- moto

// Moto is a running moto server: a real implementation of the AWS KMS API
// (among others) from PyPI, for testing the key service path of encryption
// at rest. It keeps its state in memory: a restart forgets every key.
type Moto struct {
	Port int
	dir  string
	proc *process
}

// findMoto finds moto_server: $COFFER_MOTO, then $PATH, then the venv
// scripts/test.sh makes in .tools/moto.
func findMoto() string {
	if p := os.Getenv("COFFER_MOTO"); p != "" {
		return p
	}
	if p, err := exec.LookPath("moto_server"); err == nil {
		return p
	}
	p := filepath.Join(ModuleRoot(), ".tools", "moto", "bin", "moto_server")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return ""
}

// StartMoto starts a fresh moto server, stopped at the end of t.
func StartMoto(t testing.TB) *Moto {
	t.Helper()
	bin := findMoto()
	if bin == "" {
		skipOrFail(t, "moto_server not found (python3 -m venv .tools/moto && .tools/moto/bin/pip install 'moto[server]', or set COFFER_MOTO)")
	}
	dir := tempDir(t, "coffer-moto-")
	m := &Moto{Port: FreePort(t), dir: dir}
	m.proc = &process{
		name: "moto",
		argv: []string{bin, "-H", "127.0.0.1", "-p", strconv.Itoa(m.Port)},
		log:  filepath.Join(dir, "moto.log"),
	}
	t.Cleanup(m.Close)
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	return m
}

// Endpoint is the server's base URL.
func (m *Moto) Endpoint() string { return fmt.Sprintf("http://127.0.0.1:%d", m.Port) }

// Start (re)starts the server and waits until it answers.
func (m *Moto) Start() error {
	if err := m.proc.start(); err != nil {
		return err
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		req, _ := http.NewRequestWithContext(ctx, "GET", m.Endpoint()+"/moto-api/", nil)
		resp, err := http.DefaultClient.Do(req)
		cancel()
		if err == nil {
			resp.Body.Close()
			return nil
		}
		if m.proc.exited() {
			return fmt.Errorf("moto exited:\n%s", tail(m.proc.log))
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("moto not ready after 60s:\n%s", tail(m.proc.log))
}

// Stop stops the server (its keys are lost).
func (m *Moto) Stop() { m.proc.stop(syscall.SIGTERM) }

// Pause freezes the server (SIGSTOP): connections are accepted by the
// kernel but never answered, like a hung key service. Resume undoes it.
func (m *Moto) Pause() { m.signal(syscall.SIGSTOP) }

// Resume continues a paused server.
func (m *Moto) Resume() { m.signal(syscall.SIGCONT) }

func (m *Moto) signal(sig syscall.Signal) {
	m.proc.mu.Lock()
	defer m.proc.mu.Unlock()
	if m.proc.cmd != nil {
		_ = syscall.Kill(-m.proc.cmd.Process.Pid, sig)
	}
}

// Close stops the server and removes its folder.
func (m *Moto) Close() {
	m.Resume()
	m.Stop()
	os.RemoveAll(m.dir)
}

// Env is an AWS environment for clients of m (any credentials do).
func (m *Moto) Env() []string {
	return []string{"AWS_ACCESS_KEY_ID=moto", "AWS_SECRET_ACCESS_KEY=moto", "AWS_REGION=us-east-1"}
}
