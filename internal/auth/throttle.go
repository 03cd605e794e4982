package auth

import (
	"net/netip"
	"sync"
	"time"
)

// Throttle counts login attempts per key in a fixed window. An attempt is
// counted when it starts (Take), before the slow password check, so that
// parallel attempts cannot all slip under the limit; a success gives its
// attempt back (Release) or clears the key (Reset).
//
// It is bounded: when it holds MaxKeys entries, expired ones are swept,
// and if none expired an arbitrary entry is evicted. Evicting (rather than
// refusing new keys) means a flood of distinct failing keys cannot lock
// every user out; flooding enough keys to evict a given one needs
// MaxKeys/IP-limit client addresses.
type Throttle struct {
	Limit   int
	Window  time.Duration
	MaxKeys int

	mu  sync.Mutex
	m   map[string]*window
	now func() time.Time
}

type window struct {
	start time.Time
	count int
}

// NewThrottle returns a Throttle allowing limit attempts per window.
func NewThrottle(limit int, per time.Duration) *Throttle {
	return &Throttle{Limit: limit, Window: per, MaxKeys: 100_000, m: map[string]*window{}, now: time.Now}
}

// Take counts an attempt for key and returns 0, or, if key is at its limit,
// how long it must wait (and counts nothing).
func (t *Throttle) Take(key string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	w := t.m[key]
	if w != nil && now.Sub(w.start) >= t.Window {
		w = nil
	}
	if w == nil {
		if _, ok := t.m[key]; !ok && len(t.m) >= t.MaxKeys {
			t.sweep(now)
			for k := range t.m {
				if len(t.m) < t.MaxKeys {
					break
				}
				delete(t.m, k)
			}
		}
		w = &window{start: now}
		t.m[key] = w
	}
	if w.count >= t.Limit {
		return w.start.Add(t.Window).Sub(now)
	}
	w.count++
	return 0
}

// Release gives back one attempt of key (the attempt succeeded).
func (t *Throttle) Release(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if w := t.m[key]; w != nil && w.count > 0 {
		w.count--
	}
}

// Reset forgets key.
func (t *Throttle) Reset(key string) {
	t.mu.Lock()
	delete(t.m, key)
	t.mu.Unlock()
}

func (t *Throttle) sweep(now time.Time) {
	for k, w := range t.m {
		if now.Sub(w.start) >= t.Window {
			delete(t.m, k)
		}
	}
}

// IPKey is the throttle key of a client address: the address itself for
// IPv4, its /64 for IPv6 (one subscriber usually holds a whole /64).
func IPKey(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil || !a.Is6() || a.Is4In6() {
		return ip
	}
	p, _ := a.Prefix(64)
	return p.String()
}
