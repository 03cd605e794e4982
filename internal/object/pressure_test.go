package object

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// TestPressureReclaim: a deleted object's blob waits out GarbageGrace;
// under Config.Pressure it goes after PressureGrace, except while a
// reader of this process has it open (it stays queued and goes once the
// reader is closed).
func TestPressureReclaim(t *testing.T) {
	f := newFixture(t, 0)
	ctx := context.Background()
	pressed := false
	f.svc = New(f.meta, f.blobs, testConfig(func(c *Config) {
		c.GarbageGrace, c.PressureGrace, c.InlineMax = time.Hour, time.Nanosecond, 0
		c.Pressure = func() bool { return pressed }
	}), nil)
	put := func(key string) meta.Object {
		o, err := f.put(t, f.alice, "alice-bucket", key, "bytes of "+key)
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	gone := func(o meta.Object) bool {
		_, err := f.blobs.Stat(ctx, o.BlobKey)
		return errcode.Is(err, errcode.NotFound)
	}
	a, b := put("a"), put("b")
	r, err := f.svc.Get(ctx, f.alice, "alice-bucket", "b")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := r.Open(ctx, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b"} {
		if _, err := f.svc.Delete(ctx, f.alice, "alice-bucket", k, meta.Cond{}); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := f.svc.CollectGarbage(ctx); err != nil || n != 0 || gone(a) {
		t.Fatalf("without pressure: CollectGarbage = %d, %v; want nothing before the hour's grace", n, err)
	}
	pressed = true
	if n, err := f.svc.CollectGarbage(ctx); err != nil || n != 1 || !gone(a) || gone(b) {
		t.Fatalf("under pressure, b open: CollectGarbage = %d, %v (a gone %v, b gone %v); want a only", n, err, gone(a), gone(b))
	}
	if got, err := io.ReadAll(rc); err != nil || string(got) != "by" {
		t.Fatalf("reading the open, deleted b: %q, %v", got, err)
	}
	rc.Close()
	if n, err := f.svc.CollectGarbage(ctx); err != nil || n != 1 || !gone(b) {
		t.Fatalf("under pressure, b closed: CollectGarbage = %d, %v; want b", n, err)
	}
}
