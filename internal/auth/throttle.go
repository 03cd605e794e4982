package auth

import (
	"context"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
)

// Throttle counts attempts per key in a fixed window. An attempt is
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
	m   map[string]*meta.ThrottleState
	now func() time.Time
}

// NewThrottle returns a Throttle allowing limit attempts per window.
func NewThrottle(limit int, per time.Duration) *Throttle {
	return &Throttle{Limit: limit, Window: per, MaxKeys: defaultMaxKeys, m: map[string]*meta.ThrottleState{}, now: time.Now}
}

// state returns key's state in m, a fresh one if it has none or it
// expired (making room for it).
func state(m map[string]*meta.ThrottleState, key string, maxKeys int, now time.Time) *meta.ThrottleState {
	st := m[key]
	if st == nil || !st.Expires.After(now) {
		makeRoom(m, key, maxKeys, func(st *meta.ThrottleState) bool { return !st.Expires.After(now) })
		st = &meta.ThrottleState{}
		m[key] = st
	}
	return st
}

const defaultMaxKeys = 100_000

// Take counts an attempt for key and returns 0, or, if key is at its limit,
// how long it must wait (and counts nothing).
func (t *Throttle) Take(key string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	return t.take(state(t.m, key, t.MaxKeys, now), now)
}

// take is Take's rule on one key's state (the zero state: none yet).
func (t *Throttle) take(st *meta.ThrottleState, now time.Time) time.Duration {
	if !st.Expires.After(now) {
		*st = meta.ThrottleState{Start: now, Expires: now.Add(t.Window)}
	}
	if st.Count >= int64(t.Limit) {
		return st.Expires.Sub(now)
	}
	st.Count++
	return 0
}

// Release gives back one attempt of key (the attempt succeeded).
func (t *Throttle) Release(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if st := t.m[key]; st != nil {
		release(st)
	}
}

// release gives back one attempt counted in st.
func release(st *meta.ThrottleState) {
	if st.Count > 0 {
		st.Count--
	}
}

// Reset forgets key.
func (t *Throttle) Reset(key string) {
	t.mu.Lock()
	delete(t.m, key)
	t.mu.Unlock()
}

// makeRoom prepares m for a new entry under key: if m holds limit entries
// and key is not one of them, expired entries are swept, and if none was,
// arbitrary ones are evicted.
func makeRoom[V any](m map[string]V, key string, limit int, expired func(V) bool) {
	if _, ok := m[key]; ok || len(m) < limit {
		return
	}
	for k, v := range m {
		if expired(v) {
			delete(m, k)
		}
	}
	for k := range m {
		if len(m) < limit {
			break
		}
		delete(m, k)
	}
}

// Backoff is the per-account ceiling of failed logins. It counts attempts
// per key in a fixed window like Throttle, but past Limit it does not lock
// the key for the rest of the window: each further attempt is let through
// and starts a delay, twice the previous one (from Base, at most Max),
// during which the key is refused. The window, the count and the delay
// start afresh once the window has passed and no delay runs.
//
// An attempt is counted when it starts (Take), so the delay begins before
// its password is checked and parallel attempts past the ceiling are
// refused. It is bounded like Throttle (MaxKeys).
type Backoff struct {
	Limit     int
	Window    time.Duration
	Base, Max time.Duration
	MaxKeys   int

	mu  sync.Mutex
	m   map[string]*meta.ThrottleState
	now func() time.Time
}

// NewBackoff returns a Backoff allowing limit attempts per window before
// delays of base, 2×base, … up to maxDelay.
func NewBackoff(limit int, per, base, maxDelay time.Duration) *Backoff {
	return &Backoff{Limit: limit, Window: per, Base: base, Max: maxDelay, MaxKeys: defaultMaxKeys, m: map[string]*meta.ThrottleState{}, now: time.Now}
}

// Take counts an attempt for key and returns 0, or, while a delay of key
// runs, how long it still runs (and counts nothing).
func (b *Backoff) Take(key string) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	return b.take(state(b.m, key, b.MaxKeys, now), now)
}

