// Package tlscert serves a TLS certificate from a pair of PEM files (a
// certificate chain and its private key) and picks up new files without a
// restart.
//
// # Contract
//
//   - New loads the pair at once and fails if it is unusable: a server
//     never starts without a certificate.
//   - GetCertificate (the tls.Config hook) always returns a certificate:
//     the newest pair that loaded. At most once per Options.Interval it
//     stats both files (one goroutine does, the others do not wait) and, if
//     the modification time or size of either changed, reloads the pair.
//   - Reload re-reads the pair whatever the files' stamps say (SIGHUP).
//   - A pair that does not load (half-written, unparsable, a key that does
//     not match the certificate) never replaces the current one: the old
//     certificate stays in service and the error is logged, once per
//     change of the files.
//   - Connections already established keep the certificate they were set
//     up with; only new handshakes see a new one.
//
// # Considerations
//
// Files written in place are seen in any order and state: the certificate
// before the key, or half of either. Such a state fails to load (a
// certificate and key that do not match, a truncated PEM block) and the
// next change is tried again. A chain file cut between two certificates
// would load with its intermediates missing, and a file system with coarse
// modification times could hide a second write within one tick, so files
// changed less than Options.Settle ago are looked at again on later checks
// until they have settled. Writing the new files elsewhere and renaming
// them into place (what cert-manager, certbot's deploy hooks and
// Kubernetes secret volumes do) avoids every intermediate state.
package tlscert

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options tune a Reloader; zero values take the defaults.
type Options struct {
	Interval time.Duration // how often handshakes may stat the files; default 1s
	Settle   time.Duration // files changed more recently are checked again; default 2s
}

// Reloader holds the current certificate of a certificate/key file pair.
type Reloader struct {
	certFile, keyFile string
	log               *slog.Logger
	opts              Options

	cert      atomic.Pointer[tls.Certificate]
	nextCheck atomic.Int64 // unix nanoseconds before which handshakes do not stat

	mu         sync.Mutex // serialises loads; guards the fields below
	seen       stamp      // the files' stamp of the last load, good or bad, once settled
	failed     stamp      // the stamp whose load error was logged last
	statFailed bool       // the files could not be stat'ed at the last check (logged)
}

// stamp is what a cheap look at the two files tells: modification times
// and sizes.
type stamp struct {
	certMod, keyMod   time.Time
	certSize, keySize int64
}

func (s stamp) newest() time.Time {
	if s.keyMod.After(s.certMod) {
		return s.keyMod
	}
	return s.certMod
}

// New loads certFile and keyFile (PEM; the certificate file may carry the
// chain after the leaf) and returns a Reloader serving them.
func New(certFile, keyFile string, log *slog.Logger, opts Options) (*Reloader, error) {
	if opts.Interval <= 0 {
		opts.Interval = time.Second
	}
	if opts.Settle <= 0 {
		opts.Settle = 2 * time.Second
	}
	r := &Reloader{certFile: certFile, keyFile: keyFile, log: log, opts: opts}
	st, _ := r.stat()
	c, err := load(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	r.cert.Store(c)
	r.markSeen(st)
	r.nextCheck.Store(time.Now().Add(opts.Interval).UnixNano())
	warnValidity(log, c, "TLS certificate")
	return r, nil
}

// Certificate returns the certificate in service.
func (r *Reloader) Certificate() *tls.Certificate { return r.cert.Load() }

// GetCertificate implements tls.Config.GetCertificate: the certificate in
// service, after at most one cheap check of the files per interval.
func (r *Reloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	now := time.Now().UnixNano()
	if next := r.nextCheck.Load(); now >= next && r.nextCheck.CompareAndSwap(next, now+int64(r.opts.Interval)) {
		r.check()
	}
	return r.cert.Load(), nil
}

// CipherSuites are the TLS 1.2 cipher suites a Config accepts: ECDHE
// (forward secrecy) with an AEAD (AES-GCM or ChaCha20-Poly1305), nothing
// with CBC and SHA-1 (ECDHE-RSA-AES128-SHA and its kin, which Go still
// accepts by default). HTTP/2's required suite,
// TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, is among them. TLS 1.3 suites
// are all AEAD and not configurable.
var CipherSuites = []uint16{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
}

// Config returns a server tls.Config serving r's certificate: TLS 1.2 at
// least, and on TLS 1.2 only CipherSuites.
func (r *Reloader) Config() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, CipherSuites: CipherSuites, GetCertificate: r.GetCertificate}
}

