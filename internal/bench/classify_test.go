package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"syscall"
	"testing"
	"time"
)

func TestClassifyErr(t *testing.T) {
	opErr := func(err error) error {
		return &url.Error{Op: "Put", URL: "http://x", Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", err)}}
	}
	for _, c := range []struct {
		name     string
		err      error
		stopping bool
		class    string
		outcome  outcome
	}{
		{"refused", opErr(syscall.ECONNREFUSED), false, classRefused, outcomeFailed},
		{"reset", opErr(syscall.ECONNRESET), false, classReset, outcomeFailed},
		{"broken pipe", opErr(syscall.EPIPE), false, classReset, outcomeFailed},
		{"deadline", &url.Error{Op: "Get", URL: "http://x", Err: context.DeadlineExceeded}, false, classTimeout, outcomeFailed},
		{"deadline while stopping", fmt.Errorf("x: %w", context.DeadlineExceeded), true, classCanceled, outcomeCanceled},
		{"canceled by the run", &url.Error{Op: "Get", URL: "http://x", Err: context.Canceled}, true, classCanceled, outcomeCanceled},
		{"canceled otherwise", context.Canceled, false, classOther, outcomeFailed},
		{"eof", &url.Error{Op: "Get", URL: "http://x", Err: io.EOF}, false, classClosed, outcomeFailed},
		{"unexpected eof", fmt.Errorf("reading body: %w", io.ErrUnexpectedEOF), false, classClosed, outcomeFailed},
		{"dns", &net.DNSError{Err: "no such host", Name: "nope.invalid"}, false, classDNS, outcomeFailed},
		{"other", errors.New("boom"), false, classOther, outcomeFailed},
	} {
		t.Run(c.name, func(t *testing.T) {
			class, oc := classifyErr(c.err, c.stopping)
			if class != c.class || oc != c.outcome {
				t.Errorf("classifyErr(%v) = %s/%d, want %s/%d", c.err, class, oc, c.class, c.outcome)
			}
		})
	}
}

func TestClassifyStatus(t *testing.T) {
	ra := http.Header{"Retry-After": {"2"}}
	for _, c := range []struct {
		status  int
		h       http.Header
		s3code  string
		class   string
		outcome outcome
	}{
		{500, nil, "", "http_500", outcomeFailed},
		{404, nil, "NoSuchKey", "http_404", outcomeFailed},
		{429, nil, "", "http_429", outcomeShed},
		{429, ra, "", "http_429", outcomeShed},
		{503, ra, "", "http_503", outcomeShed},
		{503, nil, "SlowDown", "http_503", outcomeShed},
		{503, nil, "", "http_503", outcomeFailed}, // no sign it was deliberate
		{502, ra, "", "http_502", outcomeFailed},
	} {
		class, oc := classifyStatus(c.status, c.h, c.s3code)
		if class != c.class || oc != c.outcome {
			t.Errorf("classifyStatus(%d, %v, %q) = %s/%d, want %s/%d", c.status, c.h, c.s3code, class, oc, c.class, c.outcome)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"":     0,
		"3":    3 * time.Second,
		"-1":   0,
		"soon": 0,
		now.Add(7 * time.Second).Format(http.TimeFormat): 7 * time.Second,
	} {
		if got := retryAfter(http.Header{"Retry-After": {v}}, now); got != want {
			t.Errorf("retryAfter(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestErrorCode(t *testing.T) {
	if got := errorCode(nil, []byte(`{"type":"x","code":"quota_exceeded"}`)); got != "quota_exceeded" {
		t.Errorf("problem code = %q", got)
	}
	if got := errorCode(nil, []byte(`<?xml version="1.0"?><Error><Code>SlowDown</Code><Message>x</Message></Error>`)); got != "SlowDown" {
		t.Errorf("S3 code = %q", got)
	}
	if got := errorCode(nil, []byte("plain text")); got != "" {
		t.Errorf("plain text code = %q", got)
	}
}

// TestDoClassifiesRealFailures drives caller.do against real sockets: a
// closed port, a server that resets, one that hangs, one that sheds.
func TestDoClassifiesRealFailures(t *testing.T) {
	closed := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		return "http://" + addr + "/"
	}()
	reset := rawServer(t, func(c net.Conn) {
		io.ReadFull(c, make([]byte, 10))
		c.(*net.TCPConn).SetLinger(0)
		c.Close()
	})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	defer hang.Close()
	shed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3")
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(503)
		io.WriteString(w, `{"code":"unavailable"}`)
	}))
	defer shed.Close()

	col := newCollector(time.Now())
	var counters byteCounters
	c := &caller{client: newHTTPClient(4, 300*time.Millisecond, &counters), timeout: 300 * time.Millisecond, col: col}
	for _, tc := range []struct {
		url, class string
		outcome    outcome
	}{
		{closed, classRefused, outcomeFailed},
		{reset, classReset, outcomeFailed},
		{hang.URL, classTimeout, outcomeFailed},
		{shed.URL, "http_503", outcomeShed},
	} {
		_, err := c.do(context.Background(), &request{name: "probe", method: "GET", url: tc.url})
		var re *reqError
		if !errors.As(err, &re) {
			t.Fatalf("%s: error %v is not a reqError", tc.url, err)
		}
		if re.class != tc.class || re.outcome != tc.outcome {
			t.Errorf("%s: %s/%d (%s), want %s/%d", tc.url, re.class, re.outcome, re.msg, tc.class, tc.outcome)
		}
		if tc.outcome == outcomeShed && re.retryAfter != 3*time.Second {
			t.Errorf("retry after = %v, want 3s", re.retryAfter)
		}
	}
	total, failed, shedN := col.totals()
	if total != 4 || failed != 3 || shedN != 1 {
		t.Errorf("totals = %d/%d/%d, want 4 requests, 3 failed, 1 shed", total, failed, shedN)
	}
	if counters.sent.Load() == 0 || counters.received.Load() == 0 {
		t.Errorf("bytes not counted: sent %d received %d", counters.sent.Load(), counters.received.Load())
	}
}

// rawServer accepts TCP connections and hands each to handle.
func rawServer(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go handle(c)
		}
	}()
	return "http://" + l.Addr().String() + "/"
}
