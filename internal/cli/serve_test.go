package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/config"
)

// syncBuffer is a buffer the server may write from many goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var fileAPIRE = regexp.MustCompile(`file API listening on (http://\S+)`)

// serveOneRequest runs the real `coffer serve` in process with extra
// flags, sends GET /healthz once, stops it and returns what it wrote to
// stdout and stderr (a buffer: not a terminal).
func serveOneRequest(t *testing.T, extra ...string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb syncBuffer
	args := append([]string{"serve", "--data", t.TempDir(), "--listen", "127.0.0.1:0", "--s3-listen", "127.0.0.1:0"}, extra...)
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, args, Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }})
	}()
	var base string
	for deadline := time.Now().Add(20 * time.Second); base == ""; {
		if m := fileAPIRE.FindStringSubmatch(out.String()); m != nil && strings.Contains(out.String(), "S3 API listening") {
			base = m[1]
			break
		}
		select {
		case code := <-done:
			t.Fatalf("coffer serve exited with %d before listening\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("coffer serve did not announce its address\nstdout:\n%s\nstderr:\n%s", out.String(), errb.String())
		}
	}
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("coffer serve exited with %d\nstderr:\n%s", code, errb.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("coffer serve did not stop")
	}
	return out.String(), errb.String()
}

func countLines(s string, match func(line string) bool) int {
	n := 0
	for line := range strings.Lines(s) {
		if match(line) {
			n++
		}
	}
	return n
}

// TestServeLogsEachEventOnce checks the log of a real `coffer serve`:
// each start-up and shutdown event appears once on stdout and stderr
// together (the "listening" lines used to be printed and logged both), the
// format is JSON when stderr is not a terminal (auto) or as asked, and
// the access log is at info in JSON but only at debug in text.
func TestServeLogsEachEventOnce(t *testing.T) {
	for _, c := range []struct {
		name       string
		args       []string
		wantJSON   bool
		wantAccess int
	}{
		{"auto, not a terminal", nil, true, 1},
		{"json", []string{"--log-format", "json"}, true, 1},
		{"text", []string{"--log-format", "text"}, false, 0},
		{"text at debug", []string{"--log-format", "text", "--log-level", "debug"}, false, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr := serveOneRequest(t, c.args...)
			both := stdout + stderr
			for _, ev := range []struct {
				what  string
				match func(string) bool
				want  int
			}{
				{"listening", func(l string) bool { return strings.Contains(strings.ToLower(l), "listening") }, 2}, // file and S3 API
				{"file API listening", func(l string) bool { return strings.Contains(l, "file API listening on http://") }, 1},
				{"shutting down", func(l string) bool { return strings.Contains(l, "shutting down") }, 1},
				{"stopped", func(l string) bool { return strings.Contains(l, "stopped") }, 1},
			} {
				if got := countLines(both, ev.match); got != ev.want {
					t.Errorf("%d lines about %q, want %d\nstdout:\n%s\nstderr:\n%s", got, ev.what, ev.want, stdout, stderr)
				}
			}
			access := 0
			for line := range strings.Lines(stderr) {
				var rec map[string]any
				isJSON := json.Unmarshal([]byte(line), &rec) == nil
				if isJSON != c.wantJSON {
					t.Errorf("log line %q: JSON %v, want %v", line, isJSON, c.wantJSON)
				}
				if isJSON && rec["msg"] == "request" && rec["path"] == "/healthz" {
					access++
					if rec["level"] != "INFO" {
						t.Errorf("access log at %v, want INFO", rec["level"])
					}
				}
				if !isJSON && strings.Contains(line, "msg=request") && strings.Contains(line, "path=/healthz") {
					access++
				}
			}
			if access != c.wantAccess {
				t.Errorf("%d access log lines for one request, want %d\n%s", access, c.wantAccess, stderr)
			}
		})
	}
}

func TestLogFormatAuto(t *testing.T) {
	for _, c := range []struct{ format, want string }{{"auto", "json"}, {"text", "text"}, {"json", "json"}} {
		if got := logFormat(c.format, &bytes.Buffer{}); got != c.want {
			t.Errorf("logFormat(%q, buffer) = %q, want %q", c.format, got, c.want)
		}
	}
	if got, want := config.Defaults().LogFormat, "auto"; got != want {
		t.Errorf("default --log-format %q, want %q", got, want)
	}
}

// TestServeHelpNamesEveryVariable checks `coffer serve -h`: every flag is
// spelled --name, as in the docs, and shows the COFFER_* variable that
// ApplyEnv reads for it.
func TestServeHelpNamesEveryVariable(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Run(context.Background(), []string{"serve", "-h"}, Env{Stdout: &out, Stderr: &errb}); code != 0 {
		t.Fatalf("coffer serve -h: exit %d\n%s", code, errb.String())
	}
	help := out.String()
	if errb.Len() > 0 {
		t.Errorf("coffer serve -h wrote to stderr: %q", errb.String())
	}
	cfg := config.Defaults()
	fs := cfg.FlagSet("coffer serve")
	n := 0
	fs.VisitAll(func(f *flag.Flag) {
		n++
		i := strings.Index(help, "\n  --"+f.Name+" ")
		if i < 0 {
			i = strings.Index(help, "\n  --"+f.Name+"\n")
		}
		if i < 0 {
			t.Errorf("help has no line for --%s", f.Name)
			return
		}
		block := help[i+1:]
		if j := strings.Index(block[1:], "\n  -"); j >= 0 {
			block = block[:j+1]
		}
		if want := "env " + config.EnvName(f.Name); !strings.Contains(block, want) {
			t.Errorf("help of --%s lacks %q:\n%s", f.Name, want, block)
		}
	})
	if n < 10 {
		t.Fatalf("only %d flags", n)
	}
	for line := range strings.Lines(help) {
		if t2 := strings.TrimLeft(line, " "); strings.HasPrefix(t2, "-") && !strings.HasPrefix(t2, "--") {
			t.Errorf("flag spelled with one dash: %q", line)
		}
	}
}

// TestServeRelativeData: the README's `coffer serve` runs with the default
// ./coffer-data, a relative path; so do a relative --data and COFFER_DATA.
// The local keyring refused any relative path (issue 17), and no test
// passed anything but an absolute folder.
func TestServeRelativeData(t *testing.T) {
	t.Chdir(t.TempDir())
	_, stderr := serveOneRequest(t, "--data", "rel/data")
	if strings.Contains(stderr, "level=ERROR") || strings.Contains(stderr, `"level":"ERROR"`) {
		t.Fatalf("errors logged:\n%s", stderr)
	}
	for _, f := range []string{"rel/data/meta.db", "rel/data/server.key", "rel/data/kms.keyring"} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestResolvePaths(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	cfg := config.Defaults()
	cfg.TLSCert, cfg.TLSKey = "c.pem", "/abs/k.pem"
	if err := cfg.ResolvePaths(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ got, want string }{
		{cfg.Data, filepath.Join(dir, "coffer-data")},
		{cfg.TLSCert, filepath.Join(dir, "c.pem")},
		{cfg.TLSKey, "/abs/k.pem"},
		{cfg.ServerKeyFile, ""},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
