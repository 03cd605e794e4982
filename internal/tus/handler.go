package tus

import (
	"context"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/tus/tusd/v2/pkg/handler"
	expslog "golang.org/x/exp/slog"

	"github.com/coffer-storage/coffer/internal/config"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/object"
	"github.com/coffer-storage/coffer/internal/tracing"
)

// Extensions are the tus extensions served (OPTIONS' Tus-Extension).
const Extensions = "creation,creation-with-upload,creation-defer-length,termination,concatenation,checksum,expiration"

// ChecksumAlgorithms are the Upload-Checksum algorithms accepted.
const ChecksumAlgorithms = "sha1,sha256,sha512,md5"

// Config of the tus endpoint. New takes it as given: ConfigFrom fills
// TTL and LockLease from config.Config (config.Defaults() for the
// defaults); the caller adds the rest.
type Config struct {
	// BasePath is where the endpoint is mounted, with a trailing slash.
	BasePath string
	// TTL is how long an unfinished upload lives (Upload-Expires); the
	// janitor reclaims it after (--tus-expiry).
	TTL time.Duration
	// LockLease is the lease of an upload's lock, renewed by its holder
	// every third of it.
	LockLease time.Duration
	// Error renders err as the response the file API gives for it.
	Error func(ctx context.Context, err error) (status int, header http.Header, body []byte)
	Log   *slog.Logger
}

// Handler serves the tus protocol.
type Handler struct {
	base string
	h    *handler.UnroutedHandler
	m    http.Handler
}

// ConfigFrom returns the tus endpoint's lifetimes in c: uploads'
// (--tus-expiry) and locks'.
func ConfigFrom(c config.Config) Config {
	return Config{TTL: c.TusExpiry, LockLease: c.TusLockLease}
}

