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
		{"DirectUploadExpiry", got.DirectUploadExpiry, 24 * time.Hour},
		{"Tus.TTL", got.Tus.TTL, 24 * time.Hour},
		{"Tus.LockLease", got.Tus.LockLease, 30 * time.Second},
	} {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
	// New takes its configuration as given: a zero one stays zero.
	if zero := New(Services{}, Config{}, nil).cfg; zero.MaxJSONBody != 0 || zero.DirectUploadExpiry != 0 || zero.Tus.TTL != 0 {
		t.Errorf("New defaulted a zero configuration: %+v", zero)
	}
}
