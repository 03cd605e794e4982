package auth

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/argon2"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/tracing"
)

// Params are argon2id parameters. Memory and Time are taken as given
// (--argon2-memory, --argon2-time); the hash's shape, which no setting
// changes, defaults to DefaultParams' when zero.
type Params struct {
	Memory  uint32 // KiB (19456, 19 MiB, is OWASP's minimum for argon2id)
	Time    uint32 // passes
	Threads uint8  // lanes; default 1
	SaltLen int    // default 16
	KeyLen  uint32 // default 32
}

// DefaultParams is the hash's shape NewHasher gives zero fields of Params
// (Memory and Time come from config.Config: --argon2-memory,
// --argon2-time).
var DefaultParams = Params{Threads: 1, SaltLen: 16, KeyLen: 32}

// PoolConfig bounds password hashing so that a login storm cannot starve
// the rest of the server: at most Slots hashes run at once; up to MaxQueue
// more wait at most MaxWait each; everything beyond is refused at once with
// errcode.Unavailable and a Retry-After.
type PoolConfig struct {
	Slots    int           // --login-concurrency (config.Config.LoginSlots)
	MaxQueue int           // config.Config.PasswordQueue
	MaxWait  time.Duration // config.Config.PasswordWait
	// TrimAfter: once no hash has run for this long, the memory of the
	// last hashes (argon2id's arena, Params.Memory per hash, which x/crypto
	// allocates anew each time and the Go runtime would otherwise keep
	// until some later GC, and return to the OS later still) is collected
	// and returned to the OS at once (debug.FreeOSMemory). Default 1ms:
	// between a signup and the login that follows, so that the process
	// holds one arena at a time; a steady login storm keeps the pool busy
	// and is not trimmed until it ends. Negative: never (the runtime's own
	// pacing, which keeps dead arenas until the next GC, and a quiet
	// server may not collect for minutes).
	TrimAfter time.Duration
}

// Hasher hashes and verifies passwords with argon2id in a bounded pool.
type Hasher struct {
	params  Params
	sem     chan struct{}
	waiting atomic.Int64
	cfg     PoolConfig

	hashed   atomic.Int64
	rejected atomic.Int64
	dummy    string // verified against for unknown users, to equalise timing

	trimPending atomic.Bool
	lastHash    atomic.Int64 // unix nanos at the end of the last hash
	trims       atomic.Int64
}

// NewHasher returns a Hasher. p's Memory and Time and cfg's Slots,
// MaxQueue and MaxWait are taken as given (ConfigFrom fills them); the
// hash's shape (Threads, SaltLen, KeyLen) and TrimAfter default when zero.
func NewHasher(p Params, cfg PoolConfig) *Hasher {
	if p.Threads == 0 {
		p.Threads = DefaultParams.Threads
	}
	if p.SaltLen == 0 {
		p.SaltLen = DefaultParams.SaltLen
	}
	if p.KeyLen == 0 {
		p.KeyLen = DefaultParams.KeyLen
	}
	if cfg.TrimAfter == 0 {
		cfg.TrimAfter = time.Millisecond
	}
	h := &Hasher{params: p, sem: make(chan struct{}, cfg.Slots), cfg: cfg}
	h.dummy = h.hashNow([]byte("coffer-dummy-password"))
	h.scheduleTrim()
	return h
}

// scheduleTrim returns the hashing arenas to the OS once the pool has been
// idle for cfg.TrimAfter: one trim per burst of hashes, not one per hash
// (a trim is a full GC and a scavenge, about a millisecond of CPU for
// Coffer's small heap, against ~50 ms of argon2id per hash). The security
// parameters are untouched: only when the dead arenas are given back
// changes.
func (h *Hasher) scheduleTrim() {
	h.lastHash.Store(time.Now().UnixNano())
	if h.cfg.TrimAfter < 0 || !h.trimPending.CompareAndSwap(false, true) {
		return
	}
	var check func()
	check = func() {
		idle := time.Duration(time.Now().UnixNano() - h.lastHash.Load())
		if len(h.sem) > 0 || h.waiting.Load() > 0 || idle < h.cfg.TrimAfter {
			time.AfterFunc(max(h.cfg.TrimAfter-idle, time.Millisecond), check)
			return
		}
		h.trimPending.Store(false)
		h.trims.Add(1)
		debug.FreeOSMemory()
	}
	time.AfterFunc(h.cfg.TrimAfter, check)
}

