package auth

import (
	"fmt"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/config"
)

// clock is a fake clock for the throttles.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newClock() *clock { return &clock{t: time.Unix(1_700_000_000, 0)} }

func TestBackoff(t *testing.T) {
	c := newClock()
	b := NewBackoff(3, time.Hour, time.Second, 8*time.Second)
	b.now = c.now
	for i := range 3 {
		if got := b.Take("k"); got != 0 {
			t.Fatalf("attempt %d under the ceiling: Take = %v, want 0", i+1, got)
		}
	}
	// Past the ceiling each attempt passes, then starts a delay twice the
	// last one, capped.
	for _, want := range []time.Duration{1, 2, 4, 8, 8} {
		want *= time.Second
		if got := b.Take("k"); got != 0 {
			t.Fatalf("first attempt after the delay: Take = %v, want 0", got)
		}
		if got := b.Take("k"); got != want {
			t.Fatalf("during the delay: Take = %v, want %v", got, want)
		}
		c.advance(want / 2)
		if got := b.Take("k"); got != want/2 {
			t.Fatalf("half-way through the delay: Take = %v, want %v", got, want/2)
		}
		c.advance(want / 2)
	}
	if got := b.Take("other"); got != 0 {
		t.Errorf("another key: Take = %v, want 0", got)
	}
	// A new window starts afresh: no delay, a full allowance.
	c.advance(time.Hour)
	for i := range 3 {
		if got := b.Take("k"); got != 0 {
			t.Fatalf("new window, attempt %d: Take = %v, want 0", i+1, got)
		}
	}
	// Release gives an attempt back.
	b.Release("k")
	if got := b.Take("k"); got != 0 {
		t.Errorf("after Release: Take = %v, want 0", got)
	}
	if got := b.Take("k"); got != 0 {
		t.Errorf("first attempt past the ceiling: Take = %v, want 0", got)
	}
	if got := b.Take("k"); got != time.Second {
		t.Errorf("second attempt past the ceiling: Take = %v, want 1s", got)
	}

	// Bounded.
	small := NewBackoff(1, time.Minute, time.Second, time.Second)
	small.MaxKeys = 2
	for _, k := range []string{"a", "b", "c", "d"} {
		small.Take(k)
	}
	if len(small.m) > 2 {
		t.Errorf("table grew to %d entries", len(small.m))
	}
}

// guard returns a loginGuard with the default limits on a fake clock.
func guard(t *testing.T) (*loginGuard, *clock) {
	t.Helper()
	g := newLoginGuard(ConfigFrom(config.Defaults()).Logins, nil)
	c := newClock()
	g.setClock(c.now)
	return g, c
}

// fail counts n failed attempts of account from ip, all of which must be
// let through.
func fail(t *testing.T, g *loginGuard, account, ip string, n int) {
	t.Helper()
	for i := range n {
		a, wait := g.begin(t.Context(), account, ip)
		if wait > 0 {
			t.Fatalf("%s from %s, attempt %d: refused for %v", account, ip, i+1, wait)
		}
		a.failed()
	}
}

func refused(t *testing.T, g *loginGuard, account, ip string, atMost time.Duration) {
	t.Helper()
	a, wait := g.begin(t.Context(), account, ip)
	if wait <= 0 {
		a.uncounted()
		t.Fatalf("%s from %s: let through, want refused", account, ip)
	}
	if wait > atMost {
		t.Errorf("%s from %s: refused for %v, want at most %v", account, ip, wait, atMost)
	}
}

func allowed(t *testing.T, g *loginGuard, account, ip string) *attempt {
	t.Helper()
	a, wait := g.begin(t.Context(), account, ip)
	if wait > 0 {
		t.Fatalf("%s from %s: refused for %v, want let through", account, ip, wait)
	}
	return a
}

