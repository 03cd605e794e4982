package auth

import (
	"sync"
	"time"
)

// Throttle counts failures per key in a fixed window and refuses a key once
// it reached Limit failures, until its window ends. It is bounded: when it
// holds MaxKeys entries, expired ones are swept, and if none expired new
// keys are refused (fail closed) rather than growing without bound.
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

// NewThrottle returns a Throttle allowing limit failures per window.
func NewThrottle(limit int, per time.Duration) *Throttle {
	return &Throttle{Limit: limit, Window: per, MaxKeys: 100_000, m: map[string]*window{}, now: time.Now}
}

// Check returns 0 if key may try now, or how long it must wait.
func (t *Throttle) Check(key string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	w := t.m[key]
	if w == nil {
		return 0
	}
	if now.Sub(w.start) >= t.Window {
		delete(t.m, key)
		return 0
	}
	if w.count >= t.Limit {
		return w.start.Add(t.Window).Sub(now)
	}
	return 0
}

// Fail records a failure for key.
func (t *Throttle) Fail(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	w := t.m[key]
	if w == nil || now.Sub(w.start) >= t.Window {
		if w == nil && len(t.m) >= t.MaxKeys {
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
	w.count++
}

// Reset forgets key (after a success).
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
