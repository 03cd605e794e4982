package kms

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"sync/atomic"

	"github.com/maypok86/otter/v2"

	"github.com/coffer-storage/coffer/internal/detach"
	"github.com/coffer-storage/coffer/internal/errcode"
)

// DataKeySize is the size of data keys in bytes.
const DataKeySize = 32

// DataKey is a fresh data key: Plaintext to encrypt with now (never
// stored), Wrapped to store.
type DataKey struct {
	Plaintext []byte
	Wrapped   Wrapped
}

// Wrapped is a data key as stored: the KEK version it is (indirectly)
// wrapped under and an opaque ciphertext (at most a few hundred bytes for
// the key services; see the package doc for what it holds).
type Wrapped struct {
	KEK        KeyRef
	Ciphertext []byte
}

// Keys issues and opens data keys through a Provider, with the
// intermediate-key hierarchy and the caches of the package doc. It is
// safe for concurrent use.
type Keys struct {
	p    Provider
	opts Options
	// issuing: key name → the intermediate key that wraps new data keys.
	issuing *otter.Cache[string, *intermediate]
	// opened: hash of (KEK, wrapped IK) → IK, for Unwrap.
	opened *otter.Cache[[32]byte, []byte]
	stats  Stats
}

// Stats count the calls Keys made to the key service and those that
// failed, by operation (for metrics: a failing KMS is an alert).
type Stats struct {
	Wraps, WrapErrors, Unwraps, UnwrapErrors, Rotations, RotationErrors atomic.Int64
}

// Stats returns the counters of k's key service calls.
func (k *Keys) Stats() *Stats { return &k.stats }

// count records one key service call and whether it failed.
func count(calls, errs *atomic.Int64, err error) {
	calls.Add(1)
	if err != nil {
		errs.Add(1)
	}
}

type intermediate struct {
	key     []byte
	wrapped []byte
	kek     KeyRef
}

// New returns Keys over p.
func New(p Provider, opts Options) *Keys {
	opts = opts.withDefaults()
	k := &Keys{p: p, opts: opts}
	if opts.IntermediateKeyTTL > 0 {
		k.issuing = otter.Must(&otter.Options[string, *intermediate]{
			MaximumSize:      1000,
			ExpiryCalculator: otter.ExpiryCreating[string, *intermediate](opts.IntermediateKeyTTL),
		})
	}
	if opts.CacheTTL > 0 {
		k.opened = otter.Must(&otter.Options[[32]byte, []byte]{
			MaximumSize:      opts.CacheEntries,
			ExpiryCalculator: otter.ExpiryAccessing[[32]byte, []byte](opts.CacheTTL),
		})
	}
	return k
}

// Provider returns the provider behind k.
func (k *Keys) Provider() Provider { return k.p }

// Default returns the KEK new data keys are wrapped under when no key is
// named (its version as last known).
func (k *Keys) Default() KeyRef { return k.p.Default() }

// GenerateDataKey returns a fresh random data key wrapped under the
// current version of keyID ("" = the default KEK). It fails with NotFound
// (resource kms_key) for an unknown key and Unavailable when the key
// service cannot be reached and no intermediate key is at hand.
func (k *Keys) GenerateDataKey(ctx context.Context, keyID string) (DataKey, error) {
	ik, err := k.current(ctx, keyID)
	if err != nil {
		return DataKey{}, err
	}
	dk := make([]byte, DataKeySize)
	rand.Read(dk)
	return DataKey{Plaintext: dk, Wrapped: Wrapped{KEK: ik.kek, Ciphertext: seal(ik, dk)}}, nil
}

// KeyExists reports whether keyID names a key new data keys can be
// wrapped under: nil, NotFound (resource kms_key), PermissionDenied or
// Unavailable. A yes is cached with the intermediate key it needed.
func (k *Keys) KeyExists(ctx context.Context, keyID string) error {
	_, err := k.current(ctx, keyID)
	return err
}

// Current returns the KEK version new data keys under keyID ("" = default)
// are wrapped with now.
func (k *Keys) Current(ctx context.Context, keyID string) (KeyRef, error) {
	ik, err := k.current(ctx, keyID)
	if err != nil {
		return KeyRef{}, err
	}
	return ik.kek, nil
}

// Unwrap returns the data key w holds. Unwrapping its intermediate key
// costs one key service call the first time (concurrent callers share it),
// none while it is cached.
func (k *Keys) Unwrap(ctx context.Context, w Wrapped) ([]byte, error) {
	wrappedIK, sealed, err := parseWrapped(w.Ciphertext)
	if err != nil {
		return nil, err
	}
	ik, err := k.openIK(ctx, w.KEK, wrappedIK)
	if err != nil {
		return nil, err
	}
	return open(ik, sealed)
}

// Rewrap moves w to the current version of keyID ("" = the default KEK;
// for a key a client named, its name, w.KEK.Name()): the same data key,
// now under the current intermediate key and KEK. changed is false when w
// is current already. Object bytes are not touched. Rewrapping many keys
// of one old intermediate key costs one key service call.
func (k *Keys) Rewrap(ctx context.Context, w Wrapped, keyID string) (out Wrapped, changed bool, err error) {
	cur, err := k.current(ctx, keyID)
	if err != nil {
		return Wrapped{}, false, err
	}
	if cur.kek == w.KEK {
		return w, false, nil
	}
	dk, err := k.Unwrap(ctx, w)
	if err != nil {
		return Wrapped{}, false, err
	}
	return Wrapped{KEK: cur.kek, Ciphertext: seal(cur, dk)}, true, nil
}

