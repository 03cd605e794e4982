package meta

import (
	"slices"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
)

func TestGrant(t *testing.T) {
	for _, c := range []struct {
		name     string
		room     Room
		share    Reservation
		min, max int64
		want     int64 // -1: QuotaExceeded
	}{
		{"unlimited", Room{Usage: 1 << 40}, Reservation{}, 5, 10, 10},
		{"all fits", Room{Quota: 100, Usage: 10, Reserved: 20}, Reservation{}, 5, 70, 70},
		{"partly fits", Room{Quota: 100, Usage: 10, Reserved: 20}, Reservation{}, 5, 80, 70},
		{"min does not fit", Room{Quota: 100, Usage: 10, Reserved: 20}, Reservation{}, 71, 80, -1},
		{"never shrinks", Room{Quota: 100, Usage: 10, Reserved: 50}, Reservation{Own: 50}, 1, 1, 50},
		{"grows within its own share", Room{Quota: 100, Usage: 10, Reserved: 50}, Reservation{Own: 50}, 60, 200, 90},
		{"credit covers all", Room{Quota: 100, Usage: 100}, Reservation{Credit: 60}, 60, 60, 60},
		{"credit covers part", Room{Quota: 100, Usage: 95}, Reservation{Credit: 60}, 1, 100, 65},
		{"over quota already, credit helps", Room{Quota: 100, Usage: 120}, Reservation{Credit: 30}, 10, 10, 10},
		{"part within the declared size", Room{Quota: 100, Usage: 0, Reserved: 80}, Reservation{Upload: true, Declared: 80}, 50, 50, 50},
		{"parts past the declared size", Room{Quota: 100, Usage: 0, Reserved: 90}, Reservation{Upload: true, Declared: 80, Parts: 90}, 10, 10, 10},
		{"parts past the quota", Room{Quota: 100, Usage: 0, Reserved: 90}, Reservation{Upload: true, Declared: 80, Parts: 90}, 11, 11, -1},
		{"part grows as far as fits", Room{Quota: 100, Usage: 0, Reserved: 90}, Reservation{Upload: true, Declared: 80, Parts: 50, Own: 40}, 40, 100, 50},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.room.Grant(c.share, c.min, c.max)
			if c.want < 0 {
				if !errcode.Is(err, errcode.QuotaExceeded) {
					t.Fatalf("Grant = %d, %v; want quota_exceeded", got, err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("Grant = %d, %v; want %d", got, err, c.want)
			}
		})
	}
}

func TestCheckGrowth(t *testing.T) {
	for _, c := range []struct {
		room  Room
		delta int64
		ok    bool
	}{
		{Room{}, 1 << 40, true},
		{Room{Quota: 100, Usage: 50, Reserved: 40}, 10, true},
		{Room{Quota: 100, Usage: 50, Reserved: 40}, 11, false},
		{Room{Quota: 100, Usage: 150, Reserved: 40}, -10, true},
		{Room{Quota: 100, Usage: 150}, 0, true},
	} {
		err := c.room.CheckGrowth(c.delta)
		if got := err == nil; got != c.ok {
			t.Errorf("%+v.CheckGrowth(%d) = %v, want ok %v", c.room, c.delta, err, c.ok)
		}
		if err != nil {
			if e := errcode.As(err); e.Code != errcode.QuotaExceeded || e.Detail["reserved_bytes"] != c.room.Reserved {
				t.Errorf("CheckGrowth error = %+v", e)
			}
		}
	}
}

func TestCheckReleased(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	expires := map[string]time.Time{"live": now.Add(time.Millisecond), "expired": now.Add(-time.Millisecond), "now": now}
	for _, c := range []struct {
		keys []string
		ok   bool
	}{
		{nil, true},
		{[]string{"live"}, true},
		{[]string{"live", "expired"}, false},
		{[]string{"now"}, false},
		{[]string{"gone"}, false},
	} {
		err := CheckReleased(c.keys, expires, now)
		if (err == nil) != c.ok || err != nil && errcode.As(err).Detail["reason"] != "staging_lease_lost" {
			t.Errorf("CheckReleased(%q) = %v, want ok %v", c.keys, err, c.ok)
		}
	}
}

func TestStagingDecisions(t *testing.T) {
	for _, c := range []struct{ size, taken, want int64 }{{10, 0, 10}, {10, 4, 6}, {10, 10, 0}, {10, 12, 0}} {
		if got := Credit(c.size, c.taken); got != c.want {
			t.Errorf("Credit(%d, %d) = %d, want %d", c.size, c.taken, got, c.want)
		}
	}
	if got := Missing([]string{"a", "b", "c"}, map[string]bool{"b": true}); !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("Missing = %q", got)
	}
	exp := time.Now()
	s := DeclaredStaging(Upload{ID: "u1", Size: 42, ExpiresAt: exp}, "alice")
	if s != (Staging{BlobKey: "upload:u1", OwnerID: "alice", UploadID: "u1", Declared: true, Bytes: 42, ExpiresAt: exp}) {
		t.Errorf("DeclaredStaging = %+v", s)
	}
	for _, c := range []struct{ used, block, limit, want int64 }{
		{10, 10, 100, 10}, // a new window
		{100, 10, 100, 10},
		{105, 10, 100, 5}, // the block passed the limit
		{110, 10, 100, 0},
	} {
		if got := Granted(c.used, c.block, c.limit); got != c.want {
			t.Errorf("Granted(%d, %d, %d) = %d, want %d", c.used, c.block, c.limit, got, c.want)
		}
	}
}
