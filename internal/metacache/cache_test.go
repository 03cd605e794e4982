package metacache

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
)

// counter is a loader that returns how many times it ran for the key.
type counter struct{ n atomic.Int64 }

func (c *counter) load(_ context.Context, key string) (string, error) {
	return key + "#" + strconv.FormatInt(c.n.Add(1), 10), nil
}

func TestMapInvalidation(t *testing.T) {
	bus := NewBus()
	m := NewMap[string](bus, "t", Options{TTL: time.Hour})
	other := NewMap[string](bus, "other", Options{TTL: time.Hour})
	var c counter
	ctx := t.Context()
	get := func(m *Map[string], key string) string {
		t.Helper()
		v, err := m.Get(ctx, key, c.load)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	steps := []struct {
		name string
		do   func()
		m    *Map[string]
		key  string
		want string
	}{
		{"miss loads", nil, m, "a", "a#1"},
		{"hit", nil, m, "a", "a#1"},
		{"other key", nil, m, "b", "b#2"},
		{"other map", nil, other, "a", "a#3"},
		{"after Invalidate", func() { m.Invalidate("a") }, m, "a", "a#4"},
		{"a change of the topic", func() { bus.Publish(meta.Change{Topic: "t", Key: "a"}) }, m, "a", "a#5"},
		{"...leaves other keys", nil, m, "b", "b#2"},
		{"...and other topics", nil, other, "a", "a#3"},
		{"a change of another topic", func() { bus.Publish(meta.Change{Topic: "u", Key: "a"}) }, m, "a", "a#5"},
		{"after Reset", func() { bus.Reset() }, m, "b", "b#6"},
		{"Reset flushes every map", nil, other, "a", "a#7"},
	}
	for _, s := range steps {
		if s.do != nil {
			s.do()
		}
		if got := get(s.m, s.key); got != s.want {
			t.Errorf("%s: Get(%q) = %q, want %q", s.name, s.key, got, s.want)
		}
	}
	if got, want := bus.Changes(), int64(2); got != want {
		t.Errorf("Changes() = %d, want %d", got, want)
	}
}

// TestMapLoadStraddlingChange: a load that began before a change and ends
// after it is not kept, for an Invalidate and for a Flush.
func TestMapLoadStraddlingChange(t *testing.T) {
	for name, change := range map[string]func(m *Map[string]){
		"Invalidate": func(m *Map[string]) { m.Invalidate("k") },
		"Flush":      func(m *Map[string]) { m.Flush() },
	} {
		t.Run(name, func(t *testing.T) {
			m := NewMap[string](nil, "", Options{TTL: time.Hour})
			started, release := make(chan struct{}), make(chan struct{})
			var loads atomic.Int64
			slow := func(context.Context, string) (string, error) {
				if loads.Add(1) == 1 {
					close(started)
					<-release
					return "old", nil
				}
				return "new", nil
			}
			done := make(chan string)
			go func() {
				v, _ := m.Get(context.Background(), "k", slow)
				done <- v
			}()
			<-started
			change(m)
			close(release)
			<-done
			if v, _ := m.Get(t.Context(), "k", slow); v != "new" {
				t.Errorf("after a load straddling %s, Get = %q, want %q", name, v, "new")
			}
		})
	}
}

func TestMapTTLAndErrors(t *testing.T) {
	m := NewMap[string](nil, "", Options{TTL: 50 * time.Millisecond})
	var c counter
	v1, _ := m.Get(t.Context(), "k", c.load)
	time.Sleep(120 * time.Millisecond)
	v2, _ := m.Get(t.Context(), "k", c.load)
	if v1 == v2 {
		t.Errorf("Get after the TTL = %q, the value loaded before it", v2)
	}
	boom := errors.New("boom")
	fail := func(context.Context, string) (string, error) { return "", boom }
	if _, err := m.Get(t.Context(), "e", fail); !errors.Is(err, boom) {
		t.Errorf("Get with a failing load: %v, want %v", err, boom)
	}
	if v, err := m.Get(t.Context(), "e", c.load); err != nil || v == "" {
		t.Errorf("an error was cached: %q, %v", v, err)
	}
}

func TestMapBounded(t *testing.T) {
	m := NewMap[string](nil, "", Options{MaxEntries: 100, TTL: time.Hour})
	var c counter
	for i := range 5000 {
		m.Get(t.Context(), strconv.Itoa(i), c.load)
	}
	m.c.CleanUp()
	if n := m.c.EstimatedSize(); n > 110 {
		t.Errorf("a Map of at most 100 entries holds %d", n)
	}
}

// TestMapBoundedInBytes: with MaxBytes, the sum of the weights stays
// within it, and the entry bound holds too (every entry weighs at least
// MaxBytes/MaxEntries).
func TestMapBoundedInBytes(t *testing.T) {
	big := func(context.Context, string) (string, error) { return string(make([]byte, 1000)), nil }
	tiny := func(context.Context, string) (string, error) { return "x", nil }
	tests := []struct {
		name       string
		o          Options
		load       func(context.Context, string) (string, error)
		maxEntries int
	}{
		{"bytes bind", Options{MaxEntries: 1_000_000, MaxBytes: 100_000, TTL: time.Hour}, big, 110},
		{"entries bind", Options{MaxEntries: 100, MaxBytes: 1 << 30, TTL: time.Hour}, tiny, 110},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMap(nil, "", tc.o, func(_ string, v string) int { return len(v) })
			for i := range 5000 {
				m.Get(t.Context(), strconv.Itoa(i), tc.load)
			}
			m.c.CleanUp()
			st := m.Stats()
			if st.Entries > tc.maxEntries {
				t.Errorf("entries = %d, want at most %d", st.Entries, tc.maxEntries)
			}
			if st.Bytes > uint64(tc.o.MaxBytes) {
				t.Errorf("bytes = %d, want at most %d", st.Bytes, tc.o.MaxBytes)
			}
			if st.Evictions == 0 {
				t.Error("no eviction counted")
			}
		})
	}
}