// Rotate makes a new version of the default KEK current (see
// Provider.Rotate) and stops issuing under intermediate keys wrapped by
// the old one. Other nodes switch when their intermediate keys expire
// (Options.IntermediateKeyTTL).
func (k *Keys) Rotate(ctx context.Context) (KeyRef, error) {
	ref, err := k.p.Rotate(ctx)
	count(&k.stats.Rotations, &k.stats.RotationErrors, err)
	if err != nil {
		return KeyRef{}, err
	}
	if k.issuing != nil {
		k.issuing.InvalidateAll()
	}
	return ref, nil
}

// Close closes the provider and stops the caches' goroutines.
func (k *Keys) Close() error {
	if k.issuing != nil {
		k.issuing.InvalidateAll()
		k.issuing.StopAllGoroutines()
	}
	if k.opened != nil {
		k.opened.InvalidateAll()
		k.opened.StopAllGoroutines()
	}
	return k.p.Close()
}

// current returns the intermediate key issuing under keyID, making one
// (one provider call, shared by concurrent callers) if there is none or it
// expired.
func (k *Keys) current(ctx context.Context, keyID string) (*intermediate, error) {
	if k.issuing == nil {
		return k.newIK(ctx, keyID)
	}
	// The load may serve several requests: it must not fail because the
	// first of them went away.
	lctx, cancel := detach.Context(ctx)
	defer cancel()
	ik, err := k.issuing.Get(lctx, keyID, otter.LoaderFunc[string, *intermediate](
		func(ctx context.Context, keyID string) (*intermediate, error) { return k.newIK(ctx, keyID) }))
	if err != nil {
		return nil, err
	}
	return ik, nil
}

func (k *Keys) newIK(ctx context.Context, keyID string) (*intermediate, error) {
	key := make([]byte, DataKeySize)
	rand.Read(key)
	wrapped, ref, err := k.p.Wrap(ctx, keyID, key)
	count(&k.stats.Wraps, &k.stats.WrapErrors, err)
	if err != nil {
		return nil, err
	}
	if len(wrapped) == 0 || len(wrapped) > maxWrappedIK {
		return nil, errcode.New(errcode.Internal, "the key service returned a %d-byte wrapped key", len(wrapped))
	}
	ik := &intermediate{key: key, wrapped: wrapped, kek: ref}
	if k.opened != nil { // reads of what we write need no round trip
		k.opened.Set(cacheKey(ref, wrapped), key)
	}
	return ik, nil
}

func (k *Keys) openIK(ctx context.Context, kek KeyRef, wrapped []byte) ([]byte, error) {
	load := func(ctx context.Context) ([]byte, error) {
		ik, err := k.p.Unwrap(ctx, kek, wrapped)
		count(&k.stats.Unwraps, &k.stats.UnwrapErrors, err)
		if err != nil {
			return nil, err
		}
		if len(ik) != DataKeySize {
			return nil, integrity(errors.New("the intermediate key has the wrong size"))
		}
		return ik, nil
	}
	if k.opened == nil {
		return load(ctx)
	}
	lctx, cancel := detach.Context(ctx) // shared by concurrent callers, as in current
	defer cancel()
	return k.opened.Get(lctx, cacheKey(kek, wrapped), otter.LoaderFunc[[32]byte, []byte](
		func(ctx context.Context, _ [32]byte) ([]byte, error) { return load(ctx) }))
}

func cacheKey(kek KeyRef, wrapped []byte) [32]byte {
	h := sha256.New()
	h.Write([]byte(kek.ID))
	h.Write([]byte{0})
	h.Write([]byte(kek.Version))
	h.Write([]byte{0})
	h.Write(wrapped)
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// ------------------------------------------------- the wrapped key's form

// The stored ciphertext of a data key (format 1):
//
//	0x01, uint16 big-endian length of the wrapped IK, the wrapped IK
//	(the provider's ciphertext), then the data key sealed with the IK:
//	a 12-byte nonce and 32 + 16 bytes of AES-256-GCM.
const (
	wrappedFormat = 1
	maxWrappedIK  = 7000
	sealedDKLen   = 12 + DataKeySize + 16
)

var dkLabel = []byte("coffer/kms data key under intermediate key v1")

func seal(ik *intermediate, dk []byte) []byte {
	out := make([]byte, 0, 3+len(ik.wrapped)+sealedDKLen)
	out = append(out, wrappedFormat)
	out = binary.BigEndian.AppendUint16(out, uint16(len(ik.wrapped)))
	out = append(out, ik.wrapped...)
	a := gcm(ik.key)
	nonce := make([]byte, a.NonceSize())
	rand.Read(nonce)
	out = append(out, nonce...)
	return a.Seal(out, nonce, dk, dkLabel)
}

// parseWrapped splits a stored ciphertext; anything malformed is an
// integrity error.
func parseWrapped(b []byte) (wrappedIK, sealedDK []byte, err error) {
	if len(b) < 3 || b[0] != wrappedFormat {
		return nil, nil, integrity(errors.New("unknown wrapped key format"))
	}
	n := int(binary.BigEndian.Uint16(b[1:3]))
	if n == 0 || n > maxWrappedIK || len(b) != 3+n+sealedDKLen {
		return nil, nil, integrity(errors.New("malformed wrapped key"))
	}
	return b[3 : 3+n], b[3+n:], nil
}

func open(ik, sealed []byte) ([]byte, error) {
	a := gcm(ik)
	n := a.NonceSize()
	dk, err := a.Open(nil, sealed[:n], sealed[n:], dkLabel)
	if err != nil {
		return nil, integrity(err)
	}
	return dk, nil
}
