package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/s3api/sigv4"
	"github.com/coffer-storage/coffer/test/testenv"
)

// The guards every listener shares (internal/server/guard.go): write-idle
// deadline, per-client bound, admission refusals in the listener's own
// format, minimum upload rate and request timeout on the S3 listener too.

// dialer dials from a given loopback address (Linux routes all of
// 127.0.0.0/8 to lo), with a tiny receive buffer when small is set, so a
// client that never reads blocks the server's writes quickly.
func dialer(from string, small bool) *net.Dialer {
	d := &net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	if small {
		d.Control = func(_, _ string, c syscall.RawConn) error {
			var serr error
			err := c.Control(func(fd uintptr) {
				serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
			})
			if err != nil {
				return err
			}
			return serr
		}
	}
	return d
}

// clientFrom is an HTTP client whose connections come from address from.
func clientFrom(from string) *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: dialer(from, false).DialContext}}
}

// stalledGET opens a connection from address from, sends a GET of
// url's path and never reads the answer. It returns the connection.
func stalledGET(t *testing.T, from, base, path string, hdr ...string) net.Conn {
	t.Helper()
	host := strings.TrimPrefix(base, "http://")
	conn, err := dialer(from, true).Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	var b strings.Builder
	fmt.Fprintf(&b, "GET %s HTTP/1.1\r\nHost: %s\r\n", path, host)
	for i := 0; i+1 < len(hdr); i += 2 {
		fmt.Fprintf(&b, "%s: %s\r\n", hdr[i], hdr[i+1])
	}
	b.WriteString("\r\n")
	if _, err := io.WriteString(conn, b.String()); err != nil {
		t.Fatal(err)
	}
	return conn
}

// metric returns the value of the first /metrics line starting with name.
func metric(t *testing.T, srv *testenv.Server, name string) string {
	t.Helper()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			return rest
		}
	}
	return ""
}

// waitMetric waits until the /metrics line name has value want.
func waitMetric(t *testing.T, srv *testenv.Server, name, want string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); metric(t, srv, name) != want; {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s, want %s", name, metric(t, srv, name), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// publicObject makes c's bucket public-read and stores size bytes at key.
func publicObject(t *testing.T, c *testenv.Client, key string, size int) {
	t.Helper()
	if st := c.JSON(t, "PATCH", "/api/v1/buckets/"+c.Bucket, map[string]string{"visibility": "public-read"}, nil); st != 200 {
		t.Fatalf("make bucket public: %d", st)
	}
	if st, _, p := put(t, c, c.Bucket, key, randBytes(t, size)); st != 201 {
		t.Fatalf("put %s: %d %+v", key, st, p)
	}
}

// TestNonReadingClientsGiveBackTheirSlots: 20 clients that request a
// large public object and never read take every slot of a
// --max-in-flight 20 node, on both listeners and on the sendfile path;
// after the write-idle timeout their requests fail, the slots come back
// and another user is served.
func TestNonReadingClientsGiveBackTheirSlots(t *testing.T) {
	t.Parallel()
	srv := testenv.Start(t, "--max-in-flight", "20", "--max-in-flight-per-client", "0",
		"--write-idle-timeout", "2s", "--admission", "fixed")
	owner := srv.NewUser(t)
	publicObject(t, owner, "big.bin", 64<<20)
	other := srv.NewUser(t)

	start := time.Now()
	for i := range 20 {
		from := fmt.Sprintf("127.0.0.%d", 10+i)
		if i%2 == 0 {
			stalledGET(t, from, srv.URL, testenv.FileURL(owner.Bucket, "big.bin"))
		} else {
			stalledGET(t, from, srv.S3URL, "/"+owner.Bucket+"/big.bin")
		}
	}
	// While they hold the slots, everybody else is refused...
	waitMetric(t, srv, `coffer_admission_in_flight{api="file",class="read"}`, "10")
	waitMetric(t, srv, `coffer_admission_in_flight{api="s3",class="read"}`, "10")
	if resp := other.Do(t, "GET", "/api/v1/me", nil); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("with 20 stalled downloads on a --max-in-flight 20 node: %d, want 503", resp.StatusCode)
	} else {
		resp.Body.Close()
	}
	// ...until the write-idle deadline gives them back.
	for {
		resp := other.Do(t, "GET", "/api/v1/me", nil)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			break
		}
		if time.Since(start) > 15*time.Second {
			t.Fatalf("still %d %v after the stalled clients' write-idle timeout", resp.StatusCode, time.Since(start))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("slots back after %v", time.Since(start).Round(time.Millisecond))
	// Every stalled download's handler returns (their writes stopped at
	// slightly different times, so their deadlines differ by up to a
	// second or two).
	waitMetric(t, srv, `coffer_admission_in_flight{api="file",class="read"}`, "0")
	waitMetric(t, srv, `coffer_admission_in_flight{api="s3",class="read"}`, "0")
	waitMetric(t, srv, `coffer_http_in_flight_requests{api="s3"}`, "0")
}

// holdUpload starts an upload from address from whose body never
// finishes, holding an admission slot until the test ends; it returns
// once the server has read the first byte.
func holdUpload(t *testing.T, c *testenv.Client, from, key string) {
	t.Helper()
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.CloseWithError(io.ErrUnexpectedEOF) })
	hc := clientFrom(from)
	req, err := http.NewRequest("PUT", c.Base+testenv.FileURL(c.Bucket, key), pr)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = 1 << 20
	req.Header.Set("Authorization", "Bearer "+c.Token)
	go func() {
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
		}
	}()
	if _, err := pw.Write([]byte{1}); err != nil {
		t.Fatal(err)
	}
}

