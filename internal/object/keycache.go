package object

import (
	"crypto/sha256"
	"sync"
	"time"

	"github.com/coffer-storage/coffer/internal/crypt"
)

// streamCache keeps the decryption streams (the object keys derived from
// unwrapped data keys) of recently read server- and KMS-encrypted blobs,
// so that a read of a hot object pays neither the envelope's parsing, the
// data key's unwrapping (a key service's cache lookup and an AES-GCM open)
// nor the HKDF derivation again.
//
// It is keyed by SHA-256 of the blob's identity and its whole stored
// envelope (mode, cipher, salt, KEK id and version, wrapped key): a
// rewrapped key (rotation) or another blob is another entry, and an
// entry only ever serves the exact envelope it was derived from. Entries
// live streamTTL from their creation, so a KEK disabled in the key
// service stops opening cached objects at most that long after the key
// service's own cache (kms.Options.CacheTTL) lets go of it; there are at
// most streamEntries (a full cache drops an arbitrary entry: no LRU
// bookkeeping on the hot path). Customer keys (SSE-C) are never cached:
// every read must bring and prove its key. Evicted streams are dropped,
// not zeroed: a reader that took one from the cache may still be deriving
// its cipher from it; the garbage collector reclaims the memory.
type streamCache struct {
	mu sync.Mutex
	m  map[[32]byte]cachedStream
}

type cachedStream struct {
	s       *crypt.Stream
	expires time.Time
}

const (
	streamEntries = 4096 // ~100 bytes each
	streamTTL     = time.Minute
)

func streamKey(identity string, envelope []byte) [32]byte {
	h := sha256.New()
	h.Write([]byte(identity))
	h.Write([]byte{0})
	h.Write(envelope)
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// get returns the cached stream of k, if it has not expired.
func (c *streamCache) get(k [32]byte, now time.Time) *crypt.Stream {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[k]
	if !ok {
		return nil
	}
	if now.After(e.expires) {
		delete(c.m, k)
		return nil
	}
	return e.s
}

// put caches s under k.
func (c *streamCache) put(k [32]byte, s *crypt.Stream, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[[32]byte]cachedStream)
	}
	if len(c.m) >= streamEntries {
		for old := range c.m { // an arbitrary one (maps iterate from a random start)
			delete(c.m, old)
			break
		}
	}
	c.m[k] = cachedStream{s: s, expires: now.Add(streamTTL)}
}

// len is the number of cached streams (tests).
func (c *streamCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
