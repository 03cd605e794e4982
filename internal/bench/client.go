package bench

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// byteCounters count the bytes read and written on a transport's
// connections.
type byteCounters struct{ sent, received atomic.Int64 }

type countingConn struct {
	net.Conn
	c *byteCounters
}

func (cc *countingConn) Read(p []byte) (int, error) {
	n, err := cc.Conn.Read(p)
	cc.c.received.Add(int64(n))
	return n, err
}

func (cc *countingConn) Write(p []byte) (int, error) {
	n, err := cc.Conn.Write(p)
	cc.c.sent.Add(int64(n))
	return n, err
}

// newHTTPClient returns a client with its own transport sized for conns
// concurrent requests per host, counting bytes into counters. It never
// follows redirects and never asks for compression.
func newHTTPClient(conns int, timeout time.Duration, counters *byteCounters) *http.Client {
	d := &net.Dialer{Timeout: min(timeout, 10*time.Second), KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &countingConn{Conn: c, c: counters}, nil
		},
		MaxIdleConns:          0, // no global limit
		MaxIdleConnsPerHost:   conns + 16,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: timeout,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true,
		WriteBufferSize:       64 << 10,
		ReadBufferSize:        64 << 10,
	}
	return &http.Client{
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// request is one HTTP request of a scenario.
type request struct {
	name   string // the name its measurements go under: "upload", "get", ...
	method string
	url    string
	header http.Header
	// body, if set, makes a fresh body of bodyLen bytes.
	body    func() io.Reader
	bodyLen int64
	// expect is the status that means success; 0 accepts any 2xx.
	expect int
	// sign, if set, signs the request just before it is sent.
	sign func(*http.Request) error
	// capture keeps up to this many bytes of a successful body
	// (JSON/XML answers); the rest of the body is read and dropped.
	capture int64
	// hash computes the SHA-256 of the body.
	hash bool
	// ttfb, if set, records the time to the response headers as a trend
	// of that name.
	ttfb string
}

func jsonBody(v any) (func() io.Reader, int64) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only plain structs and maps are marshalled
	}
	return func() io.Reader { return bytes.NewReader(b) }, int64(len(b))
}

// response is what came back.
type response struct {
	status int
	header http.Header
	body   []byte // up to request.capture bytes
	n      int64  // body bytes read
	sum    [32]byte
}

// reqError is a request that did not succeed. It is already recorded.
type reqError struct {
	name       string
	class      string
	outcome    outcome
	status     int
	retryAfter time.Duration
	msg        string
}

func (e *reqError) Error() string {
	return fmt.Sprintf("%s: %s: %s", e.name, e.class, e.msg)
}

// caller sends requests and records them into col (nil: not recorded, as
// in setup and audit).
type caller struct {
	client  *http.Client
	timeout time.Duration
	col     *collector
	// expect sends "Expect: 100-continue" with bodies of expectMin bytes
	// and more, as SDKs and curl do.
	expect bool
}

// expectMin is the smallest body sent with Expect: 100-continue (curl's
// threshold).
const expectMin = 1 << 20