func TestLoginGuard(t *testing.T) {
	const victim = "victim@example.com"
	t.Run("PairLimitLeavesOtherAddresses", func(t *testing.T) {
		g, c := guard(t)
		fail(t, g, victim, "198.51.100.7", 10)
		refused(t, g, victim, "198.51.100.7", 15*time.Minute)
		allowed(t, g, victim, "203.0.113.9").succeeded()
		// The stranger's pair stays blocked until its window ends.
		refused(t, g, victim, "198.51.100.7", 15*time.Minute)
		c.advance(15 * time.Minute)
		allowed(t, g, victim, "198.51.100.7").failed()
	})
	t.Run("SuccessResetsPair", func(t *testing.T) {
		g, _ := guard(t)
		fail(t, g, victim, "203.0.113.9", 9)
		allowed(t, g, victim, "203.0.113.9").succeeded()
		fail(t, g, victim, "203.0.113.9", 10)
		refused(t, g, victim, "203.0.113.9", 15*time.Minute)
	})
	t.Run("IPv6By64", func(t *testing.T) {
		g, _ := guard(t)
		for i := range 10 {
			fail(t, g, victim, fmt.Sprintf("2001:db8:1:2::%x", i+1), 1)
		}
		refused(t, g, victim, "2001:db8:1:2:ffff::1", 15*time.Minute)
		allowed(t, g, victim, "2001:db8:1:3::1").failed()
	})
	t.Run("PerAddressAcrossAccounts", func(t *testing.T) {
		g, c := guard(t)
		for i := range 100 {
			fail(t, g, fmt.Sprintf("user%d@example.com", i), "198.51.100.7", 1)
		}
		refused(t, g, "fresh@example.com", "198.51.100.7", 15*time.Minute)
		allowed(t, g, "fresh@example.com", "203.0.113.9").succeeded()
		c.advance(15 * time.Minute)
		allowed(t, g, "fresh@example.com", "198.51.100.7").failed()
	})
	t.Run("SuccessGivesAddressAttemptBack", func(t *testing.T) {
		g, _ := guard(t)
		for i := range 99 {
			fail(t, g, fmt.Sprintf("a%d@example.com", i), "198.51.100.7", 1)
		}
		for range 50 {
			allowed(t, g, "b@example.com", "198.51.100.7").succeeded()
		}
		fail(t, g, "c@example.com", "198.51.100.7", 1)
		refused(t, g, "d@example.com", "198.51.100.7", 15*time.Minute)
	})
	t.Run("UncountedCountsNothing", func(t *testing.T) {
		g, _ := guard(t)
		for range 50 {
			allowed(t, g, victim, "198.51.100.7").uncounted()
		}
		fail(t, g, victim, "198.51.100.7", 10)
	})
	t.Run("AccountCeilingBacksOffKnownAddressExempt", func(t *testing.T) {
		g, c := guard(t)
		allowed(t, g, victim, "203.0.113.9").succeeded() // the owner's address
		// 1000 failures from 100 addresses, 10 each: the ceiling.
		for i := range 100 {
			fail(t, g, victim, fmt.Sprintf("10.0.%d.%d", i/250, i%250+1), 10)
		}
		// Past it: one attempt starts a 1 s delay for new addresses...
		allowed(t, g, victim, "10.1.0.1").failed()
		refused(t, g, victim, "10.1.0.2", time.Second)
		// ... but not for the owner's address.
		allowed(t, g, victim, "203.0.113.9").succeeded()
		c.advance(time.Second)
		allowed(t, g, victim, "10.1.0.3").failed()
		refused(t, g, victim, "10.1.0.4", 2*time.Second)
		// Other accounts are unaffected.
		allowed(t, g, "other@example.com", "10.1.0.4").failed()
		// Back-off, not a lock: the delay caps at 1 min.
		for i := range 20 {
			c.advance(time.Minute)
			allowed(t, g, victim, fmt.Sprintf("10.1.1.%d", i+1)).failed()
		}
		refused(t, g, victim, "10.1.0.6", time.Minute)
		// A known address stays known for 30 days only.
		c.advance(30 * 24 * time.Hour)
		for i := range 100 {
			fail(t, g, victim, fmt.Sprintf("10.2.%d.%d", i/250, i%250+1), 10)
		}
		allowed(t, g, victim, "10.3.0.1").failed()
		refused(t, g, victim, "203.0.113.9", time.Second)
	})
	t.Run("RefusalCountsNothing", func(t *testing.T) {
		g, c := guard(t)
		fail(t, g, victim, "198.51.100.7", 10)
		for range 1000 {
			refused(t, g, victim, "198.51.100.7", 15*time.Minute)
		}
		c.advance(15 * time.Minute)
		// The refused attempts did not count against the address.
		for i := range 90 {
			fail(t, g, fmt.Sprintf("x%d@example.com", i), "198.51.100.7", 1)
		}
	})
}