// TestPerClientBound: one address cannot take more than its share of
// concurrent requests (a quarter of it without credentials), on either
// listener, while other addresses are served; refusals are 429 problems on
// the file API and S3 SlowDown errors on the S3 API, with Retry-After.
func TestPerClientBound(t *testing.T) {
	t.Parallel()
	srv := testenv.Start(t, "--max-in-flight-per-client", "8", "--admission", "fixed")
	a := newS3User(t, srv)
	publicObject(t, a.Client, "pub.bin", 16<<20)
	b := srv.NewUser(t)

	for i := range 8 {
		holdUpload(t, a.Client, "127.0.0.2", fmt.Sprintf("slow-%d", i))
	}
	// All 8 are admitted before the 9th is tried.
	waitMetric(t, srv, `coffer_admission_in_flight{api="file",class="write"}`, "8")
	// The 9th request of 127.0.0.2: refused on the file API...
	waitStatus := func(do func() (*http.Response, error), want int) *http.Response {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			resp, err := do()
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			resp.Body = io.NopCloser(bytes.NewReader(body))
			if resp.StatusCode == want || time.Now().After(deadline) {
				return resp
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	hc := clientFrom("127.0.0.2")
	resp := waitStatus(func() (*http.Response, error) {
		req, _ := http.NewRequest("GET", srv.URL+"/api/v1/me", nil)
		req.Header.Set("Authorization", "Bearer "+a.Token)
		return hc.Do(req)
	}, http.StatusTooManyRequests)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(resp.Header.Get("Content-Type"), "problem+json") ||
		resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), `"rate_limited"`) {
		t.Fatalf("9th file API request from one address: %d %q Retry-After=%q %s", resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Retry-After"), body)
	}
	// ...and on the S3 API, in S3's format.
	req, _ := http.NewRequest("GET", srv.S3URL+"/"+a.Client.Bucket+"/pub.bin", nil)
	if err := sigv4.SignRequest(req, a.id, a.secret, "us-east-1", sigv4.UnsignedPayload, time.Now()); err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	var e struct {
		Code      string `xml:"Code"`
		RequestID string `xml:"RequestId"`
	}
	if xml.Unmarshal(body, &e); resp.StatusCode != 503 || e.Code != "SlowDown" || e.RequestID == "" ||
		e.RequestID != resp.Header.Get("X-Amz-Request-Id") || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("9th S3 request from one address: %d %s (request id header %q)", resp.StatusCode, body, resp.Header.Get("X-Amz-Request-Id"))
	}
	// Another address is served meanwhile.
	if resp := b.Do(t, "GET", "/api/v1/me", nil); resp.StatusCode != 200 {
		t.Fatalf("another address: %d", resp.StatusCode)
	} else {
		resp.Body.Close()
	}

	// Anonymous requests get a quarter of the share: 2 stalled anonymous
	// downloads from 127.0.0.3 fill it, a third is refused, but a request
	// with credentials from the same address is served.
	path := testenv.FileURL(a.Client.Bucket, "pub.bin")
	stalledGET(t, "127.0.0.3", srv.URL, path)
	stalledGET(t, "127.0.0.3", srv.URL, path)
	// Both are admitted (and stuck writing) before the third is tried.
	waitMetric(t, srv, `coffer_admission_in_flight{api="file",class="read"}`, "2")
	anon := clientFrom("127.0.0.3")
	resp = waitStatus(func() (*http.Response, error) { return anon.Get(srv.URL + path) }, http.StatusTooManyRequests)
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("3rd anonymous request from one address: %d", resp.StatusCode)
	}
	req, _ = http.NewRequest("GET", srv.URL+"/api/v1/me", nil)
	req.Header.Set("Authorization", "Bearer "+b.Token)
	if resp, err := anon.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("request with credentials from the same address: %v %v", err, resp)
	} else {
		resp.Body.Close()
	}
}