// take is Take's rule on one key's state (the zero state: none yet). The
// state expires when both the window and the delay have passed.
func (b *Backoff) take(st *meta.ThrottleState, now time.Time) time.Duration {
	if !st.Expires.After(now) {
		*st = meta.ThrottleState{Start: now, Expires: now.Add(b.Window)}
	}
	if now.Before(st.Until) {
		return st.Until.Sub(now)
	}
	st.Count++
	if st.Count > int64(b.Limit) {
		st.Delay = min(max(2*st.Delay, b.Base), b.Max)
		st.Until = now.Add(st.Delay)
		st.Expires = later(st.Expires, st.Until)
	}
	return 0
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Release gives back one attempt of key (it succeeded, or was not the
// client's fault). A delay that attempt started keeps running.
func (b *Backoff) Release(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if st := b.m[key]; st != nil {
		release(st)
	}
}

// recent is a bounded set of keys, each remembered for ttl.
type recent struct {
	ttl     time.Duration
	maxKeys int

	mu  sync.Mutex
	m   map[string]time.Time // key -> expiry
	now func() time.Time
}

func newRecent(ttl time.Duration) *recent {
	return &recent{ttl: ttl, maxKeys: defaultMaxKeys, m: map[string]time.Time{}, now: time.Now}
}

func (r *recent) add(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	makeRoom(r.m, key, r.maxKeys, func(exp time.Time) bool { return !now.Before(exp) })
	r.m[key] = now.Add(r.ttl)
}

func (r *recent) has(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	exp, ok := r.m[key]
	return ok && r.now().Before(exp)
}

// LoginLimits bound failed logins so that a stranger cannot lock an owner
// out: the tight limits are per (account, client address) and per client
// address; the per-account ceiling is far above what one address may try
// and backs off exponentially instead of locking, and does not apply to an
// address the account logged in from successfully (KnownFor). They are
// taken as given: ConfigFrom fills them from config.Config's Login*
// fields.
type LoginLimits struct {
	PerPair       int           // failures per (account, client address) in Window
	PerAddress    int           // failures per client address, all accounts together, in Window
	Window        time.Duration // the window of PerPair and PerAddress
	PerAccount    int           // failures per account from all addresses in AccountWindow
	AccountWindow time.Duration // the window of PerAccount
	BackoffBase   time.Duration // delay after the first failure past PerAccount, doubling with each further one
	BackoffMax    time.Duration // longest such delay
	KnownFor      time.Duration // how long a successful login exempts its address from the account ceiling
}

// sharedThrottles keeps the throttles' state in the store that several
// nodes share (meta.Limits' UpdateThrottles), so that they count every
// node's attempts together: a client spreading its guesses over the nodes
// behind a load balancer gets no more than from one node.
type sharedThrottles func(ctx context.Context, now time.Time, keys []string, fn func([]meta.ThrottleState) []meta.ThrottleState) error

// sharedTimeout bounds a throttle's round trip to the shared store; past
// it (or on any failure) the node's own tables decide.
const sharedTimeout = 5 * time.Second

// update runs fn on keys' states in the shared store, and reports whether
// it could (false: there is none, or it failed; the caller then uses this
// node's tables, so a store outage never lifts the limits).
func (sh sharedThrottles) update(ctx context.Context, now time.Time, keys []string, fn func([]meta.ThrottleState) []meta.ThrottleState) bool {
	if sh == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sharedTimeout)
	defer cancel()
	return sh(ctx, now, keys, fn) == nil
}

// loginGuard applies LoginLimits. Its state is in the shared store when
// there is one (shared), else in memory, per node.
type loginGuard struct {
	pair    *Throttle // account + "\x00" + IPKey
	addr    *Throttle // IPKey
	account *Backoff  // account
	known   *recent   // pair keys that logged in successfully
	shared  sharedThrottles
	now     func() time.Time
}

func newLoginGuard(l LoginLimits, shared sharedThrottles) *loginGuard {
	return &loginGuard{
		pair:    NewThrottle(l.PerPair, l.Window),
		addr:    NewThrottle(l.PerAddress, l.Window),
		account: NewBackoff(l.PerAccount, l.AccountWindow, l.BackoffBase, l.BackoffMax),
		known:   newRecent(l.KnownFor),
		shared:  shared,
		now:     time.Now,
	}
}

// setClock makes every table read now (tests).
func (g *loginGuard) setClock(now func() time.Time) {
	g.pair.now, g.addr.now, g.account.now, g.known.now, g.now = now, now, now, now, now
}

// attempt is a login attempt counted by begin; exactly one of succeeded,
// failed and uncounted must follow.
type attempt struct {
	g                   *loginGuard
	ctx                 context.Context
	account, addr, pair string
	ceiling             bool // counted against the account ceiling
	shared              bool // counted in the shared store
}

// The keys of the login throttles in the shared store (text without NUL:
// a pair is the address, which holds no space, a space and the account).
func (a *attempt) sharedKeys() []string {
	addr, account := textKey(a.addr), textKey(a.account)
	pair := addr + " " + account
	return []string{"login-addr:" + addr, "login-pair:" + pair, "login-account:" + account, "login-known:" + pair}
}

// textKey makes s storable as text (a client may send any bytes as an
// email): NUL and invalid UTF-8 become U+FFFD. Keys that differ only there
// share a throttle, which is harmless.
func textKey(s string) string {
	return strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", "\uFFFD"), "\uFFFD")
}

// begin counts an attempt on account (a normalised email, known or not)
// from clientIP, before its password is checked. If a limit refuses it,
// nothing is counted and the wait is returned.
func (g *loginGuard) begin(ctx context.Context, account, clientIP string) (*attempt, time.Duration) {
	a := &attempt{g: g, ctx: ctx, account: account, addr: IPKey(clientIP)}
	a.pair = account + "\x00" + a.addr
	var wait time.Duration
	now := g.now()
	a.shared = g.shared.update(ctx, now, a.sharedKeys(), func(st []meta.ThrottleState) []meta.ThrottleState {
		// The same rules as below, on the stored states; a refusal
		// stores nothing.
		wait, a.ceiling = 0, false
		addr, pair, account, known := &st[0], &st[1], &st[2], st[3]
		if wait = g.addr.take(addr, now); wait > 0 {
			return nil
		}
		if wait = g.pair.take(pair, now); wait > 0 {
			return nil
		}
		if !known.Expires.After(now) {
			if wait = g.account.take(account, now); wait > 0 {
				return nil
			}
			a.ceiling = true
		}
		return st
	})
	if a.shared {
		if wait > 0 {
			return nil, wait
		}
		return a, 0
	}
	if wait := g.addr.Take(a.addr); wait > 0 {
		return nil, wait
	}
	if wait := g.pair.Take(a.pair); wait > 0 {
		g.addr.Release(a.addr)
		return nil, wait
	}
	if !g.known.has(a.pair) {
		if wait := g.account.Take(account); wait > 0 {
			g.pair.Release(a.pair)
			g.addr.Release(a.addr)
			return nil, wait
		}
		a.ceiling = true
	}
	return a, 0
}

// succeeded: the password was right. The pair starts afresh and is
// remembered as known; the address and the account get their attempt
// back.
func (a *attempt) succeeded() {
	if a.shared {
		now := a.g.now()
		a.g.shared.update(a.ctx, now, a.sharedKeys(), func(st []meta.ThrottleState) []meta.ThrottleState {
			st[1] = meta.ThrottleState{}
			st[3] = meta.ThrottleState{Start: now, Expires: now.Add(a.g.known.ttl)}
			a.releaseShared(st)
			return st
		})
		return
	}
	a.g.pair.Reset(a.pair)
	a.g.known.add(a.pair)
	a.release(false)
}

// failed: the password was wrong (or the account unknown or disabled).
// The attempt stays counted.
func (a *attempt) failed() {}

// uncounted: the check did not happen (hashing pool busy, request
// cancelled); nothing is counted.
func (a *attempt) uncounted() {
	if a.shared {
		a.g.shared.update(a.ctx, a.g.now(), a.sharedKeys(), func(st []meta.ThrottleState) []meta.ThrottleState {
			release(&st[1])
			a.releaseShared(st)
			return st
		})
		return
	}
	a.release(true)
}

// releaseShared gives the address and the account (if counted) their
// attempt back in the stored states st (sharedKeys).
func (a *attempt) releaseShared(st []meta.ThrottleState) {
	release(&st[0])
	if a.ceiling {
		release(&st[2])
	}
}

func (a *attempt) release(pair bool) {
	if pair {
		a.g.pair.Release(a.pair)
	}
	a.g.addr.Release(a.addr)
	if a.ceiling {
		a.g.account.Release(a.account)
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
