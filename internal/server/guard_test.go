package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/auth"
	"github.com/coffer-storage/coffer/internal/config"
	"github.com/coffer-storage/coffer/internal/httpapi"
	"github.com/coffer-storage/coffer/internal/s3api"
	"github.com/coffer-storage/coffer/internal/s3api/sigv4"
)

func testServer(t *testing.T) *Server {
	t.Helper()
	cfg := config.Defaults()
	cfg.Data = t.TempDir()
	s, err := New(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestAdmissionConfig: the admission controller's settings are
// config.Config's, resolved there: --max-in-flight-per-client 0 is no
// per-client bound, --admission-floor 0 is 8 × the cores.
func TestAdmissionConfig(t *testing.T) {
	s := testServer(t)
	if got := s.admission.Config(); got.MaxInFlight != 4096 || got.PerClient != 128 || got.Target != 5*time.Millisecond ||
		got.MinLimit != 8*runtime.GOMAXPROCS(0) || got.Fixed {
		t.Errorf("defaults: %+v", got)
	}
	cfg := config.Defaults()
	cfg.Data, cfg.MaxInFlightPerClient, cfg.AdmissionFloor = t.TempDir(), 0, 3
	u, err := New(t.Context(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	if got := u.admission.Config(); got.PerClient != 0 || got.PerClientAnonymous != 0 || got.MinLimit != 3 {
		t.Errorf("--max-in-flight-per-client 0 --admission-floor 3: %+v", got)
	}
}

var panicking = http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") })

// TestPanicIsAnS3Error: a panic behind the S3 listener's guard is answered
// with an S3 XML InternalError carrying the request ID, not problem+json.
func TestPanicIsAnS3Error(t *testing.T) {
	s := testServer(t)
	api := s3api.New(s.s3Services(), s3api.ConfigFrom(config.Defaults()), nil)
	h := s.guard("s3-test", api.Classify, api.WriteError, panicking)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/bucket/key", nil))
	var e struct {
		Code      string `xml:"Code"`
		RequestID string `xml:"RequestId"`
	}
	if err := xml.Unmarshal(rec.Body.Bytes(), &e); err != nil {
		t.Fatalf("body is not S3 XML: %v\n%s", err, rec.Body)
	}
	if got, want := rec.Code, 500; got != want {
		t.Errorf("status: got %d, want %d", got, want)
	}
	if got, want := e.Code, "InternalError"; got != want {
		t.Errorf("code: got %q, want %q", got, want)
	}
	if e.RequestID == "" || e.RequestID != rec.Header().Get("X-Amz-Request-Id") {
		t.Errorf("RequestId %q, x-amz-request-id %q", e.RequestID, rec.Header().Get("X-Amz-Request-Id"))
	}
}

// TestPanicIsAProblem: the same on the file API's guard is a problem.
func TestPanicIsAProblem(t *testing.T) {
	s := testServer(t)
	api := httpapi.New(s.apiServices(), httpapi.ConfigFrom(config.Defaults()), nil)
	h := s.guard("file-test", api.Classify, func(w http.ResponseWriter, r *http.Request, err error) {
		httpapi.WriteProblem(w, r, s.log, err)
	}, panicking)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/me", nil))
	var p struct {
		Code      string `json:"code"`
		RequestID string `json:"request_id"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || !strings.Contains(rec.Header().Get("Content-Type"), "problem+json") {
		t.Fatalf("not a problem: %v %q\n%s", err, rec.Header().Get("Content-Type"), rec.Body)
	}
	if rec.Code != 500 || p.Code != "internal" || p.RequestID == "" {
		t.Errorf("got %d %+v", rec.Code, p)
	}
}

func TestLogPathHidesShareTokens(t *testing.T) {
	for _, tc := range []struct{ api, in, want string }{
		{"file", "/s/SECRETTOKEN", "/s/-"},
		{"file", "/s/SECRETTOKEN/a/b.txt", "/s/-/a/b.txt"},
		{"file", "/s/SECRETTOKEN/unlock", "/s/-/unlock"},
		{"file", "/api/v1/me", "/api/v1/me"},
		{"file", "/sx/y", "/sx/y"},
		{"file", "//s/SECRETTOKEN", "/s/-"},
		{"file", "/s/./SECRETTOKEN", "/s/-"},
		{"file", "/s//SECRETTOKEN", "/s/-"},
		{"file", "/api/v1/../s/SECRETTOKEN", "/api/s/-"},
		{"file", "/s/s/../s/s/SECRETTOKEN/x", "/s/-/-/-/x"},
		{"file", "/s/SECRETTOKEN/../../api/v1/me", "/api/v1/me"},
		{"file", "/api/v1/buckets/b/files/dir/", "/api/v1/buckets/b/files/dir/"},
		{"file", "*", "*"},
		{"s3", "/s/key", "/s/key"},
	} {
		if got := logPath(tc.api, tc.in); got != tc.want {
			t.Errorf("logPath(%s, %q) = %q, want %q", tc.api, tc.in, got, tc.want)
		}
	}
}

// TestNosniffOnEveryResponse: every answer of both listeners, success or
// error, JSON, XML or plain text, carries X-Content-Type-Options: nosniff
// (the guard sets it once, before any handler runs).
func TestNosniffOnEveryResponse(t *testing.T) {
	e := newShareEnv(t)
	key, err := e.s.auth.Keys.CreateAccessKey(context.Background(), e.a.id, auth.KeyOptions{Name: "nosniff"})
	if err != nil {
		t.Fatal(err)
	}
	signed := func(method, target string) *http.Request {
		req := httptest.NewRequest(method, target, nil)
		if err := sigv4.SignRequest(req, key.ID, key.Secret, "us-east-1", sigv4.EmptySHA256, time.Now()); err != nil {
			t.Fatal(err)
		}
		return req
	}
	bearer := func(method, target string) *http.Request {
		req := httptest.NewRequest(method, target, nil)
		req.Header.Set("Authorization", "Bearer "+e.a.token)
		return req
	}
	for _, tc := range []struct {
		name    string
		h       http.Handler
		req     *http.Request
		success bool
	}{
		{"file JSON success", e.s.Handler(), bearer("GET", "/api/v1/me"), true},
		{"file JSON list", e.s.Handler(), bearer("GET", "/api/v1/buckets"), true},
		{"file probe", e.s.Handler(), httptest.NewRequest("GET", "/healthz", nil), true},
		{"file problem", e.s.Handler(), httptest.NewRequest("GET", "/api/v1/me", nil), false},
		{"file unknown route", e.s.Handler(), httptest.NewRequest("GET", "/api/v1/nope", nil), false},
		{"S3 success", e.s.s3, signed("GET", "/"), true},
		{"S3 bucket list", e.s.s3, signed("GET", "/"+e.a.bucket), true},
		{"S3 error", e.s.s3, httptest.NewRequest("GET", "/", nil), false},
		{"S3 no such bucket", e.s.s3, signed("GET", "/no-such-bucket-here"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			tc.h.ServeHTTP(rec, tc.req)
			if ok := rec.Code < 300; ok != tc.success {
				t.Fatalf("status %d, want success %v\n%s", rec.Code, tc.success, rec.Body)
			}
			if got, want := rec.Header().Get("X-Content-Type-Options"), "nosniff"; got != want {
				t.Errorf("X-Content-Type-Options %q, want %q (status %d)", got, want, rec.Code)
			}
		})
	}
}

// TestS3ListenerConfig: the S3 listener's API is configured from
// config.Config: an XML body within the default bound (4 MiB) is read, a
// larger one is EntityTooLarge.
func TestS3ListenerConfig(t *testing.T) {
	e := newShareEnv(t)
	key, err := e.s.auth.Keys.CreateAccessKey(context.Background(), e.a.id, auth.KeyOptions{Name: "xml"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		bucket string
		pad    int
		status int
	}{{"xml-small", 0, 200}, {"xml-large", 4 << 20, 400}} {
		body := []byte("<CreateBucketConfiguration><LocationConstraint>us-east-1</LocationConstraint>" +
			strings.Repeat(" ", tc.pad) + "</CreateBucketConfiguration>")
		sum := sha256.Sum256(body)
		req := httptest.NewRequest("PUT", "/"+tc.bucket, bytes.NewReader(body))
		if err := sigv4.SignRequest(req, key.ID, key.Secret, "us-east-1", hex.EncodeToString(sum[:]), time.Now()); err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		e.s.s3.ServeHTTP(rec, req)
		if rec.Code != tc.status || tc.status == 400 && !strings.Contains(rec.Body.String(), "<Code>EntityTooLarge</Code>") {
			t.Errorf("%d-byte body: %d %s, want %d", len(body), rec.Code, rec.Body, tc.status)
		}
	}
}

// TestAccessLogNeverHoldsShareTokens: a link's token reaches no line of
// the log, however the path around it is spelled (doubled or dot
// segments, a detour through /api/v1/..), whether the request is served,
// redirected or refused.
func TestAccessLogNeverHoldsShareTokens(t *testing.T) {
	// A file takes the server's concurrent writes whole.
	logFile, err := os.Create(filepath.Join(t.TempDir(), "log.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	logs := func() string { b, _ := os.ReadFile(logFile.Name()); return string(b) }
	e := newShareEnvWith(t, nil, slog.New(slog.NewJSONHandler(logFile, &slog.HandlerOptions{Level: slog.LevelDebug})))
	e.put(e.a, "f.txt", []byte("shared"))
	tok := e.share(e.a, map[string]any{"key": "f.txt"}).Token
	for _, p := range []string{
		"/s/TOKEN",
		"/s/TOKEN/x",
		"//s/TOKEN",
		"/s/./TOKEN",
		"/s//TOKEN",
		"/api/v1/../s/TOKEN",
		"/api/v1/x/../../s/TOKEN/y",
		"/s/TOKEN/../../api/v1/me",
		"/%73/TOKEN",
		"/s/%2E/TOKEN",
	} {
		t.Run(p, func(t *testing.T) {
			before := logs()
			e.do(e.url, "GET", strings.Replace(p, "TOKEN", tok, 1), "", nil)
			out := strings.TrimPrefix(logs(), before)
			if !strings.Contains(out, `"msg":"request"`) {
				t.Fatalf("no access-log line for %s", p)
			}
			if strings.Contains(out, tok) {
				t.Errorf("the token is in the log:\n%s", out)
			}
		})
	}
}

// TestMetricsOnlyForLocalClients: /metrics answers a loopback peer that
// relays no one. A peer listed in --trusted-proxies is a relay even on
// loopback: without an X-Forwarded-For naming a loopback client (no
// header, only X-Client-IP, a remote or unparsable hop) its request is
// remote. The metrics token opens it to anyone.
func TestMetricsOnlyForLocalClients(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) })
	for _, tc := range []struct {
		name    string
		trusted string
		peer    string
		hdr     []string
		want    int
	}{
		{"loopback", "", "127.0.0.1:5000", nil, 200},
		{"loopback v6", "", "[::1]:5000", nil, 200},
		{"remote", "", "192.0.2.7:5000", nil, 404},
		{"loopback relaying", "", "127.0.0.1:5000", []string{"X-Forwarded-For", "192.0.2.7"}, 404},
		{"loopback relaying, Forwarded", "", "127.0.0.1:5000", []string{"Forwarded", "for=192.0.2.7"}, 404},
		{"trusted proxy, no forwarding header", "127.0.0.1/32", "127.0.0.1:5000", nil, 404},
		{"trusted proxy, X-Client-IP only", "127.0.0.1/32", "127.0.0.1:5000", []string{"X-Client-IP", "127.0.0.1"}, 404},
		{"trusted proxy, remote client", "127.0.0.1/32", "127.0.0.1:5000", []string{"X-Forwarded-For", "192.0.2.7"}, 404},
		{"trusted proxy, spoofed loopback before the client", "127.0.0.1/32", "127.0.0.1:5000", []string{"X-Forwarded-For", "127.0.0.1, 192.0.2.7"}, 404},
		{"trusted proxy, unparsable hop", "127.0.0.1/32", "127.0.0.1:5000", []string{"X-Forwarded-For", "nonsense"}, 404},
		{"trusted proxy, local client", "127.0.0.1/32", "127.0.0.1:5000", []string{"X-Forwarded-For", "127.0.0.1"}, 200},
		{"trusted remote proxy, local client", "10.0.0.0/8", "10.1.2.3:5000", []string{"X-Forwarded-For", "::1"}, 200},
		{"trusted remote proxy, no header", "10.0.0.0/8", "10.1.2.3:5000", nil, 404},
		{"token", "127.0.0.1/32", "192.0.2.7:5000", []string{"Authorization", "Bearer metrics-secret"}, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Defaults()
			cfg.MetricsToken = "metrics-secret"
			if tc.trusted != "" {
				cfg.TrustedProxies = []netip.Prefix{netip.MustParsePrefix(tc.trusted)}
			}
			s := &Server{cfg: cfg, log: slog.New(slog.DiscardHandler)}
			req := httptest.NewRequest("GET", "/metrics", nil)
			req.RemoteAddr = tc.peer
			for i := 0; i+1 < len(tc.hdr); i += 2 {
				req.Header.Set(tc.hdr[i], tc.hdr[i+1])
			}
			rec := httptest.NewRecorder()
			s.metricsGuard(ok).ServeHTTP(rec, req)
			if got := rec.Code; got != tc.want {
				t.Errorf("status %d, want %d", got, tc.want)
			}
		})
	}
}

// TestRefusedBeforeContinue: a request with "Expect: 100-continue" that
// the S3 listener refuses before asking for its body (an unknown access
// key) gets the refusal as its first answer, no 100 Continue, and the
// connection closes after it: the body is never asked for. net/http
// knows the body is unread by the type of the Body of the request it
// handed in, so no middleware may replace that request's Body (observe
// counts the bytes on its own copy). The fourth pass of issue 23 broke
// this (one request copy fewer, the counting body put on net/http's
// request): the server then read the body to reuse the connection.
func TestRefusedBeforeContinue(t *testing.T) {
	s := testServer(t)
	srv := httptest.NewServer(s.s3)
	t.Cleanup(srv.Close) // after the connections' (cleanups run last first)
	for _, method := range []string{"PUT", "POST"} {
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		req := method + " /bucket/key HTTP/1.1\r\nHost: " + srv.Listener.Addr().String() + "\r\n" +
			"Authorization: AWS4-HMAC-SHA256 Credential=AKIANOSUCHKEY0000000/20260101/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=" + strings.Repeat("0", 64) + "\r\n" +
			"X-Amz-Date: " + time.Now().UTC().Format("20060102T150405Z") + "\r\n" +
			"X-Amz-Content-Sha256: UNSIGNED-PAYLOAD\r\n" +
			"Content-Length: 1048576\r\nExpect: 100-continue\r\n\r\n"
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusContinue || resp.StatusCode < 400 {
			t.Errorf("%s: first answer %d, want the refusal", method, resp.StatusCode)
		}
		if !resp.Close {
			t.Errorf("%s: %d without Connection: close: the server would read the unread body", method, resp.StatusCode)
		}
		// The server closes without asking for the body.
		if n, err := br.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("%s: after the refusal read %d bytes, %v; want EOF", method, n, err)
		}
		c.Close()
	}
}
