package httpx

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// bigFile writes n bytes to a temporary file and opens it.
func bigFile(t *testing.T, n int64) *os.File {
	t.Helper()
	p := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(p, make([]byte, n), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestWriteIdleCutsANonReadingClient serves a 64 MiB file the way the
// APIs do (io.Copy of a *os.File under a LimitedReader: sendfile) to a
// client that never reads: the handler must return within about the idle
// timeout instead of holding its goroutine.
func TestWriteIdleCutsANonReadingClient(t *testing.T) {
	f := bigFile(t, 64<<20)
	done := make(chan error, 1)
	srv := httptest.NewServer(WriteIdle(500*time.Millisecond, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "67108864")
		_, err := io.Copy(w, &io.LimitedReader{R: f, N: 64 << 20})
		done <- err
	})))
	defer srv.Close()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	conn, err := d.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	start := time.Now()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("copy to a client that never reads succeeded")
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("handler held for %v with a 500ms write-idle timeout", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("handler still writing to a client that never reads")
	}
}

// TestWriteIdleLetsSlowReadersThrough: a client that keeps reading, more
// slowly than the deadline would allow for the whole body, gets all of it.
func TestWriteIdleLetsSlowReadersThrough(t *testing.T) {
	f := bigFile(t, 4<<20)
	srv := httptest.NewServer(WriteIdle(300*time.Millisecond, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "4194304")
		io.Copy(w, &io.LimitedReader{R: f, N: 4 << 20})
	})))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var n int64
	buf := make([]byte, 64<<10)
	start := time.Now()
	for {
		k, err := resp.Body.Read(buf)
		n += int64(k)
		if err != nil {
			break
		}
		time.Sleep(10 * time.Millisecond) // ~6 MiB/s, 0.7s in all
	}
	if n != 4<<20 {
		t.Fatalf("got %d of %d bytes in %v", n, 4<<20, time.Since(start))
	}
}

// readFromRecorder records what reaches ReadFrom.
type readFromRecorder struct {
	http.ResponseWriter
	srcs []io.Reader
}

func (r *readFromRecorder) ReadFrom(src io.Reader) (int64, error) {
	r.srcs = append(r.srcs, src)
	return io.Copy(io.Discard, src)
}

// TestIdleWriterKeepsTheFile: the chunked ReadFrom hands the connection
// the file itself under one LimitedReader (what net.TCPConn needs for
// sendfile), never a reader wrapping it twice.
func TestIdleWriterKeepsTheFile(t *testing.T) {
	f := bigFile(t, 1<<20)
	rec := &readFromRecorder{ResponseWriter: httptest.NewRecorder()}
	iw := NewIdleWriter(rec, time.Minute)
	lr := &io.LimitedReader{R: f, N: 1 << 20}
	n, err := io.Copy(iw, lr)
	if err != nil || n != 1<<20 {
		t.Fatalf("copied %d, %v", n, err)
	}
	if got, want := len(rec.srcs), 1<<20/idleChunk; got != want {
		t.Errorf("ReadFrom calls: got %d, want %d", got, want)
	}
	for _, src := range rec.srcs {
		l, ok := src.(*io.LimitedReader)
		if !ok {
			t.Fatalf("ReadFrom got %T, want *io.LimitedReader", src)
		}
		if _, ok := l.R.(*os.File); !ok {
			t.Fatalf("ReadFrom got a LimitedReader over %T, want *os.File", l.R)
		}
	}
}

// deadlineCounter is a ResponseWriter that counts the write deadlines set
// on it (http.ResponseController finds SetWriteDeadline).
type deadlineCounter struct {
	http.ResponseWriter
	n int
}

func (d *deadlineCounter) SetWriteDeadline(time.Time) error { d.n++; return nil }

// TestWriteIdleHandlerSlowToWrite: a handler that starts writing after the
// idle timeout (a long upload answered at its end) still gets its response
// out: its first write moves the deadline the request began with.
func TestWriteIdleHandlerSlowToWrite(t *testing.T) {
	const idle = 50 * time.Millisecond
	srv := httptest.NewServer(WriteIdle(idle, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(idle + time.Second + 100*time.Millisecond)
		_, _ = w.Write([]byte("late"))
	})))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || string(b) != "late" {
		t.Fatalf("body %q, %v", b, err)
	}
}

// BenchmarkWriteIdleShortResponse: the middleware around a 1 KiB response
// (write deadlines set per request as a metric).
func BenchmarkWriteIdleShortResponse(b *testing.B) {
	body := make([]byte, 1024)
	h := WriteIdle(time.Minute, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
	}))
	req := httptest.NewRequest("GET", "/", nil)
	dc := &deadlineCounter{ResponseWriter: httptest.NewRecorder()}
	b.ReportAllocs()
	for b.Loop() {
		dc.ResponseWriter = httptest.NewRecorder()
		h.ServeHTTP(dc, req)
	}
	b.ReportMetric(float64(dc.n)/float64(b.N), "deadlines/op")
}
