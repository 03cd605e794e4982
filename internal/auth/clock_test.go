package auth

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/config"
	"github.com/coffer-storage/coffer/internal/meta/sqlite"
)

// TestClockOffset: --clock-offset (test only, the fault harness) skews
// the clock of the account service and its token signer.
func TestClockOffset(t *testing.T) {
	m, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "meta.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	c := config.Defaults()
	c.ClockOffset = -2 * time.Hour
	s := NewService(StoresOf(m.Stores()), []byte("master key for tests"), ConfigFrom(c))
	for name, now := range map[string]func() time.Time{"core": s.core.now, "tokens": s.core.tokens.now} {
		if d := time.Until(now()); d > -time.Hour || d < -3*time.Hour {
			t.Errorf("%s clock with --clock-offset -2h is %v off", name, d)
		}
	}
}
