package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/coffer-storage/coffer/test/testenv"
)

// testCA is a certificate authority made by the test; the clients trust
// it and nothing else.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "coffer e2e CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

// files writes a fresh certificate (CN "coffer", serial) and its key into
// a temporary folder and returns their paths.
func (ca *testCA) files(t *testing.T, serial int64) tlsFiles {
	t.Helper()
	dir := t.TempDir()
	f := tlsFiles{filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")}
	p := ca.issue(t, serial, "coffer")
	f.write(t, p.cert, p.key, time.Now())
	return f
}

// tlsPair is a server certificate's PEM files' contents.
type tlsPair struct{ cert, key []byte }

// issue makes a server certificate for 127.0.0.1 with the given serial
// and common name.
func (ca *testCA) issue(t *testing.T, serial int64, cn string) tlsPair {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return tlsPair{
		cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		key:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}),
	}
}

// issueLike issues certificates until one has p's file sizes (ECDSA
// signatures vary by a byte or two), so that only the contents differ.
func (ca *testCA) issueLike(t *testing.T, p tlsPair, serial int64, cn string) tlsPair {
	t.Helper()
	for range 200 {
		q := ca.issue(t, serial, cn)
		if len(q.cert) == len(p.cert) && len(q.key) == len(p.key) {
			return q
		}
	}
	t.Fatal("no certificate of the same size in 200 tries")
	return tlsPair{}
}

type tlsFiles struct{ cert, key string }

