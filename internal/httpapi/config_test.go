package httpapi

import (
	"testing"
	"time"
)

// TestDefaultConfig: the file API runs with the limits it always had, now
// written only in config.Defaults.
func TestDefaultConfig(t *testing.T) {
	got := New(Services{}, testConfig(nil), nil).cfg
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"PublicMaxAge", got.PublicMaxAge, time.Minute},
		{"MaxJSONBody", got.MaxJSONBody, int64(64 << 10)},
		{"MaxFormFiles", got.MaxFormFiles, 1000},
		{"ShareDefaultExpiry", got.ShareDefaultExpiry, 7 * 24 * time.Hour},
		{"ShareMaxExpiry", got.ShareMaxExpiry, 90 * 24 * time.Hour},
		{"ShareGrantTTL", got.ShareGrantTTL, time.Hour},
		{"MaxZipEntries", got.MaxZipEntries, 10_000},
		{"MaxZipBytes", got.MaxZipBytes, int64(16 << 30)},
		{"ZipPlanTimeout", got.ZipPlanTimeout, 30 * time.Second},
	} {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
}
