package metasql

import (
	"testing"

	"github.com/coffer-storage/coffer/internal/errcode"
)

func TestGrant(t *testing.T) {
	for _, c := range []struct {
		name     string
		room     Room
		share    Share
		min, max int64
		want     int64 // -1: QuotaExceeded
	}{
		{"unlimited", Room{Usage: 1 << 40}, Share{}, 5, 10, 10},
		{"all fits", Room{Quota: 100, Usage: 10, Reserved: 20}, Share{}, 5, 70, 70},
		{"partly fits", Room{Quota: 100, Usage: 10, Reserved: 20}, Share{}, 5, 80, 70},
		{"min does not fit", Room{Quota: 100, Usage: 10, Reserved: 20}, Share{}, 71, 80, -1},
		{"never shrinks", Room{Quota: 100, Usage: 10, Reserved: 50}, Share{Own: 50}, 1, 1, 50},
		{"grows within its own share", Room{Quota: 100, Usage: 10, Reserved: 50}, Share{Own: 50}, 60, 200, 90},
		{"credit covers all", Room{Quota: 100, Usage: 100}, Share{Credit: 60}, 60, 60, 60},
		{"credit covers part", Room{Quota: 100, Usage: 95}, Share{Credit: 60}, 1, 100, 65},
		{"over quota already, credit helps", Room{Quota: 100, Usage: 120}, Share{Credit: 30}, 10, 10, 10},
		{"part within the declared size", Room{Quota: 100, Usage: 0, Reserved: 80}, Share{Upload: true, Declared: 80}, 50, 50, 50},
		{"parts past the declared size", Room{Quota: 100, Usage: 0, Reserved: 90}, Share{Upload: true, Declared: 80, Parts: 90}, 10, 10, 10},
		{"parts past the quota", Room{Quota: 100, Usage: 0, Reserved: 90}, Share{Upload: true, Declared: 80, Parts: 90}, 11, 11, -1},
		{"part grows as far as fits", Room{Quota: 100, Usage: 0, Reserved: 90}, Share{Upload: true, Declared: 80, Parts: 50, Own: 40}, 40, 100, 50},
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
