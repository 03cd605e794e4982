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
	want := Config{MaxObjectSize: 64 << 30, GarbageGrace: time.Minute, OrphanGrace: time.Hour, InlineMax: 64 << 10, StagingLease: time.Minute}
	got := svc.cfg
	if got.MaxObjectSize != want.MaxObjectSize || got.GarbageGrace != want.GarbageGrace || got.OrphanGrace != want.OrphanGrace ||
		got.InlineMax != want.InlineMax || got.StagingLease != want.StagingLease || got.Encrypt {
		t.Errorf("config: got %+v, want %+v", got, want)
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