// HasherStats are counters for metrics.
type HasherStats struct {
	Hashed, Rejected, Waiting, InUse int64
}

// Stats returns current counters.
func (h *Hasher) Stats() HasherStats {
	return HasherStats{
		Hashed:   h.hashed.Load(),
		Rejected: h.rejected.Load(),
		Waiting:  h.waiting.Load(),
		InUse:    int64(len(h.sem)),
	}
}

func (h *Hasher) acquire(ctx context.Context) error {
	select {
	case h.sem <- struct{}{}:
		return nil
	default:
	}
	busy := func() error {
		h.rejected.Add(1)
		return errcode.Retry(errcode.Unavailable, time.Second, "too many logins in progress; retry shortly")
	}
	if h.waiting.Add(1) > int64(h.cfg.MaxQueue) {
		h.waiting.Add(-1)
		return busy()
	}
	defer h.waiting.Add(-1)
	// Tracing on: a wait for a hashing slot is a span (nothing otherwise).
	_, span := tracing.Start(ctx, "password slot wait")
	err := h.wait(ctx, busy)
	tracing.End(span, err)
	return err
}

// wait waits for a hashing slot, at most MaxWait.
func (h *Hasher) wait(ctx context.Context, busy func() error) error {
	t := time.NewTimer(h.cfg.MaxWait)
	defer t.Stop()
	select {
	case h.sem <- struct{}{}:
		return nil
	case <-t.C:
		return busy()
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (h *Hasher) release() {
	<-h.sem
	h.scheduleTrim()
}

// Hash returns the PHC string of password.
func (h *Hasher) Hash(ctx context.Context, password string) (string, error) {
	if err := h.acquire(ctx); err != nil {
		return "", err
	}
	defer h.release()
	return h.hashNow([]byte(password)), nil
}

func (h *Hasher) hashNow(pw []byte) string {
	h.hashed.Add(1)
	p := h.params
	salt := make([]byte, p.SaltLen)
	rand.Read(salt)
	key := argon2.IDKey(pw, salt, p.Time, p.Memory, p.Threads, p.KeyLen)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2.Version, p.Memory, p.Time, p.Threads, b64.EncodeToString(salt), b64.EncodeToString(key))
}

// Verify reports whether password matches the PHC string encoded. An empty
// encoded (unknown user) is verified against a dummy hash so that timing
// does not reveal whether an account exists; it never matches.
func (h *Hasher) Verify(ctx context.Context, password, encoded string) (bool, error) {
	real := encoded != ""
	if !real {
		encoded = h.dummy
	}
	p, salt, want, err := parsePHC(encoded)
	if err != nil {
		return false, err
	}
	if err := h.acquire(ctx); err != nil {
		return false, err
	}
	defer h.release()
	h.hashed.Add(1)
	got := argon2.IDKey([]byte(password), salt, p.Time, p.Memory, p.Threads, uint32(len(want)))
	return real && subtle.ConstantTimeCompare(got, want) == 1, nil
}

func parsePHC(s string) (Params, []byte, []byte, error) {
	bad := func(why string) (Params, []byte, []byte, error) {
		return Params{}, nil, nil, errcode.New(errcode.Internal, "stored password hash is malformed: %s", why)
	}
	parts := strings.Split(s, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return bad("not argon2id")
	}
	var v int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &v); err != nil || v != argon2.Version {
		return bad("version")
	}
	var p Params
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.Memory, &p.Time, &p.Threads); err != nil {
		return bad("parameters")
	}
	salt, err := base64.RawStdEncoding.DecodeString(parts[4])
	if err != nil {
		return bad("salt")
	}
	key, err := base64.RawStdEncoding.DecodeString(parts[5])
	if err != nil || len(key) == 0 {
		return bad("key")
	}
	return p, salt, key, nil
}