var copyBufs = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// do sends rq and reads its whole body within the request timeout. The
// latency is measured up to the last body byte.
func (c *caller) do(ctx context.Context, rq *request) (*response, error) {
	rctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var body io.Reader
	if rq.body != nil {
		body = rq.body()
	}
	req, err := http.NewRequestWithContext(rctx, rq.method, rq.url, body)
	if err != nil {
		return nil, c.record(rq, 0, false, classOther, outcomeFailed, err.Error(), 0, 0)
	}
	if rq.body != nil {
		req.ContentLength = rq.bodyLen
		mk := rq.body
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(mk()), nil }
		if rq.bodyLen == 0 {
			req.Body = http.NoBody
		}
	}
	for k, v := range rq.header {
		req.Header[k] = v
	}
	if c.expect && rq.bodyLen >= expectMin {
		req.Header.Set("Expect", "100-continue")
	}
	if rq.sign != nil {
		if err := rq.sign(req); err != nil {
			return nil, c.record(rq, 0, false, classOther, outcomeFailed, "signing: "+err.Error(), 0, 0)
		}
	}
	start := time.Now()
	resp, err := c.client.Do(req)
	if err != nil {
		class, oc := classifyErr(err, ctx.Err() != nil)
		return nil, c.record(rq, time.Since(start), false, class, oc, err.Error(), 0, 0)
	}
	defer resp.Body.Close()
	ttfb := time.Since(start)
	out := &response{status: resp.StatusCode, header: resp.Header}
	ok := rq.expect == resp.StatusCode || rq.expect == 0 && resp.StatusCode/100 == 2
	if !ok {
		// Read (a bounded part of) the error body for its code.
		b, rerr := io.ReadAll(io.LimitReader(resp.Body, 8<<10))
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		d := time.Since(start)
		if rerr != nil {
			class, oc := classifyErr(rerr, ctx.Err() != nil)
			return nil, c.record(rq, d, true, class, oc, "reading error body: "+rerr.Error(), 0, 0)
		}
		code := errorCode(resp.Header, b)
		class, oc := classifyStatus(resp.StatusCode, resp.Header, code)
		msg := resp.Status
		if code != "" {
			msg += " " + code
		}
		return out, c.record(rq, d, true, class, oc, msg, resp.StatusCode, retryAfter(resp.Header, time.Now()))
	}
	var h hash.Hash
	var w io.Writer = io.Discard
	if rq.hash {
		h = sha256.New()
		w = h
	}
	var capBuf *bytes.Buffer
	if rq.capture > 0 {
		capBuf = &bytes.Buffer{}
		w = io.MultiWriter(w, &limitedWriter{b: capBuf, n: rq.capture})
	}
	bp := copyBufs.Get().(*[]byte)
	n, rerr := io.CopyBuffer(onlyWriter{w}, onlyReader{resp.Body}, *bp)
	copyBufs.Put(bp)
	d := time.Since(start)
	out.n = n
	if rerr != nil {
		class, oc := classifyErr(rerr, ctx.Err() != nil)
		return nil, c.record(rq, d, true, class, oc, "reading body: "+rerr.Error(), 0, 0)
	}
	if capBuf != nil {
		out.body = capBuf.Bytes()
	}
	if h != nil {
		h.Sum(out.sum[:0])
	}
	if c.col != nil {
		c.col.request(rq.name, d, true, outcomeOK, "", "")
		c.col.check(statusCheck(rq), true)
		if rq.ttfb != "" {
			c.col.trend(rq.ttfb, ttfb)
		}
	}
	return out, nil
}

func (c *caller) record(rq *request, d time.Duration, responded bool, class string, oc outcome, msg string, status int, ra time.Duration) error {
	if c.col != nil {
		c.col.request(rq.name, d, responded, oc, class, msg)
		if oc == outcomeFailed {
			c.col.check(statusCheck(rq), false)
		}
	}
	return &reqError{name: rq.name, class: class, outcome: oc, status: status, retryAfter: ra, msg: msg}
}

// fail records that a response to rq arrived but its content is wrong.
func (c *caller) fail(name, check, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if c.col != nil {
		c.col.fail(name, classBadResponse, msg)
		c.col.check(check, false)
	}
	return &reqError{name: name, class: classBadResponse, outcome: outcomeFailed, msg: msg}
}

// pass records a passed content check.
func (c *caller) pass(check string) {
	if c.col != nil {
		c.col.check(check, true)
	}
}

// verify records a content check and returns a failure if !ok.
func (c *caller) verify(ok bool, name, check, format string, args ...any) error {
	if ok {
		c.pass(check)
		return nil
	}
	return c.fail(name, check, format, args...)
}

func statusCheck(rq *request) string {
	if rq.expect == 0 {
		return rq.name + " status is 2xx"
	}
	return rq.name + " status is " + strconv.Itoa(rq.expect)
}

// errorCode extracts the machine-readable code of an error body: the
// "code" of a problem+json, or the <Code> of an S3 XML error.
func errorCode(h http.Header, b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if b[0] == '{' {
		var p struct {
			Code string `json:"code"`
		}
		if json.Unmarshal(b, &p) == nil {
			return p.Code
		}
		return ""
	}
	var e struct {
		Code string `xml:"Code"`
	}
	if bytes.HasPrefix(bytes.TrimSpace(b), []byte("<")) && xml.Unmarshal(b, &e) == nil {
		return e.Code
	}
	return ""
}

// limitedWriter keeps the first n bytes written and drops the rest.
type limitedWriter struct {
	b *bytes.Buffer
	n int64
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if room := l.n - int64(l.b.Len()); room > 0 {
		l.b.Write(p[:min(int64(len(p)), room)])
	}
	return len(p), nil
}

// onlyWriter and onlyReader hide ReadFrom/WriteTo so io.CopyBuffer uses
// the pooled buffer.
type onlyWriter struct{ io.Writer }
type onlyReader struct{ io.Reader }