// write writes the files in place, certificate first (as a careless
// operator would: the server sees every intermediate state), with
// modification time mtime.
func (f tlsFiles) write(t *testing.T, cert, key []byte, mtime time.Time) {
	t.Helper()
	for _, w := range []struct {
		path string
		data []byte
	}{{f.cert, cert}, {f.key, key}} {
		if w.data == nil {
			continue
		}
		if err := os.WriteFile(w.path, w.data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(w.path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
}

// servedSerial opens a new connection to base and returns the serial of
// the certificate it was served.
func servedSerial(t *testing.T, srv *testenv.Server, base string) int64 {
	t.Helper()
	hc := srv.HTTPClient()
	defer hc.CloseIdleConnections()
	resp, err := hc.Get(base + "/healthz")
	if err != nil {
		t.Fatalf("GET %s/healthz: %v", base, err)
	}
	resp.Body.Close()
	return resp.TLS.PeerCertificates[0].SerialNumber.Int64()
}

// waitServed polls new connections to both listeners until both are
// served the certificate with serial want.
func waitServed(t *testing.T, srv *testenv.Server, want int64) time.Duration {
	t.Helper()
	start := time.Now()
	for _, base := range []string{srv.URL, srv.S3URL} {
		for {
			got := servedSerial(t, srv, base)
			if got == want {
				break
			}
			if time.Since(start) > 10*time.Second {
				t.Fatalf("%s: new connections still get serial %d %v after the files changed, want %d\n%s", base, got, time.Since(start), want, srv.Stderr())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return time.Since(start)
}

// protoRecorder is an aws.HTTPClient that records the protocol of every
// response.
type protoRecorder struct {
	hc     *http.Client
	mu     sync.Mutex
	protos []string
}

func (p *protoRecorder) Do(req *http.Request) (*http.Response, error) {
	resp, err := p.hc.Do(req)
	if err == nil {
		p.mu.Lock()
		p.protos = append(p.protos, resp.Proto)
		p.mu.Unlock()
	}
	return resp, err
}

// TestTLS: with --tls-cert/--tls-key both listeners speak HTTPS and
// HTTP/2; the file API, SigV4-signed S3 requests from aws-sdk-go-v2 and
// direct uploads (https part URLs) work over it; a certificate rewritten
// on disk is served to new connections within seconds without a restart,
// while connections opened before keep working; a bad pair on disk keeps
// the old certificate; SIGHUP re-reads the files; a client that never
// handshakes is dropped.
func TestTLS(t *testing.T) {
	ca := newTestCA(t)
	dir := t.TempDir()
	files := tlsFiles{filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")}
	// Old modification times: a change is then taken as settled at once
	// (the reloader looks again at files changed in the last 2 s).
	p1 := ca.issue(t, 1001, "coffer-1")
	files.write(t, p1.cert, p1.key, time.Now().Add(-4*time.Hour))

	srv := testenv.StartTLS(t, ca.pool, "--tls-cert", files.cert, "--tls-key", files.key, "--default-quota", "100MiB")
	for _, u := range []string{srv.URL, srv.S3URL} {
		if !strings.HasPrefix(u, "https://") {
			t.Fatalf("announced %s, want https://", u)
		}
	}
	// A client that connects and never handshakes; checked at the end.
	silent, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "https://"))
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	silentSince := time.Now()

	t.Run("HTTP/2 on both listeners", func(t *testing.T) {
		hc := srv.HTTPClient()
		for _, u := range []string{srv.URL + "/healthz", srv.S3URL + "/"} {
			resp, err := hc.Get(u)
			if err != nil {
				t.Fatalf("GET %s: %v", u, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if got, want := resp.ProtoMajor, 2; got != want {
				t.Errorf("GET %s: %s, want HTTP/2", u, resp.Proto)
			}
			if resp.TLS == nil || resp.TLS.Version < tls.VersionTLS12 {
				t.Errorf("GET %s: TLS state %+v", u, resp.TLS)
			}
			if u == srv.S3URL+"/" && !bytes.Contains(body, []byte("<Error>")) {
				t.Errorf("anonymous ListBuckets: %d %s, want an S3 error", resp.StatusCode, body)
			}
		}
		// TLS 1.1 and older are refused.
		old := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.pool, MaxVersion: tls.VersionTLS11}}}
		for _, u := range []string{srv.URL, srv.S3URL} {
			if resp, err := old.Get(u + "/healthz"); err == nil {
				resp.Body.Close()
				t.Errorf("%s: a TLS 1.1 client was served", u)
			}
		}
	})

	c := srv.NewUser(t) // signup and login over HTTPS
	fileData := randBytes(t, 1<<20+17)
	t.Run("file API", func(t *testing.T) {
		if st, f, p := put(t, c, c.Bucket, "tls/file.bin", fileData); st != 201 || f.SHA256 != sha(fileData) {
			t.Fatalf("upload over https: %d %+v %+v", st, f, p)
		}
		resp, body := get(t, c, c.Bucket, "tls/file.bin")
		if resp.StatusCode != 200 || sha(body) != sha(fileData) {
			t.Fatalf("download over https: %d, same bytes %v", resp.StatusCode, sha(body) == sha(fileData))
		}
		if got, want := resp.ProtoMajor, 2; got != want {
			t.Errorf("download: %s, want HTTP/2", resp.Proto)
		}
	})

	t.Run("S3 with aws-sdk-go-v2", func(t *testing.T) {
		var k struct {
			ID     string `json:"access_key_id"`
			Secret string `json:"secret_access_key"`
		}
		if st := c.JSON(t, "POST", "/api/v1/keys", map[string]string{"name": "tls"}, &k); st != 201 {
			t.Fatalf("create key: %d", st)
		}
		rec := &protoRecorder{hc: srv.HTTPClient()}
		cl := s3.NewFromConfig(aws.Config{
			Region:      "us-east-1",
			Credentials: credentials.NewStaticCredentialsProvider(k.ID, k.Secret, ""),
			HTTPClient:  rec,
		}, func(o *s3.Options) {
			o.BaseEndpoint = aws.String(srv.S3URL)
			o.UsePathStyle = true
		})
		ctx := t.Context()
		data := randBytes(t, 300<<10)
		if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: &c.Bucket, Key: aws.String("tls/s3.bin"), Body: bytes.NewReader(data)}); err != nil {
			t.Fatalf("PutObject over https: %v", err)
		}
		for key, want := range map[string][]byte{"tls/s3.bin": data, "tls/file.bin": fileData} {
			out, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: &c.Bucket, Key: aws.String(key)})
			if err != nil {
				t.Fatalf("GetObject %s: %v", key, err)
			}
			got, err := io.ReadAll(out.Body)
			out.Body.Close()
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("GetObject %s: %d bytes, %v; want the %d bytes stored", key, len(got), err, len(want))
			}
		}
		list, err := cl.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &c.Bucket, Prefix: aws.String("tls/")})
		if err != nil || len(list.Contents) != 2 {
			t.Fatalf("ListObjectsV2: %v, %d objects", err, len(list.Contents))
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		for _, p := range rec.protos {
			if p != "HTTP/2.0" {
				t.Errorf("aws-sdk-go-v2 request answered over %s, want HTTP/2.0", p)
			}
		}
	})

	t.Run("direct upload part URLs", func(t *testing.T) {
		const size = 6<<20 + 5
		data := randBytes(t, size)
		var s struct {
			UploadID string `json:"upload_id"`
			PartSize int64  `json:"part_size"`
			Parts    []struct {
				PartNumber int    `json:"part_number"`
				URL        string `json:"url"`
			} `json:"parts"`
		}
		if st := c.JSON(t, "POST", "/api/v1/uploads", map[string]any{"bucket": c.Bucket, "key": "tls/direct.bin", "size": size, "part_size": 5 << 20}, &s); st != 201 || len(s.Parts) != 2 {
			t.Fatalf("create session: %d, %d parts", st, len(s.Parts))
		}
		hc := srv.HTTPClient()
		var parts []map[string]any
		for _, p := range s.Parts {
			// In the scale-out shape the URLs are the blob store's own.
			if !testenv.ScaleOut() && !strings.HasPrefix(p.URL, srv.S3URL+"/") {
				t.Fatalf("part URL %s, want one on %s", p.URL, srv.S3URL)
			}
			lo := int64(p.PartNumber-1) * s.PartSize
			req, _ := http.NewRequest("PUT", p.URL, bytes.NewReader(data[lo:min(lo+s.PartSize, size)]))
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatalf("PUT part %d: %v", p.PartNumber, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("PUT part %d: %d %s", p.PartNumber, resp.StatusCode, body)
			}
			parts = append(parts, map[string]any{"part_number": p.PartNumber, "etag": resp.Header.Get("ETag")})
		}
		var f fileJSON
		if st := c.JSON(t, "POST", "/api/v1/uploads/"+s.UploadID+"/complete", map[string]any{"parts": parts}, &f); st != 200 || f.Size != size {
			t.Fatalf("complete: %d %+v", st, f)
		}
		if resp, body := get(t, c, c.Bucket, "tls/direct.bin"); resp.StatusCode != 200 || sha(body) != sha(data) {
			t.Fatalf("download of the direct upload: %d, same bytes %v", resp.StatusCode, sha(body) == sha(data))
		}
	})

	t.Run("rotation without restart", func(t *testing.T) {
		// A connection opened before the rotation (HTTP/2: every request
		// of this client goes over it).
		before := srv.HTTPClient()
		defer before.CloseIdleConnections()
		peer := func() int64 {
			t.Helper()
			req, _ := http.NewRequest("GET", srv.URL+"/api/v1/me", nil)
			req.Header.Set("Authorization", "Bearer "+c.Token)
			resp, err := before.Do(req)
			if err != nil {
				t.Fatalf("request on the connection opened before the rotation: %v", err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("request on the connection opened before the rotation: %d", resp.StatusCode)
			}
			return resp.TLS.PeerCertificates[0].SerialNumber.Int64()
		}
		if got, want := peer(), int64(1001); got != want {
			t.Fatalf("serial %d before the rotation, want %d", got, want)
		}

		p2 := ca.issue(t, 1002, "coffer-2")
		files.write(t, p2.cert, p2.key, time.Now().Add(-3*time.Hour))
		took := waitServed(t, srv, 1002)
		t.Logf("new certificate served %v after the files changed", took.Round(time.Millisecond))
		// The old connection still works, still on the old certificate
		// (a new connection would be served 1002).
		if got, want := peer(), int64(1001); got != want {
			t.Errorf("connection opened before the rotation: serial %d, want %d (the same connection)", got, want)
		}

		// A bad pair (a new certificate with the old key) keeps the
		// certificate in service, and says so in the log.
		p3 := ca.issue(t, 1003, "coffer-3")
		files.write(t, p3.cert, nil, time.Now().Add(-2*time.Hour))
		time.Sleep(2500 * time.Millisecond) // more than the 1 s check interval
		for _, base := range []string{srv.URL, srv.S3URL} {
			if got, want := servedSerial(t, srv, base), int64(1002); got != want {
				t.Fatalf("%s: serial %d with a mismatched pair on disk, want the old %d", base, got, want)
			}
		}
		if !strings.Contains(srv.Stderr(), "TLS certificate not reloaded") {
			t.Errorf("no error logged for the mismatched pair:\n%s", srv.Stderr())
		}
		files.write(t, nil, p3.key, time.Now().Add(-2*time.Hour))
		waitServed(t, srv, 1003)
	})

	t.Run("SIGHUP", func(t *testing.T) {
		// Files whose modification times and sizes did not change are
		// invisible to the periodic check; SIGHUP reads them anyway.
		cur, err := os.ReadFile(files.cert)
		if err != nil {
			t.Fatal(err)
		}
		key, _ := os.ReadFile(files.key)
		certSt, err1 := os.Stat(files.cert)
		keySt, err2 := os.Stat(files.key)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		p4 := ca.issueLike(t, tlsPair{cur, key}, 1004, "coffer-4")
		files.write(t, p4.cert, nil, certSt.ModTime())
		files.write(t, nil, p4.key, keySt.ModTime())
		time.Sleep(2500 * time.Millisecond)
		if got, want := servedSerial(t, srv, srv.URL), int64(1003); got != want {
			t.Fatalf("serial %d before SIGHUP, want %d (the check must not see unchanged stamps)", got, want)
		}
		if err := syscall.Kill(srv.PID(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		waitServed(t, srv, 1004)
	})

	t.Run("a client that never handshakes is dropped", func(t *testing.T) {
		silent.SetReadDeadline(silentSince.Add(20 * time.Second))
		_, err := silent.Read(make([]byte, 1))
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("a connection without a handshake still open after %v", time.Since(silentSince))
		}
		if d := time.Since(silentSince); d > 15*time.Second {
			t.Errorf("dropped after %v, want about 10s (ReadHeaderTimeout)", d)
		}
	})
}

// TestTLSPlainHTTP: plain HTTP sent to a TLS listener gets a 400 (or a
// closed connection) at once, never a hang.
func TestTLSPlainHTTP(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t)
	files := ca.files(t, 7)
	srv := testenv.StartTLS(t, ca.pool, "--tls-cert", files.cert, "--tls-key", files.key)
	for _, base := range []string{srv.URL, srv.S3URL} {
		host := strings.TrimPrefix(base, "https://")
		conn, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		conn.SetDeadline(start.Add(5 * time.Second))
		fmt.Fprintf(conn, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", host)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		conn.Close()
		var ne net.Error
		switch {
		case errors.As(err, &ne) && ne.Timeout():
			t.Errorf("%s: plain HTTP request hung for %v", host, time.Since(start))
		case err == nil && resp.StatusCode != 400:
			t.Errorf("%s: plain HTTP request: %d, want 400", host, resp.StatusCode)
		}
	}
	// Strangers' failed handshakes are not warnings (they would flood the
	// log): the server runs at --log-level warn here.
	time.Sleep(200 * time.Millisecond) // the server logs after closing
	if strings.Contains(srv.Stderr(), "handshake") {
		t.Errorf("a failed handshake was logged at warn or above:\n%s", srv.Stderr())
	}
	// And the plain http:// URL fails fast for a Go client.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+strings.TrimPrefix(srv.URL, "https://")+"/healthz", nil)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Errorf("http:// on the TLS port: %d, want 400", resp.StatusCode)
		}
	} else if ctx.Err() != nil {
		t.Errorf("http:// on the TLS port hung: %v", err)
	}
}