// TestS3RefusalsAreS3XML: a node at --max-in-flight refuses S3 requests
// with an S3 XML error carrying a RequestId (not problem+json), and file
// API requests with a problem.
func TestS3RefusalsAreS3XML(t *testing.T) {
	t.Parallel()
	srv := testenv.Start(t, "--max-in-flight", "2", "--max-in-flight-per-client", "0", "--admission", "fixed")
	u := newS3User(t, srv)
	holdUpload(t, u.Client, "127.0.0.1", "hold-1")
	waitMetric(t, srv, `coffer_admission_in_flight{api="file",class="write"}`, "1")
	holdUpload(t, u.Client, "127.0.0.1", "hold-2")
	waitMetric(t, srv, `coffer_admission_in_flight{api="file",class="write"}`, "2")
	deadline := time.Now().Add(5 * time.Second)
	var r s3Resp
	for {
		r = u.s3(t, "GET", "/"+u.Client.Bucket+"?list-type=2", nil, "")
		if r.status == 503 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	var e struct {
		Code      string `xml:"Code"`
		RequestID string `xml:"RequestId"`
	}
	if err := xml.Unmarshal(r.body, &e); err != nil || r.status != 503 || e.Code != "ServiceUnavailable" ||
		e.RequestID == "" || e.RequestID != r.header.Get("X-Amz-Request-Id") || r.header.Get("Retry-After") == "" ||
		!strings.Contains(r.header.Get("Content-Type"), "xml") {
		t.Fatalf("S3 request at capacity: %d %q %s (err %v)", r.status, r.header.Get("Content-Type"), r.body, err)
	}
	resp := u.Do(t, "GET", "/api/v1/me", nil)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || !strings.Contains(resp.Header.Get("Content-Type"), "problem+json") || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("file API request at capacity: %d %q %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	// Probes are never refused.
	if resp, err := http.Get(srv.URL + "/healthz"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz at capacity: %v %v", err, resp)
	} else {
		resp.Body.Close()
	}
}

// rawS3 writes a SigV4-signed (UNSIGNED-PAYLOAD) request head for a body of
// size bytes on a new connection and returns it; the caller writes (or
// withholds) the body.
func rawS3(t *testing.T, u *s3User, method, path string, size int) net.Conn {
	t.Helper()
	req, _ := http.NewRequest(method, u.srv.S3URL+path, nil)
	req.ContentLength = int64(size)
	req.Header.Set("Content-Length", fmt.Sprint(size))
	if err := sigv4.SignRequest(req, u.id, u.secret, "us-east-1", sigv4.UnsignedPayload, time.Now()); err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", req.URL.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, req.URL.RequestURI(), req.URL.Host)
	for k, vs := range req.Header {
		for _, v := range vs {
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
	}
	b.WriteString("\r\n")
	if _, err := io.WriteString(conn, b.String()); err != nil {
		t.Fatal(err)
	}
	return conn
}

// readS3Error reads one response from conn within d and returns its
// status and S3 error code.
func readS3Error(t *testing.T, conn net.Conn, d time.Duration) (int, string, time.Duration) {
	t.Helper()
	start := time.Now()
	conn.SetReadDeadline(start.Add(d))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer within %v: %v", d, err)
	}
	body, _ := io.ReadAll(resp.Body)
	var e struct {
		Code string `xml:"Code"`
	}
	xml.Unmarshal(body, &e)
	return resp.StatusCode, e.Code, time.Since(start)
}

// TestS3Slowloris: an S3 upload that stalls mid-body is cut after the
// minimum-rate grace (10s), with S3's RequestTimeout, and nothing is
// stored.
func TestS3Slowloris(t *testing.T) {
	t.Parallel()
	srv := testenv.Start(t)
	u := newS3User(t, srv)
	conn := rawS3(t, u, "PUT", "/"+u.Client.Bucket+"/slow.bin", 100000)
	if _, err := conn.Write(make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	status, code, took := readS3Error(t, conn, 25*time.Second)
	if status != 400 || code != "RequestTimeout" {
		t.Fatalf("stalled S3 upload: %d %s after %v", status, code, took)
	}
	u.absent(t, "/"+u.Client.Bucket+"/slow.bin")
}

// TestS3RequestTimeout: a request that moves no object bytes is bounded by
// --request-timeout on the S3 listener too, even when its body trickles in
// fast enough for the minimum rate.
func TestS3RequestTimeout(t *testing.T) {
	t.Parallel()
	srv := testenv.Start(t, "--request-timeout", "1s")
	u := newS3User(t, srv)
	body := []byte(`<CreateBucketConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><LocationConstraint>us-east-1</LocationConstraint></CreateBucketConfiguration>`)
	bucket := "trickle-" + strings.ToLower(fmt.Sprintf("%x", randBytes(t, 3)))
	conn := rawS3(t, u, "PUT", "/"+bucket, len(body))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range body {
			select {
			case <-ctx.Done():
				return
			case <-time.After(40 * time.Millisecond): // ~5 s in all
			}
			if _, err := conn.Write(body[i : i+1]); err != nil {
				return
			}
		}
	})
	status, code, took := readS3Error(t, conn, 10*time.Second)
	cancel()
	wg.Wait()
	if status != 400 || code != "RequestTimeout" || took > 4*time.Second {
		t.Fatalf("trickled CreateBucket: %d %s after %v, want 400 RequestTimeout after ~1s", status, code, took)
	}
	if r := u.s3(t, "HEAD", "/"+bucket, nil, ""); r.status != 404 {
		t.Fatalf("bucket created by a timed-out request: HEAD %d", r.status)
	}
}

// TestHeaderLimits: both listeners refuse oversized request headers.
func TestHeaderLimits(t *testing.T) {
	t.Parallel()
	srv := testenv.Start(t)
	for _, base := range []string{srv.URL, srv.S3URL} {
		req, _ := http.NewRequest("GET", base+"/", nil)
		req.Header.Set("X-Big", strings.Repeat("a", 100<<10))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", base, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("%s with a 100 KiB header: %d, want 431", base, resp.StatusCode)
		}
	}
}

