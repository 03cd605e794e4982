package bench

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// outcome is what became of one request.
type outcome int

const (
	outcomeOK       outcome = iota
	outcomeFailed           // counted as an error of its class
	outcomeShed             // the server deliberately refused: 429/503 with Retry-After
	outcomeCanceled         // cut by the end of the run or Ctrl-C: not counted
)

// Error classes (besides "http_<status>").
const (
	classTimeout     = "timeout"
	classRefused     = "connection_refused"
	classReset       = "connection_reset"
	classClosed      = "connection_closed"
	classDNS         = "dns"
	classBadResponse = "bad_response"
	classCanceled    = "canceled"
	classOther       = "other"
)

// classifyErr names a transport error. stopping reports whether the run
// itself is being cancelled (then a context cancellation is ours, not the
// server's fault).
func classifyErr(err error, stopping bool) (string, outcome) {
	var ne net.Error
	var dnsErr *net.DNSError
	switch {
	case err == nil:
		return "", outcomeOK
	case errors.Is(err, context.Canceled):
		if stopping {
			return classCanceled, outcomeCanceled
		}
		return classOther, outcomeFailed
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		if stopping {
			return classCanceled, outcomeCanceled
		}
		return classTimeout, outcomeFailed
	case errors.Is(err, syscall.ECONNREFUSED):
		return classRefused, outcomeFailed
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNABORTED):
		return classReset, outcomeFailed
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		strings.Contains(err.Error(), "server closed idle connection"):
		return classClosed, outcomeFailed
	case errors.As(err, &dnsErr):
		return classDNS, outcomeFailed
	}
	return classOther, outcomeFailed
}

// classifyStatus names an unexpected HTTP status. A 429, or a 503 with
// Retry-After, or an S3 SlowDown, is deliberate load shedding.
func classifyStatus(status int, h http.Header, s3code string) (string, outcome) {
	class := "http_" + strconv.Itoa(status)
	switch {
	case status == http.StatusTooManyRequests,
		status == http.StatusServiceUnavailable && (h.Get("Retry-After") != "" || s3code == "SlowDown" || s3code == "ServiceUnavailable"):
		return class, outcomeShed
	}
	return class, outcomeFailed
}

// retryAfter parses a Retry-After header (seconds or an HTTP date); 0 if
// absent or invalid.
func retryAfter(h http.Header, now time.Time) time.Duration {
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