// New returns the tus endpoint over objects, with its state and locks in
// ms. It refuses a configuration without lifetimes (see ConfigFrom).
func New(objects Objects, ms meta.Tus, cfg Config) (*Handler, error) {
	if cfg.TTL <= 0 || cfg.LockLease <= 0 {
		return nil, errors.New("tus: the upload and lock lifetimes must be positive (see tus.ConfigFrom)")
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	s := &Store{objects: objects, meta: ms, ttl: cfg.TTL}
	s.mapErr = func(ctx context.Context, err error) error {
		if _, ok := err.(handler.Error); ok {
			return err
		}
		status, hdr, body := cfg.Error(ctx, err)
		he := handler.Error{ErrorCode: "ERR_" + strings.ToUpper(errcode.Of(err).String()), Message: errcode.Message(err),
			HTTPResponse: handler.HTTPResponse{StatusCode: status, Body: string(body), Header: handler.HTTPHeader{}}}
		for k := range hdr {
			he.HTTPResponse.Header[k] = hdr.Get(k)
		}
		return he
	}
	composer := handler.NewStoreComposer()
	composer.UseCore(s)
	composer.UseTerminater(s)
	composer.UseConcater(s)
	composer.UseLengthDeferrer(s)
	composer.UseLocker(&Locker{mapErr: s.mapErr, owns: s.owns, meta: ms, lease: cfg.LockLease, log: cfg.Log})
	h, err := handler.NewUnroutedHandler(handler.Config{
		StoreComposer:   composer,
		BasePath:        cfg.BasePath,
		MaxSize:         objects.MaxObjectSize(),
		DisableDownload: true,
		Cors:            &handler.CorsConfig{Disable: true},
		// tusd logs every request at info level (through x/exp/slog);
		// Coffer's access log covers them.
		Logger: expslog.New(expslog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		return nil, err
	}
	th := &Handler{base: cfg.BasePath, h: h}
	th.m = h.Middleware(http.HandlerFunc(th.dispatch))
	return th, nil
}

func (th *Handler) dispatch(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodPost:
		th.h.PostFile(w, r)
	case http.MethodHead:
		th.h.HeadFile(w, r)
	case http.MethodPatch:
		// tus 1.0: "All PATCH requests MUST use Content-Type:
		// application/offset+octet-stream, otherwise the server SHOULD
		// return a 415 Unsupported Media Type status" (tusd answers 400).
		if r.Header.Get("Content-Type") != "application/offset+octet-stream" {
			sendError(w, ErrUnsupportedMediaType)
			return
		}
		th.h.PatchFile(w, r)
	case http.MethodDelete:
		th.h.DelFile(w, r)
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}

// ErrUnsupportedMediaType is the answer to a PATCH whose Content-Type is
// not application/offset+octet-stream.
var ErrUnsupportedMediaType = handler.NewError("ERR_INVALID_CONTENT_TYPE", "PATCH needs Content-Type: application/offset+octet-stream", http.StatusUnsupportedMediaType)

// sendError writes e as tusd writes its errors (plain text).
func sendError(w http.ResponseWriter, e handler.Error) {
	for k, v := range e.HTTPResponse.Header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(e.HTTPResponse.StatusCode)
	io.WriteString(w, e.HTTPResponse.Body)
}

// ServeHTTP serves one tus request of the caller a: the checksum and
// expiration extensions around tusd's handler.
func (th *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, a object.Actor) {
	// Methods are the route table's, not an override's.
	r.Header.Del("X-HTTP-Method-Override")
	st := &reqState{}
	if v := r.Header.Get("Upload-Checksum"); v != "" && (r.Method == http.MethodPatch || r.Method == http.MethodPost) {
		c, err := parseChecksum(v)
		if err != nil {
			w.Header().Set("Tus-Resumable", "1.0.0")
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		st.checksum = &c
	}
	ctx := context.WithValue(WithActor(r.Context(), a), stateKey, st)
	r = r.WithContext(ctx)
	// tusd takes the upload ID from the path below its base path.
	u := *r.URL
	u.Path, u.RawPath = strings.TrimPrefix(u.Path, th.base), ""
	r.URL = &u
	th.m.ServeHTTP(&writer{ResponseWriter: w, st: st, method: r.Method}, r)
}

// writer adds the extensions' response headers.
type writer struct {
	http.ResponseWriter
	st     *reqState
	method string
	wrote  bool
}

func (w *writer) WriteHeader(status int) {
	if !w.wrote {
		w.wrote = true
		h := w.Header()
		if h.Get("Tus-Extension") != "" {
			h.Set("Tus-Extension", Extensions)
			h.Set("Tus-Checksum-Algorithm", ChecksumAlgorithms)
		}
		if status < 300 && !w.st.finished && !w.st.expires.IsZero() && (w.method == http.MethodPost || w.method == http.MethodPatch || w.method == http.MethodHead) {
			h.Set("Upload-Expires", w.st.expires.UTC().Format(http.TimeFormat))
		}
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *writer) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

func (w *writer) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// checksum is a parsed Upload-Checksum.
type checksum struct {
	alg  algorithm
	want []byte
}

type algorithm string

func (a algorithm) new() hash.Hash {
	switch a {
	case "sha1":
		return sha1.New()
	case "sha256":
		return sha256.New()
	case "sha512":
		return sha512.New()
	default:
		return md5.New()
	}
}

// parseChecksum parses "<algorithm> <base64 digest>".
func parseChecksum(v string) (checksum, error) {
	name, b64, ok := strings.Cut(strings.TrimSpace(v), " ")
	if !ok {
		return checksum{}, errcode.New(errcode.InvalidArgument, "Upload-Checksum must be \"<algorithm> <base64 digest>\"")
	}
	alg := algorithm(strings.ToLower(name))
	switch alg {
	case "sha1", "sha256", "sha512", "md5":
	default:
		return checksum{}, errcode.New(errcode.InvalidArgument, "Upload-Checksum algorithm %q is not supported (%s)", name, ChecksumAlgorithms)
	}
	want, err := base64.StdEncoding.DecodeString(strings.TrimSpace(b64))
	if err != nil || len(want) != alg.new().Size() {
		return checksum{}, errcode.New(errcode.InvalidArgument, "Upload-Checksum digest is not a base64 %s digest", alg)
	}
	return checksum{alg: alg, want: want}, nil
}

// Locker is tusd's Locker over leases in the metadata store, so that
// requests on one upload are serialised across every node. tusd locks
// before it looks the upload up, so Lock checks first that the upload is
// the caller's: another user's request must neither wait for the lease
// nor ask its holder to let go (which interrupts the owner's PATCH).
type Locker struct {
	mapErr func(context.Context, error) error
	// owns is nil when upload id is the caller of ctx's, else the error
	// to answer (handler.ErrNotFound for anyone else's).
	owns  func(ctx context.Context, id string) error
	meta  meta.Tus
	lease time.Duration
	log   *slog.Logger
}

// NewLock implements handler.Locker.
func (l *Locker) NewLock(id string) (handler.Lock, error) {
	b := make([]byte, 12)
	rand.Read(b)
	return &lock{l: l, id: id, holder: hex.EncodeToString(b)}, nil
}

type lock struct {
	l      *Locker
	id     string
	holder string
	st     *reqState // the request's: the hash state to record at Unlock
	stop   chan struct{}
	done   chan struct{}
}

// Lock implements handler.Lock: it polls until the lease is free (asking
// its holder to let go), or ctx ends (ErrLockTimeout).
func (k *lock) Lock(ctx context.Context, requestUnlock func()) error {
	if err := k.l.owns(ctx, k.id); err != nil {
		return err
	}
	k.st = stateOf(ctx)
	// Tracing on: the wait for the lease is a span (nothing otherwise).
	ctx, span := tracing.Start(ctx, "tus lock wait")
	err := k.lock(ctx, requestUnlock)
	tracing.End(span, err)
	return err
}

// lock is Lock's wait for the lease.
func (k *lock) lock(ctx context.Context, requestUnlock func()) error {
	wait := 20 * time.Millisecond
	for asked := false; ; asked = true {
		if asked {
			k.st.looked = nil // read before another holder let go
		}
		got, err := k.l.meta.TryLockTus(ctx, k.id, k.holder, time.Now().Add(k.l.lease), asked)
		if err != nil && ctx.Err() == nil {
			return k.l.mapErr(ctx, err)
		}
		switch {
		case err != nil:
		case got == meta.TusMissing:
			return nil // GetUpload will answer 404
		case got == meta.TusLocked:
			k.stop, k.done = make(chan struct{}), make(chan struct{})
			go k.renew(requestUnlock)
			return nil
		}
		select {
		case <-ctx.Done():
			return handler.ErrLockTimeout
		case <-time.After(wait):
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}

func (k *lock) renew(requestUnlock func()) {
	defer close(k.done)
	t := time.NewTicker(k.l.lease / 3)
	defer t.Stop()
	asked := false
	for {
		select {
		case <-k.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), k.l.lease/3)
		held, release, err := k.l.meta.RenewTusLock(ctx, k.id, k.holder, time.Now().Add(k.l.lease))
		cancel()
		if err != nil {
			k.l.log.Warn("renewing a tus upload lock failed; will retry", "upload", k.id, "err", err)
			continue
		}
		if (!held || release) && !asked {
			asked = true
			requestUnlock()
		}
	}
}

// Unlock implements handler.Lock.
func (k *lock) Unlock() error {
	if k.stop != nil {
		close(k.stop)
		<-k.done
		k.stop = nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if k.st != nil && k.st.hash != nil {
		// The PATCH's hash state, in the unlock's commit (recorded only
		// while this holder has the lock).
		h := k.st.hash
		k.st.hash = nil
		return k.l.meta.UnlockTusHash(ctx, k.id, k.holder, h.offset, h.sealed)
	}
	return k.l.meta.UnlockTus(ctx, k.id, k.holder)
}
