package sigv4

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"sync"
)

// DefaultKeyCacheSize is the capacity of NewKeyCache(0).
const DefaultKeyCacheSize = 1024

// KeyCache remembers derived signing keys so that verifying a request costs
// one HMAC instead of five. Entries are keyed by a salted SHA-256 of
// (secret, date, region, service): the cache never holds a secret, and a
// rotated secret simply misses. It is bounded; when full, an arbitrary
// entry is evicted (keys roll over daily, so stale entries go quickly).
// A KeyCache is safe for concurrent use. The zero value is not usable.
type KeyCache struct {
	mu   sync.Mutex
	max  int
	salt [16]byte
	m    map[[32]byte][32]byte
}

// NewKeyCache returns a cache holding at most size keys
// (DefaultKeyCacheSize if size <= 0).
func NewKeyCache(size int) *KeyCache {
	if size <= 0 {
		size = DefaultKeyCacheSize
	}
	c := &KeyCache{max: size, m: make(map[[32]byte][32]byte, min(size, 64))}
	rand.Read(c.salt[:])
	return c
}

// Len returns the number of cached keys.
func (c *KeyCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// signingKey returns the signing key for the scope, deriving and caching
// it on a miss. A nil cache derives every time.
func (c *KeyCache) signingKey(secret, date, region, service string) [32]byte {
	if c == nil {
		return deriveKey(secret, date, region, service)
	}
	id := c.id(secret, date, region, service)
	c.mu.Lock()
	k, ok := c.m[id]
	c.mu.Unlock()
	if ok {
		return k
	}
	k = deriveKey(secret, date, region, service)
	c.mu.Lock()
	if len(c.m) >= c.max {
		for old := range c.m {
			delete(c.m, old)
			break
		}
	}
	c.m[id] = k
	c.mu.Unlock()
	return k
}

func (c *KeyCache) id(secret, date, region, service string) [32]byte {
	var stack [256]byte
	b := append(stack[:0], c.salt[:]...)
	for _, s := range [...]string{secret, date, region, service} {
		b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
		b = append(b, s...)
	}
	return sha256.Sum256(b)
}
