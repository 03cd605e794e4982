package tlscert

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// pair is a PEM certificate (leaf, then the CA) and its PEM key.
type pair struct {
	cert, key []byte
	leaf      []byte // the leaf alone, PEM
	serial    *big.Int
}

type ca struct {
	cert *x509.Certificate
	der  []byte
	key  *ecdsa.PrivateKey
}

func newCA(t testing.TB) *ca {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &ca{cert: cert, der: der, key: key}
}

func (c *ca) issue(t testing.TB, serial int64) pair {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: "coffer test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	leaf := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	certPEM := append(append([]byte{}, leaf...), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.der})...)
	return pair{cert: certPEM, key: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), leaf: leaf, serial: big.NewInt(serial)}
}

type files struct{ cert, key string }

func newFiles(t *testing.T, p pair) files {
	t.Helper()
	dir := t.TempDir()
	f := files{filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")}
	f.write(t, p.cert, p.key)
	return f
}

// write writes the files in place (not atomically), certificate first.
func (f files) write(t *testing.T, cert, key []byte) {
	t.Helper()
	if cert != nil {
		if err := os.WriteFile(f.cert, cert, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if key != nil {
		if err := os.WriteFile(f.key, key, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// logBuf is a concurrency-safe log sink.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

func newReloader(t *testing.T, f files, opts Options) (*Reloader, *logBuf) {
	t.Helper()
	lb := &logBuf{}
	r, err := New(f.cert, f.key, slog.New(slog.NewTextHandler(lb, nil)), opts)
	if err != nil {
		t.Fatal(err)
	}
	return r, lb
}

func serialOf(t *testing.T, r *Reloader) *big.Int {
	t.Helper()
	c, err := r.GetCertificate(&tls.ClientHelloInfo{})
	if err != nil || c == nil {
		t.Fatalf("GetCertificate: %v, %v", c, err)
	}
	return c.Leaf.SerialNumber
}

// waitSerial polls GetCertificate until it serves want.
func waitSerial(t *testing.T, r *Reloader, want *big.Int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; {
		got := serialOf(t, r)
		if got.Cmp(want) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("serving serial %v, want %v", got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// fast checks at every handshake and takes files as settled at once.
var fast = Options{Interval: time.Nanosecond, Settle: time.Nanosecond}

func TestChangedFilesAreServed(t *testing.T) {
	ca := newCA(t)
	p1, p2 := ca.issue(t, 101), ca.issue(t, 102)
	f := newFiles(t, p1)
	r, lb := newReloader(t, f, fast)
	if got, want := serialOf(t, r), p1.serial; got.Cmp(want) != 0 {
		t.Fatalf("serial %v, want %v", got, want)
	}
	f.write(t, p2.cert, p2.key)
	waitSerial(t, r, p2.serial)
	if got, want := lb.count("TLS certificate reloaded"), 1; got != want {
		t.Errorf("reload logged %d times, want %d\n%s", got, want, lb.b.String())
	}
}

// TestBadFilesKeepTheOldCertificate: whatever state the files are left in,
// the certificate in service stays until a good pair is there; the error
// is logged once per change.
func TestBadFilesKeepTheOldCertificate(t *testing.T) {
	ca := newCA(t)
	p1, p2, p3 := ca.issue(t, 201), ca.issue(t, 202), ca.issue(t, 203)
	for _, tc := range []struct {
		name      string
		cert, key []byte // nil: leave as is
		remove    string // "cert" or "key": delete that file
	}{
		{name: "new certificate, old key", cert: p2.cert},
		{name: "old certificate, new key", key: p2.key},
		{name: "certificate half-written", cert: p2.cert[:len(p2.cert)/3], key: p2.key},
		{name: "chain cut after the leaf", cert: append(append([]byte{}, p2.leaf...), []byte("-----BEGIN CERTIFICATE-----\nMIIB")...), key: p2.key},
		{name: "key half-written", cert: p2.cert, key: p2.key[:len(p2.key)/2]},
		{name: "empty certificate", cert: []byte{}, key: p2.key},
		{name: "empty key", cert: p2.cert, key: []byte{}},
		{name: "garbage", cert: []byte("not a certificate\n"), key: []byte("nor a key\n")},
		{name: "key where the certificate goes", cert: p2.key, key: p2.key},
		{name: "certificate removed", remove: "cert"},
		{name: "key removed", remove: "key"},
	} {
		// Unsettled files are loaded again at every check: still one
		// error logged.
		for _, opts := range []Options{fast, {Interval: time.Nanosecond, Settle: time.Hour}} {
			t.Run(fmt.Sprintf("%s settle %v", tc.name, opts.Settle), func(t *testing.T) {
				f := newFiles(t, p1)
				r, lb := newReloader(t, f, opts)
				f.write(t, tc.cert, tc.key)
				switch tc.remove {
				case "cert":
					os.Remove(f.cert)
				case "key":
					os.Remove(f.key)
				}
				for range 20 {
					if got, want := serialOf(t, r), p1.serial; got.Cmp(want) != 0 {
						t.Fatalf("serving serial %v after a bad change, want the old %v", got, want)
					}
					time.Sleep(time.Millisecond)
				}
				if got := lb.count("level=ERROR"); got != 1 {
					t.Errorf("%d errors logged for one bad change, want 1\n%s", got, lb.b.String())
				}
				if err := r.Reload(); err == nil {
					t.Errorf("Reload of a bad pair: no error")
				}
				if got, want := r.Certificate().Leaf.SerialNumber, p1.serial; got.Cmp(want) != 0 {
					t.Fatalf("serving serial %v after a failed Reload, want the old %v", got, want)
				}
				// A good pair afterwards is picked up.
				f.write(t, p3.cert, p3.key)
				waitSerial(t, r, p3.serial)
			})
		}
	}
}

func TestNewRefusesBadPairs(t *testing.T) {
	ca := newCA(t)
	p1, p2 := ca.issue(t, 301), ca.issue(t, 302)
	dir := t.TempDir()
	for _, tc := range []struct {
		name      string
		cert, key []byte
	}{
		{"mismatched", p1.cert, p2.key},
		{"truncated", p1.cert[:100], p1.key},
		{"empty", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := files{filepath.Join(dir, tc.name+".crt"), filepath.Join(dir, tc.name+".key")}
			f.write(t, tc.cert, tc.key)
			if _, err := New(f.cert, f.key, slog.New(slog.DiscardHandler), Options{}); err == nil {
				t.Fatal("New accepted a bad pair")
			}
		})
	}
	if _, err := New(filepath.Join(dir, "missing.crt"), filepath.Join(dir, "missing.key"), slog.New(slog.DiscardHandler), Options{}); err == nil {
		t.Fatal("New accepted missing files")
	}
}

// TestReloadIgnoresStamps: Reload (SIGHUP) reads the files even when
// their modification times and sizes look unchanged; the periodic check
// does not.
func TestReloadIgnoresStamps(t *testing.T) {
	ca := newCA(t)
	p1 := ca.issue(t, 401)
	f := newFiles(t, p1)
	old := time.Now().Add(-time.Hour)
	chtimes(t, f, old)
	r, _ := newReloader(t, f, Options{Interval: time.Nanosecond, Settle: time.Second})
	p2 := sameSize(t, ca, p1, 402)
	f.write(t, p2.cert, p2.key)
	chtimes(t, f, old)
	for range 10 {
		if got, want := serialOf(t, r), p1.serial; got.Cmp(want) != 0 {
			t.Fatalf("serial %v: the check reloaded unchanged stamps (want %v)", got, want)
		}
	}
	if err := r.Reload(); err != nil {
		t.Fatal(err)
	}
	if got, want := serialOf(t, r), p2.serial; got.Cmp(want) != 0 {
		t.Fatalf("after Reload: serial %v, want %v", got, want)
	}
}

// TestUnsettledFilesAreCheckedAgain: a second write within one tick of a
// coarse modification time (same size, same time) is still picked up,
// because files changed less than Settle ago are looked at again.
func TestUnsettledFilesAreCheckedAgain(t *testing.T) {
	ca := newCA(t)
	p1 := ca.issue(t, 501)
	f := newFiles(t, p1)
	chtimes(t, f, time.Now().Add(-time.Hour))
	r, _ := newReloader(t, f, Options{Interval: time.Nanosecond, Settle: time.Hour})
	p2 := ca.issue(t, 502)
	p3 := sameSize(t, ca, p2, 503)
	tick := time.Now().Truncate(time.Second)
	f.write(t, p2.cert, p2.key)
	chtimes(t, f, tick)
	waitSerial(t, r, p2.serial)
	f.write(t, p3.cert, p3.key)
	chtimes(t, f, tick)
	waitSerial(t, r, p3.serial)
}

func chtimes(t *testing.T, f files, at time.Time) {
	t.Helper()
	for _, p := range []string{f.cert, f.key} {
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
}

// sameSize issues certificates until one's PEM files have p's sizes (ECDSA
// signatures vary by a byte or two).
func sameSize(t *testing.T, ca *ca, p pair, serial int64) pair {
	t.Helper()
	for range 200 {
		q := ca.issue(t, serial)
		if len(q.cert) == len(p.cert) && len(q.key) == len(p.key) {
			return q
		}
	}
	t.Fatal("no certificate of the same size in 200 tries")
	return pair{}
}

// TestConcurrentHandshakesDuringRotation: handshakes racing with rewrites
// always get a whole certificate (run with -race).
func TestConcurrentHandshakesDuringRotation(t *testing.T) {
	ca := newCA(t)
	pairs := []pair{ca.issue(t, 601), ca.issue(t, 602), ca.issue(t, 603)}
	f := newFiles(t, pairs[0])
	r, _ := newReloader(t, f, fast)
	valid := map[string]bool{}
	for _, p := range pairs {
		valid[p.serial.String()] = true
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				c, err := r.GetCertificate(&tls.ClientHelloInfo{})
				if err != nil || c == nil || !valid[c.Leaf.SerialNumber.String()] {
					t.Errorf("GetCertificate during rotation: %v, %v", c, err)
					return
				}
			}
		})
	}
	for i := range 30 {
		p := pairs[i%len(pairs)]
		f.write(t, p.cert, p.key)
		time.Sleep(time.Millisecond)
	}
	close(stop)
	wg.Wait()
	last := pairs[29%len(pairs)]
	waitSerial(t, r, last.serial)
}

// TestServesTLS: a real handshake gets the reloaded certificate, TLS 1.1
// is refused.
func TestServesTLS(t *testing.T) {
	ca := newCA(t)
	p1, p2 := ca.issue(t, 701), ca.issue(t, 702)
	f := newFiles(t, p1)
	r, _ := newReloader(t, f, fast)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", r.Config())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				c.(*tls.Conn).Handshake()
				c.Close()
			}()
		}
	}()
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	dial := func(cfg *tls.Config) (*big.Int, error) {
		c, err := tls.Dial("tcp", ln.Addr().String(), cfg)
		if err != nil {
			return nil, err
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].SerialNumber, nil
	}
	if got, err := dial(&tls.Config{RootCAs: roots}); err != nil || got.Cmp(p1.serial) != 0 {
		t.Fatalf("first handshake: serial %v, %v; want %v", got, err, p1.serial)
	}
	f.write(t, p2.cert, p2.key)
	if got, err := dial(&tls.Config{RootCAs: roots}); err != nil || got.Cmp(p2.serial) != 0 {
		t.Fatalf("after rotation: serial %v, %v; want %v", got, err, p2.serial)
	}
	if _, err := dial(&tls.Config{RootCAs: roots, MaxVersion: tls.VersionTLS11}); err == nil {
		t.Errorf("a TLS 1.1 handshake succeeded")
	}
	// TLS 1.2 takes AEAD suites only: a client offering nothing but CBC
	// (SHA-1 or SHA-256 MACs) is refused; each AEAD suite is served.
	cbc := []uint16{
		tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA,
		tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA,
		tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256,
		tls.TLS_RSA_WITH_AES_128_CBC_SHA, tls.TLS_RSA_WITH_AES_256_CBC_SHA,
	}
	if _, err := dial(&tls.Config{RootCAs: roots, MaxVersion: tls.VersionTLS12, CipherSuites: cbc}); err == nil {
		t.Errorf("a TLS 1.2 handshake offering only CBC suites succeeded")
	}
	for _, cs := range []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256} {
		if _, err := dial(&tls.Config{RootCAs: roots, MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{cs}}); err != nil {
			t.Errorf("TLS 1.2 with %s: %v", tls.CipherSuiteName(cs), err)
		}
	}
}

func FuzzParse(f *testing.F) {
	ca := newCA(f)
	p := ca.issue(f, 1)
	f.Add(p.cert, p.key)
	f.Add(p.cert[:200], p.key)
	f.Add([]byte("-----BEGIN CERTIFICATE-----\n"), p.key)
	f.Fuzz(func(t *testing.T, certPEM, keyPEM []byte) {
		c, err := Parse(certPEM, keyPEM)
		if err != nil {
			return
		}
		if c.Leaf == nil || len(c.Certificate) == 0 || c.PrivateKey == nil {
			t.Fatalf("Parse succeeded with an incomplete certificate: %+v", c)
		}
	})
}
