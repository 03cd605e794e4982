package ratelimit

import (
	"net/http"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
)

func TestQuotas(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	q := NewQuotas(map[Dimension]DimQuotas{
		DimUser: {Requests: Quota{N: 2, Window: time.Minute}, Bytes: Quota{N: 100, Window: time.Minute}},
		DimAddr: {},
	})
	q.now = func() time.Time { return now }
	q.Override = func(d Dimension, key string) (DimQuotas, bool) {
		if key == "vip" {
			return DimQuotas{Requests: Quota{N: 5, Window: time.Minute}}, true
		}
		return DimQuotas{}, false
	}
	steps := []struct {
		name      string
		dim       Dimension
		key       string
		bytes     int64
		advance   time.Duration
		wantErr   bool
		remaining int64
	}{
		{"first", DimUser, "u1", 0, 0, false, 1},
		{"second", DimUser, "u1", 0, 0, false, 0},
		{"third refused", DimUser, "u1", 0, 0, true, 0},
		{"another user", DimUser, "u2", 0, 0, false, 1},
		{"refilled after half a window", DimUser, "u1", 0, 30 * time.Second, false, 0},
		{"bytes over the bucket", DimUser, "u3", 150, 0, false, 1},
		{"bytes drained", DimUser, "u3", 10, 0, true, 1},
		{"override", DimUser, "vip", 0, 0, false, 4},
		{"unlimited dimension", DimAddr, "1.2.3.4", 1 << 30, 0, false, 0},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			now = now.Add(st.advance)
			d := q.Take(st.dim, st.key, st.bytes)
			if (d.Err != nil) != st.wantErr {
				t.Fatalf("err = %v, want error %v", d.Err, st.wantErr)
			}
			if d.Err != nil {
				e := errcode.As(d.Err)
				if e == nil || e.Code != errcode.RateLimited || e.RetryAfter <= 0 {
					t.Errorf("refusal %v: want RateLimited with RetryAfter", d.Err)
				}
			}
			if got := d.Remaining; got != st.remaining {
				t.Errorf("remaining %d, want %d", got, st.remaining)
			}
		})
	}
}

func TestDecisionHeaders(t *testing.T) {
	h := http.Header{}
	Decision{Limited: true, Quota: Quota{N: 100, Window: time.Minute}, Remaining: 42, Reset: 1500 * time.Millisecond}.SetHeaders(h)
	if got, want := h.Get("RateLimit-Policy"), `"requests";q=100;w=60`; got != want {
		t.Errorf("RateLimit-Policy %q, want %q", got, want)
	}
	if got, want := h.Get("RateLimit"), `"requests";r=42;t=2`; got != want {
		t.Errorf("RateLimit %q, want %q", got, want)
	}
	h = http.Header{}
	Decision{}.SetHeaders(h)
	if len(h) != 0 {
		t.Errorf("unlimited decision wrote %v", h)
	}
}