// TestTLSGuards: the listener's guards hold over HTTPS and HTTP/2: a
// download the client stops reading (HTTP/2 flow control) gives back its
// slot after the write-idle timeout, a stalled request body meets the
// request timeout, and oversized headers are refused.
func TestTLSGuards(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t)
	files := ca.files(t, 9)
	srv := testenv.StartTLS(t, ca.pool, "--tls-cert", files.cert, "--tls-key", files.key,
		"--write-idle-timeout", "2s", "--request-timeout", "2s", "--admission", "fixed", "--max-in-flight-per-client", "0")
	owner := srv.NewUser(t)
	publicObject(t, owner, "big.bin", 32<<20)

	tlsMetric := func(name string) string {
		t.Helper()
		resp, err := srv.HTTPClient().Get(srv.URL + "/metrics")
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
	waitTLSMetric := func(name, want string, within time.Duration) {
		t.Helper()
		for deadline := time.Now().Add(within); tlsMetric(name) != want; {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %s, want %s", name, tlsMetric(name), want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	// Two stalled HTTP/2 downloads, one per listener, never read.
	for _, u := range []string{srv.URL + testenv.FileURL(owner.Bucket, "big.bin"), srv.S3URL + "/" + owner.Bucket + "/big.bin"} {
		hc := srv.HTTPClient()
		resp, err := hc.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ProtoMajor != 2 {
			t.Fatalf("%s: %s, want HTTP/2", u, resp.Proto)
		}
		t.Cleanup(func() { resp.Body.Close() })
	}
	waitTLSMetric(`coffer_admission_in_flight{api="file",class="read"}`, "1", 5*time.Second)
	waitTLSMetric(`coffer_admission_in_flight{api="s3",class="read"}`, "1", 5*time.Second)
	waitTLSMetric(`coffer_admission_in_flight{api="file",class="read"}`, "0", 10*time.Second)
	waitTLSMetric(`coffer_admission_in_flight{api="s3",class="read"}`, "0", 10*time.Second)

	// A JSON body that stalls on an HTTP/2 stream: 408 at the request
	// deadline (the read deadline is the stream's).
	pr, pw := io.Pipe()
	defer pw.Close()
	go pw.Write([]byte(`{"email":`))
	req, _ := http.NewRequest("POST", srv.URL+"/api/v1/auth/login", pr)
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := srv.HTTPClient().Do(req)
	if err != nil {
		t.Fatalf("stalled login body: %v", err)
	}
	resp.Body.Close()
	if took := time.Since(start); resp.StatusCode != http.StatusRequestTimeout || resp.ProtoMajor != 2 || took > 5*time.Second {
		t.Errorf("stalled login body over %s: %d after %v, want 408 after ~2s", resp.Proto, resp.StatusCode, took)
	}

	// Header limits: 431 over HTTP/1.1 on TLS; over HTTP/2 a 431 or the
	// connection refused (GOAWAY), never served.
	h1 := &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: ca.pool},
		TLSNextProto:    map[string]func(string, *tls.Conn) http.RoundTripper{},
	}}
	for _, hc := range []*http.Client{h1, srv.HTTPClient()} {
		for _, base := range []string{srv.URL, srv.S3URL} {
			req, _ := http.NewRequest("GET", base+"/", nil)
			req.Header.Set("X-Big", strings.Repeat("a", 100<<10))
			resp, err := hc.Do(req)
			if err != nil {
				if hc == h1 || !strings.Contains(err.Error(), "GOAWAY") && !strings.Contains(err.Error(), "advertised limit") {
					t.Errorf("%s with a 100 KiB header: %v", base, err)
				}
				continue
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
				t.Errorf("%s with a 100 KiB header over %s: %d, want 431", base, resp.Proto, resp.StatusCode)
			}
		}
	}
}

