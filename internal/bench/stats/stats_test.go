package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// exactQuantile is the nearest-rank quantile of sorted values.
func exactQuantile(sorted []int64, q float64) int64 {
	rank := int(math.Ceil(q * float64(len(sorted))))
	rank = max(rank, 1)
	return sorted[rank-1]
}

func TestQuantilesAgainstKnownDistributions(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	dists := map[string]func() int64{
		// exponential with a mean of 20 ms, in nanoseconds
		"exponential": func() int64 { return int64(rng.ExpFloat64() * 20e6) },
		// log-normal around 5 ms with a heavy tail
		"lognormal": func() int64 { return int64(math.Exp(rng.NormFloat64()*1.2) * 5e6) },
		// uniform over 0..100 µs: mostly exact small buckets
		"uniform-small": func() int64 { return rng.Int64N(100_000) },
	}
	for name, draw := range dists {
		t.Run(name, func(t *testing.T) {
			var h Histogram
			vals := make([]int64, 200_000)
			for i := range vals {
				vals[i] = draw()
				h.Record(vals[i])
			}
			slices.Sort(vals)
			for _, q := range []float64{0.01, 0.25, 0.5, 0.9, 0.95, 0.99, 0.999} {
				got, want := h.Quantile(q), exactQuantile(vals, q)
				if rel := math.Abs(float64(got-want)) / float64(max(want, 1)); rel > 0.01 {
					t.Errorf("q%.3f = %d, want %d (error %.2f%%)", q, got, want, rel*100)
				}
			}
			if got, want := h.Min(), vals[0]; got != want {
				t.Errorf("min = %d, want %d", got, want)
			}
			if got, want := h.Max(), vals[len(vals)-1]; got != want {
				t.Errorf("max = %d, want %d", got, want)
			}
			if got, want := h.Count(), uint64(len(vals)); got != want {
				t.Errorf("count = %d, want %d", got, want)
			}
		})
	}
}

func TestQuantileOfExponentialMatchesTheory(t *testing.T) {
	// For Exp(mean m), the q-quantile is -m*ln(1-q). With 10^6 samples the
	// sampling error at p99 is about 1%; allow 3%.
	rng := rand.New(rand.NewPCG(7, 7))
	const mean = 10e6
	var h Histogram
	for range 1_000_000 {
		h.Record(int64(rng.ExpFloat64() * mean))
	}
	for _, q := range []float64{0.5, 0.9, 0.95, 0.99} {
		want := -mean * math.Log(1-q)
		got := float64(h.Quantile(q))
		if rel := math.Abs(got-want) / want; rel > 0.03 {
			t.Errorf("q%.2f = %.0f, want %.0f (error %.2f%%)", q, got, want, rel*100)
		}
	}
	if got, want := h.Mean(), mean; math.Abs(got-want)/want > 0.01 {
		t.Errorf("mean = %.0f, want about %.0f", got, want)
	}
}

func TestUniformPercentiles(t *testing.T) {
	// 1..100000 µs once each: p50 is 50 ms, p99 is 99 ms.
	var h Histogram
	for i := int64(1); i <= 100_000; i++ {
		h.RecordDuration(time.Duration(i) * time.Microsecond)
	}
	s := h.SummarizeMillis()
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"p50", s.P50, 50}, {"p90", s.P90, 90}, {"p95", s.P95, 95}, {"p99", s.P99, 99},
		{"min", s.Min, 0.001}, {"max", s.Max, 100}, {"avg", s.Avg, 50.0005},
	} {
		if math.Abs(c.got-c.want)/c.want > 0.005 {
			t.Errorf("%s = %v ms, want %v ms", c.name, c.got, c.want)
		}
	}
}

func TestBucketsCoverEveryValue(t *testing.T) {
	// Every value must fall inside the bounds of its bucket, and bucket
	// widths must stay under 1/128 of the value.
	vals := []int64{0, 1, 255, 256, 257, 511, 512, 1000, 123456789, 1 << 40, math.MaxInt64}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 10000 {
		vals = append(vals, rng.Int64()>>rng.IntN(63))
	}
	for _, v := range vals {
		i := index(v)
		if i < 0 || i >= numBuckets {
			t.Fatalf("index(%d) = %d, out of range", v, i)
		}
		low, w := bounds(i)
		if v < low || v-low >= w {
			t.Fatalf("value %d outside bucket %d [%d, %d+%d)", v, i, low, low, w)
		}
		if v >= linear && float64(w)/float64(v) > 1.0/128 {
			t.Fatalf("bucket of %d is %d wide", v, w)
		}
	}
}

func TestMergeAndReset(t *testing.T) {
	var a, b, all Histogram
	for i := range int64(1000) {
		v := i * i * 1000
		all.Record(v)
		if i%2 == 0 {
			a.Record(v)
		} else {
			b.Record(v)
		}
	}
	a.Merge(&b)
	for _, q := range []float64{0, 0.5, 0.99, 1} {
		if got, want := a.Quantile(q), all.Quantile(q); got != want {
			t.Errorf("merged q%v = %d, want %d", q, got, want)
		}
	}
	if got, want := a.Count(), all.Count(); got != want {
		t.Errorf("count = %d, want %d", got, want)
	}
	a.Reset()
	if a.Count() != 0 || a.Quantile(0.5) != 0 || a.Max() != 0 {
		t.Errorf("reset histogram not empty: %d values", a.Count())
	}
	var empty Histogram
	empty.Merge(&all)
	if got, want := empty.Min(), all.Min(); got != want {
		t.Errorf("min after merging into empty = %d, want %d", got, want)
	}
}