// check reloads the pair if the files' stamps changed since the last load.
// A check already running elsewhere is not waited for.
func (r *Reloader) check() {
	if !r.mu.TryLock() {
		return
	}
	defer r.mu.Unlock()
	st, err := r.stat()
	if err != nil {
		// A file missing for a moment (being replaced) is looked at
		// again at the next check; the error is logged once.
		if !r.statFailed {
			r.statFailed = true
			r.log.Error("TLS certificate files unreadable; still serving the previous certificate", "err", err.Error())
		}
		r.seen = stamp{}
		return
	}
	r.statFailed = false
	if st == r.seen {
		return
	}
	r.reloadLocked(st, false)
}

// Reload re-reads the pair now, whatever the files' stamps say. On error
// the certificate in service stays and the error is returned (and
// logged).
func (r *Reloader) Reload() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, _ := r.stat()
	return r.reloadLocked(st, true)
}

func (r *Reloader) reloadLocked(st stamp, forced bool) error {
	c, err := load(r.certFile, r.keyFile)
	if err != nil {
		r.markSeen(st)
		if forced || st != r.failed {
			r.failed = st
			r.log.Error("TLS certificate not reloaded; still serving the previous certificate",
				"cert", r.certFile, "key", r.keyFile, "err", err.Error())
		}
		return err
	}
	r.markSeen(st)
	r.failed = stamp{}
	old := r.cert.Load()
	r.cert.Store(c)
	if !bytes.Equal(old.Certificate[0], c.Certificate[0]) {
		r.log.Info("TLS certificate reloaded", certAttrs(c)...)
		warnValidity(r.log, c, "reloaded TLS certificate")
	} else if forced {
		r.log.Info("TLS certificate reloaded (unchanged)", certAttrs(c)...)
	}
	return nil
}

// markSeen records st as handled, unless the files changed so recently
// that they may still be changing (see the package doc).
func (r *Reloader) markSeen(st stamp) {
	if time.Since(st.newest()) < r.opts.Settle {
		r.seen = stamp{}
		return
	}
	r.seen = st
}

func (r *Reloader) stat() (stamp, error) {
	c, err := os.Stat(r.certFile)
	if err != nil {
		return stamp{}, err
	}
	k, err := os.Stat(r.keyFile)
	if err != nil {
		return stamp{}, err
	}
	return stamp{certMod: c.ModTime(), keyMod: k.ModTime(), certSize: c.Size(), keySize: k.Size()}, nil
}

// load reads and checks a certificate/key pair.
func load(certFile, keyFile string) (*tls.Certificate, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("reading TLS certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("reading TLS key: %w", err)
	}
	return Parse(certPEM, keyPEM)
}

// Parse checks a PEM certificate chain and its PEM private key: the chain
// must hold at least one certificate, every block must be whole, and the
// key must match the first (leaf) certificate.
func Parse(certPEM, keyPEM []byte) (*tls.Certificate, error) {
	// tls.X509KeyPair skips what follows a block that does not decode: a
	// chain cut short would load without its intermediates.
	rest := certPEM
	for {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
	}
	if bytes.Contains(rest, []byte("-----BEGIN")) {
		return nil, errors.New("TLS certificate file: a PEM block is incomplete or malformed (file still being written?)")
	}
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("TLS certificate and key: %w", err)
	}
	if c.Leaf == nil {
		leaf, err := x509.ParseCertificate(c.Certificate[0])
		if err != nil {
			return nil, fmt.Errorf("TLS certificate: %w", err)
		}
		c.Leaf = leaf
	}
	for i, der := range c.Certificate[1:] {
		if _, err := x509.ParseCertificate(der); err != nil {
			return nil, fmt.Errorf("TLS certificate chain, certificate %d: %w", i+2, err)
		}
	}
	return &c, nil
}

func certAttrs(c *tls.Certificate) []any {
	l := c.Leaf
	names := append([]string{}, l.DNSNames...)
	for _, ip := range l.IPAddresses {
		names = append(names, ip.String())
	}
	return []any{
		"subject", l.Subject.CommonName,
		"names", strings.Join(names, ","),
		"serial", l.SerialNumber.Text(16),
		"not_after", l.NotAfter.UTC().Format(time.RFC3339),
	}
}

func warnValidity(log *slog.Logger, c *tls.Certificate, what string) {
	now := time.Now()
	switch {
	case now.After(c.Leaf.NotAfter):
		log.Warn(what+" has expired; clients will refuse it", certAttrs(c)...)
	case now.Before(c.Leaf.NotBefore):
		log.Warn(what+" is not valid yet; clients will refuse it", certAttrs(c)...)
	}
}
