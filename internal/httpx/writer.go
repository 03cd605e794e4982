package httpx

import (
	"io"
	"net/http"
)

// Recorder wraps a ResponseWriter to record the status and bytes written.
// It keeps the fast paths: ReadFrom reaches the connection's ReadFrom (so
// sendfile still works for files), Flush and Unwrap (for
// http.ResponseController) pass through.
type Recorder struct {
	http.ResponseWriter
	Status  int
	Written int64
}

// WriteHeader implements http.ResponseWriter.
func (w *Recorder) WriteHeader(code int) {
	if w.Status == 0 && code >= 200 {
		w.Status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write implements http.ResponseWriter.
func (w *Recorder) Write(p []byte) (int, error) {
	if w.Status == 0 {
		w.Status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.Written += int64(n)
	return n, err
}

// ReadFrom implements io.ReaderFrom.
func (w *Recorder) ReadFrom(src io.Reader) (int64, error) {
	if w.Status == 0 {
		w.Status = http.StatusOK
	}
	var n int64
	var err error
	if rf, ok := w.ResponseWriter.(io.ReaderFrom); ok {
		n, err = rf.ReadFrom(src)
	} else {
		n, err = io.Copy(onlyWriter{w.ResponseWriter}, src)
	}
	w.Written += n
	return n, err
}

// Flush implements http.Flusher.
func (w *Recorder) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *Recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

type onlyWriter struct{ io.Writer }

// CountingBody counts the bytes read from a request body.
type CountingBody struct {
	io.ReadCloser
	N int64
}

// Read implements io.Reader.
func (c *CountingBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.N += int64(n)
	return n, err
}
