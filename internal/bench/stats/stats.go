// Package stats holds the load tester's latency histogram: a log-bucketed,
// HDR-style histogram of int64 values (nanoseconds, in practice) with a
// bounded relative error, constant memory and cheap merging.
//
// # Precision
//
// Values below 256 are counted exactly. Above, each power of two is split
// into 128 equal buckets, so a bucket spans at most 1/128 of its lower
// bound and a quantile, reported as the middle of its bucket, is within
// 0.4% of the exact nearest-rank sample quantile. Min, max, count and sum
// are exact.
package stats

import (
	"math"
	"math/bits"
	"time"
)

const (
	subBits    = 7
	subBuckets = 1 << subBits     // buckets per power of two
	linear     = 2 * subBuckets   // values below this are exact
	maxShift   = 63 - subBits - 1 // largest shift of a positive int64
	numBuckets = linear + maxShift*subBuckets
)

// Histogram counts non-negative int64 values. The zero value is empty and
// ready to use. It is not safe for concurrent use.
type Histogram struct {
	counts   []uint64
	n        uint64
	sum      float64
	min, max int64
}

// index is the bucket of v (v >= 0).
func index(v int64) int {
	if v < linear {
		return int(v)
	}
	shift := bits.Len64(uint64(v)) - subBits - 1 // >= 1
	m := int(v >> shift)                         // in [128, 256)
	return linear + (shift-1)*subBuckets + m - subBuckets
}

// bounds returns the lowest value of bucket i and its width.
func bounds(i int) (low, width int64) {
	if i < linear {
		return int64(i), 1
	}
	i -= linear
	shift := i/subBuckets + 1
	m := int64(i%subBuckets + subBuckets)
	return m << shift, 1 << shift
}

// Record adds v; negative values count as 0.
func (h *Histogram) Record(v int64) {
	if v < 0 {
		v = 0
	}
	if h.counts == nil {
		h.counts = make([]uint64, numBuckets)
	}
	h.counts[index(v)]++
	if h.n == 0 || v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
	h.n++
	h.sum += float64(v)
}

// RecordDuration adds d in nanoseconds.
func (h *Histogram) RecordDuration(d time.Duration) { h.Record(int64(d)) }

// Merge adds every value of o to h.
func (h *Histogram) Merge(o *Histogram) {
	if o == nil || o.n == 0 {
		return
	}
	if h.counts == nil {
		h.counts = make([]uint64, numBuckets)
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	if o.max > h.max {
		h.max = o.max
	}
	h.n += o.n
	h.sum += o.sum
}

// Reset empties h, keeping its memory.
func (h *Histogram) Reset() {
	clear(h.counts)
	h.n, h.sum, h.min, h.max = 0, 0, 0, 0
}

// Count is the number of values recorded.
func (h *Histogram) Count() uint64 { return h.n }

// Min is the smallest value recorded (0 if none).
func (h *Histogram) Min() int64 { return h.min }

// Max is the largest value recorded (0 if none).
func (h *Histogram) Max() int64 { return h.max }

// Mean is the average of the values recorded (0 if none).
func (h *Histogram) Mean() float64 {
	if h.n == 0 {
		return 0
	}
	return h.sum / float64(h.n)
}

// Quantile returns the nearest-rank q-quantile (q in [0, 1]): the value
// at rank ceil(q*n) of the sorted values, within the histogram's
// precision. Quantile(0) is the minimum and Quantile(1) the maximum.
func (h *Histogram) Quantile(q float64) int64 {
	if h.n == 0 {
		return 0
	}
	if q <= 0 {
		return h.min
	}
	if q >= 1 {
		return h.max
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	if rank < 1 {
		rank = 1
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			low, w := bounds(i)
			v := low + (w-1)/2
			return min(max(v, h.min), h.max)
		}
	}
	return h.max
}

// Summary is a histogram of durations summarised in milliseconds.
type Summary struct {
	Count uint64  `json:"count"`
	Min   float64 `json:"min"`
	Avg   float64 `json:"avg"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
}

// SummarizeMillis summarises a histogram of nanoseconds in milliseconds.
func (h *Histogram) SummarizeMillis() Summary {
	ms := func(v float64) float64 { return v / 1e6 }
	return Summary{
		Count: h.n,
		Min:   ms(float64(h.Min())),
		Avg:   ms(h.Mean()),
		P50:   ms(float64(h.Quantile(0.50))),
		P90:   ms(float64(h.Quantile(0.90))),
		P95:   ms(float64(h.Quantile(0.95))),
		P99:   ms(float64(h.Quantile(0.99))),
		Max:   ms(float64(h.Max())),
	}
}