// TestTLSRefusedStart: one of --tls-cert/--tls-key without the other is a
// usage error (exit 2), by flag or environment; an unusable pair stops the
// start before the data folder is touched.
func TestTLSRefusedStart(t *testing.T) {
	ca := newTestCA(t)
	dir := t.TempDir()
	files := tlsFiles{filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")}
	p, other := ca.issue(t, 11, "coffer"), ca.issue(t, 12, "other")
	files.write(t, p.cert, other.key, time.Now())
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want string
		code int
	}{
		{name: "cert only", args: []string{"--tls-cert", files.cert}, want: "tls-cert and tls-key: give both", code: 2},
		{name: "key only", args: []string{"--tls-key", files.key}, want: "tls-cert and tls-key: give both", code: 2},
		{name: "cert only by env", env: []string{"COFFER_TLS_CERT=" + files.cert}, want: "tls-cert and tls-key: give both", code: 2},
		{name: "mismatched pair", args: []string{"--tls-cert", files.cert, "--tls-key", files.key}, want: "private key does not match public key", code: 1},
		{name: "mismatched pair by env", env: []string{"COFFER_TLS_CERT=" + files.cert, "COFFER_TLS_KEY=" + files.key}, want: "private key does not match public key", code: 1},
		{name: "missing file", args: []string{"--tls-cert", files.cert + ".missing", "--tls-key", files.key}, want: "no such file", code: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "data")
			args := append([]string{"serve", "--data", data, "--listen", "127.0.0.1:0", "--s3-listen", "127.0.0.1:0"}, tc.args...)
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, testenv.Binary(t), args...)
			cmd.Env = append(os.Environ(), tc.env...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != tc.code {
				t.Fatalf("exit: %v, want status %d\n%s", err, tc.code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("stderr %q lacks %q", stderr.String(), tc.want)
			}
			if _, err := os.Stat(data); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("data folder created by a refused start: %v", err)
			}
		})
	}
}