// TestOneClientCannotStarveASmallNode: on a --max-in-flight 8 node with
// the default per-client bounds (128, anonymous 32), twelve downloads
// from one address that never read hold only that address's share of the
// node (half: 4), the rest are refused with 429, and other clients are
// served meanwhile (no 503).
func TestOneClientCannotStarveASmallNode(t *testing.T) {
	t.Parallel()
	srv := testenv.Start(t, "--max-in-flight", "8", "--admission", "fixed")
	owner := srv.NewUser(t)
	publicObject(t, owner, "big.bin", 16<<20)
	other := srv.NewUser(t)

	status := map[int]int{}
	for range 12 {
		conn := stalledGET(t, "127.0.0.2", srv.URL, testenv.FileURL(owner.Bucket, "big.bin"))
		conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		// The status line and headers only: an admitted download's body
		// stays unread, its handler blocked on the full socket.
		resp, err := http.ReadResponse(bufio.NewReaderSize(conn, 4096), nil)
		if err != nil {
			t.Fatalf("stalled download %d: %v", len(status), err)
		}
		status[resp.StatusCode]++
	}
	if got, want := status[http.StatusOK], 4; got != want {
		t.Errorf("downloads admitted for one anonymous address: %d, want %d (%v)", got, want, status)
	}
	if got, want := status[http.StatusTooManyRequests], 8; got != want {
		t.Errorf("downloads refused with 429: %d, want %d (%v)", got, want, status)
	}
	// Everyone else is still served: another user, another anonymous
	// downloader.
	if resp := other.Do(t, "GET", "/api/v1/me", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("another user while one address hogs the node: %d, want 200", resp.StatusCode)
		resp.Body.Close()
	} else {
		resp.Body.Close()
	}
	resp, err := clientFrom("127.0.0.3").Get(srv.URL + testenv.FileURL(owner.Bucket, "big.bin"))
	if err != nil {
		t.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || n != 16<<20 {
		t.Errorf("another address's download: %d, %d bytes", resp.StatusCode, n)
	}
}
