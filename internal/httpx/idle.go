package httpx

import (
	"io"
	"net/http"
	"time"
)

// idleChunk is how much of a ReadFrom (the sendfile path) goes out under
// one write deadline: a client must take at least this much per idle
// timeout to keep the connection.
const idleChunk = 256 << 10

// IdleWriter gives every write of a response a deadline: a write that
// makes no progress for Idle fails, so a client that stops reading gives
// back its goroutine and admission slot instead of holding them until the
// whole body would have gone out. Writes refresh the deadline (at most
// once a second); ReadFrom (sendfile) sends in chunks of 256 KiB, each
// under a fresh deadline, and keeps the *os.File reachable so the kernel
// still copies.
//
// Use it through WriteIdle, which clears the deadline when a request
// starts and leaves one when it ends, so net/http's final flush is bounded
// too.
type IdleWriter struct {
	http.ResponseWriter
	rc   http.ResponseController // by value: one allocation a request fewer
	idle time.Duration
	set  time.Time // when the deadline was last moved; zero: never in this request
}

// NewIdleWriter wraps w with a write-idle deadline of idle.
func NewIdleWriter(w http.ResponseWriter, idle time.Duration) *IdleWriter {
	iw := &IdleWriter{ResponseWriter: w, idle: idle}
	iw.rc = *http.NewResponseController(w)
	return iw
}

func (w *IdleWriter) refresh() {
	now := time.Now()
	if !w.set.IsZero() && now.Sub(w.set) < time.Second {
		return
	}
	if w.rc.SetWriteDeadline(now.Add(w.idle)) == nil {
		w.set = now
	}
}

// Write implements http.ResponseWriter.
func (w *IdleWriter) Write(p []byte) (int, error) {
	w.refresh()
	return w.ResponseWriter.Write(p)
}

// WriteHeader implements http.ResponseWriter (1xx responses are written
// at once).
func (w *IdleWriter) WriteHeader(code int) {
	w.refresh()
	w.ResponseWriter.WriteHeader(code)
}

// ReadFrom implements io.ReaderFrom: src goes out in chunks, each under a
// fresh deadline. An *io.LimitedReader over a file (what diskblob hands
// over) is narrowed in place rather than wrapped, so the connection still
// sees the file and uses sendfile.
func (w *IdleWriter) ReadFrom(src io.Reader) (int64, error) {
	rf, ok := w.ResponseWriter.(io.ReaderFrom)
	if !ok {
		return io.Copy(onlyWriter{w}, src)
	}
	var total int64
	lr, limited := src.(*io.LimitedReader)
	for {
		w.set = time.Time{} // every chunk gets a fresh deadline
		w.refresh()
		var n int64
		var err error
		if limited {
			if lr.N <= 0 {
				return total, nil
			}
			rest := lr.N
			lr.N = min(rest, idleChunk)
			n, err = rf.ReadFrom(lr)
			lr.N = rest - n
		} else {
			n, err = rf.ReadFrom(&io.LimitedReader{R: src, N: idleChunk})
		}
		total += n
		if err != nil || n == 0 {
			return total, err
		}
	}
}

// Flush implements http.Flusher.
func (w *IdleWriter) Flush() {
	w.refresh()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *IdleWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// WriteIdle is middleware giving every response of next a write-idle
// deadline of idle (see IdleWriter).
func WriteIdle(idle time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		iw := NewIdleWriter(w, idle)
		// A deadline left by the previous request on this connection must
		// not cut this one (net/http only resets write deadlines when
		// Server.WriteTimeout is set).
		_ = iw.rc.SetWriteDeadline(time.Time{})
		next.ServeHTTP(iw, r)
		// Bound what net/http still writes after the handler returns (the
		// buffered tail of the body, the chunked terminator).
		_ = iw.rc.SetWriteDeadline(time.Now().Add(idle))
	})
}