// TestTLSAEADAndHSTS: over TLS 1.2 both listeners take AEAD suites only
// (a client offering nothing but CBC, SHA-1 or SHA-256, fails the
// handshake); the file API listener's answers, success and error, carry
// Strict-Transport-Security (--hsts-max-age, default a year) over TLS,
// the S3 listener's do not, --hsts-max-age 0 turns it off, and plain
// HTTP never sends it.
func TestTLSAEADAndHSTS(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t)
	files := ca.files(t, 21)
	srv := testenv.StartTLS(t, ca.pool, "--tls-cert", files.cert, "--tls-key", files.key)

	cbc := []uint16{
		tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA,
		tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA,
		tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256,
	}
	for _, base := range []string{srv.URL, srv.S3URL} {
		host := strings.TrimPrefix(base, "https://")
		c, err := tls.Dial("tcp", host, &tls.Config{RootCAs: ca.pool, MaxVersion: tls.VersionTLS12, CipherSuites: cbc})
		if err == nil {
			t.Errorf("%s: a TLS 1.2 client offering only CBC suites was served %s", host, tls.CipherSuiteName(c.ConnectionState().CipherSuite))
			c.Close()
		}
		c, err = tls.Dial("tcp", host, &tls.Config{RootCAs: ca.pool, MaxVersion: tls.VersionTLS12})
		if err != nil {
			t.Fatalf("%s: TLS 1.2 with Go's default suites: %v", host, err)
		}
		if cs := c.ConnectionState().CipherSuite; !strings.Contains(tls.CipherSuiteName(cs), "GCM") && !strings.Contains(tls.CipherSuiteName(cs), "CHACHA20") {
			t.Errorf("%s: TLS 1.2 suite %s is not an AEAD", host, tls.CipherSuiteName(cs))
		}
		c.Close()
	}

	hsts := func(t *testing.T, hc *http.Client, url string) string {
		t.Helper()
		resp, err := hc.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.Header.Get("Strict-Transport-Security")
	}
	hc := srv.HTTPClient()
	for _, path := range []string{"/healthz", "/api/v1/me", "/", "/s/nope"} {
		if got, want := hsts(t, hc, srv.URL+path), "max-age=31536000"; got != want {
			t.Errorf("file API %s over TLS: Strict-Transport-Security %q, want %q", path, got, want)
		}
	}
	if got := hsts(t, hc, srv.S3URL+"/"); got != "" {
		t.Errorf("S3 listener: Strict-Transport-Security %q, want none", got)
	}

	off := testenv.StartTLS(t, ca.pool, "--tls-cert", files.cert, "--tls-key", files.key, "--hsts-max-age", "0")
	if got := hsts(t, off.HTTPClient(), off.URL+"/healthz"); got != "" {
		t.Errorf("--hsts-max-age 0: Strict-Transport-Security %q, want none", got)
	}
	plain := testenv.Start(t)
	if got := hsts(t, plain.HTTPClient(), plain.URL+"/healthz"); got != "" {
		t.Errorf("plain HTTP: Strict-Transport-Security %q, want none", got)
	}
}
