package metrics

import (
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestObserve: every request is counted under its API, route and status,
// with its bytes, whether its children were looked up before or not, and
// past the bound of remembered keys; a known key costs no allocation.
func TestObserve(t *testing.T) {
	m := New()
	for range 3 {
		m.Observe("s3", "GetObject", 200, time.Millisecond, 0, 1024)
	}
	m.Observe("s3", "GetObject", 404, time.Millisecond, 0, 300)
	m.Observe("s3", "", 200, time.Millisecond, 10, 0)
	for i := range maxObserved + 10 {
		m.Observe("file", "route"+strconv.Itoa(i), 200, time.Millisecond, 1, 1)
		m.Observe("file", "route"+strconv.Itoa(i), 200, time.Millisecond, 1, 1)
	}
	for _, c := range []struct {
		route, code string
		want        float64
	}{{"GetObject", "200", 3}, {"GetObject", "404", 1}, {"unmatched", "200", 1}} {
		if got := testutil.ToFloat64(m.requests.WithLabelValues("s3", c.route, c.code)); got != c.want {
			t.Errorf("s3 %s %s: %v requests, want %v", c.route, c.code, got, c.want)
		}
	}
	if got := testutil.ToFloat64(m.requests.WithLabelValues("file", "route"+strconv.Itoa(maxObserved+5), "200")); got != 2 {
		t.Errorf("a route past the bound: %v requests, want 2", got)
	}
	if got := testutil.ToFloat64(m.bytesOut.WithLabelValues("s3")); got != 3*1024+300 {
		t.Errorf("s3 bytes out %v", got)
	}
	if got := testutil.ToFloat64(m.bytesIn.WithLabelValues("file")); got != 2*(maxObserved+10) {
		t.Errorf("file bytes in %v", got)
	}
	if got := testutil.CollectAndCount(m.duration); got != 2+maxObserved+10 { // by API and route
		t.Errorf("%d duration series", got)
	}
	if n := m.observed.Len(); n > maxObserved {
		t.Errorf("%d keys remembered, bound %d", n, maxObserved)
	}
	m.Observe("s3", "HeadObject", 200, time.Millisecond, 0, 0) // bound reached: looked up each time
	if n := testing.AllocsPerRun(100, func() { m.Observe("s3", "GetObject", 200, time.Millisecond, 0, 1024) }); n != 0 {
		t.Errorf("Observe of a known route: %.0f allocations", n)
	}
}

// BenchmarkObserve is what every request pays for its metrics.
func BenchmarkObserve(b *testing.B) {
	m := New()
	b.ReportAllocs()
	for b.Loop() {
		m.Observe("s3", "GetObject", 200, time.Millisecond, 0, 1024)
	}
}

// BenchmarkObserveLookup is Observe as it was before its children were
// remembered: every vector looked up by its label values on each request.
func BenchmarkObserveLookup(b *testing.B) {
	m := New()
	b.ReportAllocs()
	for b.Loop() {
		m.requests.WithLabelValues("s3", "GetObject", strconv.Itoa(200)).Inc()
		m.duration.WithLabelValues("s3", "GetObject").Observe(time.Millisecond.Seconds())
		m.bytesOut.WithLabelValues("s3").Add(1024)
	}
}
