package httpx

import (
	"errors"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// MinRate is a minimum transfer rate: after Grace, a client must have moved
// at least BytesPerSec on average, and may never stall longer than Idle.
type MinRate struct {
	// BytesPerSec is taken as given (the server's --min-upload-rate); 0:
	// no average rate, only Idle.
	BytesPerSec int64
	Grace       time.Duration // default 10s
	Idle        time.Duration // default 60s
}

func (m MinRate) withDefaults() MinRate {
	if m.Grace <= 0 {
		m.Grace = 10 * time.Second
	}
	if m.Idle <= 0 {
		m.Idle = 60 * time.Second
	}
	return m
}

// RateReader enforces a MinRate on a request body by moving the
// connection's read deadline as bytes arrive (slowloris protection for
// uploads). A client that falls behind gets errcode.Timeout.
type RateReader struct {
	rc      *http.ResponseController
	body    io.ReadCloser
	m       MinRate
	start   time.Time
	n       int64
	current time.Time
	until   time.Time // if set, no read may end after it
}

// NewRateReader wraps r.Body; w must be the request's ResponseWriter.
func NewRateReader(w http.ResponseWriter, body io.ReadCloser, m MinRate) *RateReader {
	return &RateReader{rc: http.NewResponseController(w), body: body, m: m.withDefaults(), start: time.Now()}
}

// Until bounds the whole body by t as well (the request's deadline): a
// body still arriving at t fails with errcode.Timeout, however fast.
func (rr *RateReader) Until(t time.Time) *RateReader {
	rr.until = t
	return rr
}

// Read implements io.Reader.
func (rr *RateReader) Read(p []byte) (int, error) {
	now := time.Now()
	dl := now.Add(rr.m.Idle)
	if rr.m.BytesPerSec > 0 {
		if avg := rr.start.Add(rr.m.Grace + time.Duration(float64(rr.n)/float64(rr.m.BytesPerSec)*float64(time.Second))); avg.Before(dl) {
			dl = avg
		}
	}
	if !rr.until.IsZero() && rr.until.Before(dl) {
		dl = rr.until
	}
	// Moving a deadline is cheap but not free: skip sub-second changes.
	if d := dl.Sub(rr.current); d > time.Second || d < -time.Second {
		if err := rr.rc.SetReadDeadline(dl); err == nil {
			rr.current = dl
		}
	}
	n, err := rr.body.Read(p)
	rr.n += int64(n)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		if !rr.until.IsZero() && !time.Now().Before(rr.until) {
			return n, errcode.Wrap(errcode.Timeout, err, "request body still arriving at the request deadline")
		}
		return n, errcode.Wrap(errcode.Timeout, err, "upload is slower than the minimum rate of %d bytes/s", rr.m.BytesPerSec)
	}
	return n, err
}

// Close implements io.Closer.
func (rr *RateReader) Close() error { return rr.body.Close() }
