package object

import (
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/config"
)

// TestDefaultConfig: the service runs with the defaults it always had
// (64 GiB objects, 1 min garbage grace, 1 h orphan grace, 64 KiB inline,
// 1 min staging lease), now written only in config.Defaults.
func TestDefaultConfig(t *testing.T) {
	f := newFixture(t, 0)
	svc := New(f.meta, f.blobs, ConfigFrom(config.Defaults()), nil)
	want := Config{MaxObjectSize: 64 << 30, GarbageGrace: time.Minute, OrphanGrace: time.Hour, InlineMax: 64 << 10, StagingLease: time.Minute,
		MultipartExpiry: 7 * 24 * time.Hour, JanitorInterval: 30 * time.Second, OrphanInterval: time.Hour}
	got := svc.cfg
	if got.MaxObjectSize != want.MaxObjectSize || got.GarbageGrace != want.GarbageGrace || got.OrphanGrace != want.OrphanGrace ||
		got.InlineMax != want.InlineMax || got.StagingLease != want.StagingLease || got.Encrypt ||
		got.MultipartExpiry != want.MultipartExpiry || got.JanitorInterval != want.JanitorInterval || got.OrphanInterval != want.OrphanInterval {
		t.Errorf("config: got %+v, want %+v", got, want)
	}
	// New takes its configuration as given: a zero one stays zero.
	if zero := New(f.meta, f.blobs, Config{}, nil).cfg; zero.MaxObjectSize != 0 || zero.MultipartExpiry != 0 || zero.JanitorInterval != 0 {
		t.Errorf("New defaulted a zero configuration: %+v", zero)
	}
	if got, want := JobOptionsFrom(config.Defaults()), (JobOptions{Lease: 30 * time.Second, PageSize: 100, Poll: 5 * time.Second, Settle: 15 * time.Second}); got != want {
		t.Errorf("job options: got %+v, want %+v", got, want)
	}
}

// TestUploadExpiry: an upload created without its own TTL (S3's) expires
// after Config.MultipartExpiry, one with a TTL after it.
func TestUploadExpiry(t *testing.T) {
	f := newFixture(t, 0)
	svc := New(f.meta, f.blobs, testConfig(func(c *Config) { c.MultipartExpiry = 3 * time.Hour }), nil)
	for _, tc := range []struct {
		ttl, want time.Duration
	}{{0, 3 * time.Hour}, {time.Hour, time.Hour}} {
		u, err := svc.CreateUpload(t.Context(), f.alice, CreateUploadInput{Bucket: "alice-bucket", Key: "k", TTL: tc.ttl})
		if err != nil {
			t.Fatal(err)
		}
		if got := u.ExpiresAt.Sub(u.CreatedAt); got != tc.want {
			t.Errorf("TTL %v: expires after %v, want %v", tc.ttl, got, tc.want)
		}
	}
}

// TestInliningOff: with inlining off, every object is a blob, the empty
// one included.
func TestInliningOff(t *testing.T) {
	f := newFixture(t, 0) // inlining off
	for _, data := range []string{"", "small"} {
		o, err := f.put(t, f.alice, "alice-bucket", "k"+data, data)
		if err != nil || o.IsInline() || o.BlobKey == "" {
			t.Errorf("%q with inlining off: %+v, %v; want a blob", data, o, err)
		}
	}
	if got := f.read(t, f.alice, "alice-bucket", "k"); got != "" {
		t.Errorf("empty object read %q", got)
	}
}
