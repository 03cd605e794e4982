package auth

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/coffer-storage/coffer/internal/config"
	"github.com/coffer-storage/coffer/internal/meta/sqlite"
)

// BenchmarkStateCheck: the account check every request makes, from the
// cache, against the GetUser it replaces (SQLite, the cheapest store).
func BenchmarkStateCheck(b *testing.B) {
	m, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "meta.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	s := NewService(StoresOf(m.Stores()), []byte("0123456789abcdef0123456789abcdef"), benchConfig())
	ctx := context.Background()
	u, _, err := s.Signups.Signup(ctx, "alice@example.com", "correct horse battery")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("cached", func(b *testing.B) {
		for b.Loop() {
			if st, err := s.core.state(ctx, u.ID); err != nil || !st.found {
				b.Fatal(err)
			}
		}
	})
	b.Run("GetUser", func(b *testing.B) {
		for b.Loop() {
			if _, err := m.GetUser(ctx, u.ID); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached/parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				s.core.state(ctx, u.ID)
			}
		})
	})
}

// benchConfig is the default configuration with cheap hashing.
func benchConfig() Config {
	c := ConfigFrom(config.Defaults())
	c.Params = Params{Memory: 8 * 1024, Time: 1}
	return c
}
