package object

import (
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/config"
)

// TestClockOffset: --clock-offset (test only, the fault harness) skews
// the service's clock; without it the clock is the real one.
func TestClockOffset(t *testing.T) {
	f := newFixture(t, 0)
	c := config.Defaults()
	if d := time.Until(New(f.meta, f.blobs, ConfigFrom(c), nil).now()); d < -time.Minute || d > time.Minute {
		t.Errorf("clock without an offset is %v off", d)
	}
	c.ClockOffset = 2 * time.Hour
	if d := time.Until(New(f.meta, f.blobs, ConfigFrom(c), nil).now()); d < time.Hour || d > 3*time.Hour {
		t.Errorf("clock with --clock-offset 2h is %v off", d)
	}
}
