package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// Quotas: token buckets per identity
//
// Besides admission (how many requests run at once), Quotas bounds how
// much one identity may ask for over time: requests, and request body
// bytes, per Window, as token buckets (golang.org/x/time/rate) of N tokens
// refilled at N per Window. An identity is a Dimension and a key: an
// authenticated user, an S3 access key, a share link, or the client
// address of an anonymous request. Each response carries the IETF
// RateLimit-Policy and RateLimit fields (draft-ietf-httpapi-ratelimit-
// headers-10) of the requests bucket; a refusal is RateLimited with
// RetryAfter (429 on the file API, SlowDown on S3).
//
// The buckets are this node's. With Cluster set (several nodes on one
// PostgreSQL), each identity's requests are also counted cluster-wide in
// fixed windows of the quota's Window: a node reserves blocks of tokens
// (a twentieth of the quota) from the store and spends them locally, so
// the cluster admits about N per window whatever the number of nodes (up
// to one block per node less: a node's unspent block lapses with the
// window). If the store cannot be reached, requests are let through (the
// local bucket still applies).

// Dimension names what a key identifies.
type Dimension string

// Dimensions.
const (
	DimUser  Dimension = "user"  // an authenticated file-API user
	DimKey   Dimension = "key"   // an S3 access key
	DimShare Dimension = "share" // a share link
	DimAddr  Dimension = "addr"  // the client address of an anonymous request
)

// Quota is N tokens per Window; N == 0 means unlimited.
type Quota struct {
	N      int64
	Window time.Duration
}

// Off reports whether q limits nothing.
func (q Quota) Off() bool { return q.N <= 0 || q.Window <= 0 }

// DimQuotas are the quotas of one dimension: requests, and body bytes.
type DimQuotas struct {
	Requests, Bytes Quota
}

// Quotas holds the buckets. Safe for concurrent use.
type Quotas struct {
	defaults map[Dimension]DimQuotas
	// Override, if set, returns the quotas of one identity (an
	// administrator's per-user override), or ok false for the defaults.
	Override func(d Dimension, key string) (DimQuotas, bool)
	now      func() time.Time

	// Cluster, if set, makes the requests quotas cluster-wide.
	Cluster Cluster

	mu      sync.Mutex
	buckets map[bucketKey]*bucket
	takes   int
	leases  map[bucketKey]*lease
}

// Cluster hands out blocks of a cluster-wide limit (meta.Limits).
type Cluster interface {
	ReserveRate(ctx context.Context, dim, key string, windowStart, block, limit int64) (int64, error)
}

// lease is this node's share of one identity's cluster-wide window.
type lease struct {
	mu       sync.Mutex
	window   int64 // start, Unix ms
	left     int64 // tokens reserved and not spent
	spent    bool  // the window's limit is spent cluster-wide
	lastUsed time.Time
}

type bucketKey struct {
	dim   Dimension
	key   string
	bytes bool
}

type bucket struct {
	q    Quota
	lim  *rate.Limiter
	seen time.Time
}

// NewQuotas returns the buckets with the default quotas of each dimension.
func NewQuotas(defaults map[Dimension]DimQuotas) *Quotas {
	return &Quotas{defaults: defaults, now: time.Now, buckets: map[bucketKey]*bucket{}, leases: map[bucketKey]*lease{}}
}

// Decision is the outcome of Take.
type Decision struct {
	Limited   bool // some quota applies
	Quota     Quota
	Remaining int64
	Reset     time.Duration // until the bucket is full again
	// Err is RateLimited with RetryAfter when the request is refused.
	Err error
}

// Take charges one request and n body bytes (n <= 0: unknown or none) to
// (d, key).
func (q *Quotas) Take(d Dimension, key string, n int64) Decision {
	dq, ok := q.defaults[d]
	if q.Override != nil {
		if o, ook := q.Override(d, key); ook {
			dq, ok = o, true
		}
	}
	if !ok || dq.Requests.Off() && dq.Bytes.Off() {
		return Decision{}
	}
	now := q.now()
	q.mu.Lock()
	defer q.mu.Unlock()
	q.sweep(now)
	var out Decision
	var reqRes *rate.Reservation
	var reqB *bucket
	if !dq.Requests.Off() {
		b := q.get(bucketKey{d, key, false}, dq.Requests, now)
		reqB = b
		reqRes = b.lim.ReserveN(now, 1)
		if delay := reqRes.DelayFrom(now); delay > 0 {
			reqRes.CancelAt(now)
			out = state(b, now)
			out.Err = refused(d, "requests", delay)
			return out
		}
		out = state(b, now)
	}
	if !dq.Bytes.Off() && n > 0 {
		b := q.get(bucketKey{d, key, true}, dq.Bytes, now)
		take := min(n, dq.Bytes.N) // a body larger than the burst drains it
		r := b.lim.ReserveN(now, int(take))
		if delay := r.DelayFrom(now); delay > 0 {
			r.CancelAt(now)
			if reqRes != nil {
				reqRes.CancelAt(now) // the refused request costs nothing
				out = state(reqB, now)
			}
			out.Err = refused(d, "bytes", delay)
			return out
		}
	}
	if q.Cluster != nil && !dq.Requests.Off() {
		l := q.leaseOf(bucketKey{d, key, false}, now)
		q.mu.Unlock()
		retry, err := q.clusterTake(l, d, key, dq.Requests, now)
		q.mu.Lock()
		if err != nil {
			if reqRes != nil {
				reqRes.CancelAt(now)
			}
			out.Err = refused(d, "requests", retry)
			out.Remaining = 0
		}
	}
	return out
}

func (q *Quotas) leaseOf(k bucketKey, now time.Time) *lease {
	l := q.leases[k]
	if l == nil {
		l = &lease{}
		q.leases[k] = l
	}
	l.lastUsed = now
	return l
}

// clusterTake spends one token of l, reserving a block from the cluster
// when l has none; it returns RateLimited's wait when the window's limit
// is spent.
func (q *Quotas) clusterTake(l *lease, d Dimension, key string, qu Quota, now time.Time) (time.Duration, error) {
	w := qu.Window.Milliseconds()
	start := now.UnixMilli() / w * w
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.window != start {
		l.window, l.left, l.spent = start, 0, false
	}
	if l.left == 0 && !l.spent {
		block := max(1, qu.N/20)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		got, err := q.Cluster.ReserveRate(ctx, string(d), key, start, block, qu.N)
		cancel()
		if err != nil {
			return 0, nil // fail open: the local bucket still applies
		}
		l.left, l.spent = got, got == 0
	}
	if l.left == 0 {
		return time.Duration(start+w-now.UnixMilli()) * time.Millisecond, errSpent
	}
	l.left--
	return 0, nil
}

var errSpent = errors.New("cluster-wide limit spent")

func refused(d Dimension, what string, delay time.Duration) error {
	return &errcode.Error{Code: errcode.RateLimited, RetryAfter: delay,
		Message: fmt.Sprintf("%s rate limit of this %s reached; retry after %s", what, d, delay.Round(time.Second)),
		Detail:  map[string]any{"reason": "rate_limited", "dimension": string(d), "limit": what}}
}

func (q *Quotas) get(k bucketKey, qu Quota, now time.Time) *bucket {
	b := q.buckets[k]
	if b == nil || b.q != qu {
		per := rate.Limit(float64(qu.N) / qu.Window.Seconds())
		b = &bucket{q: qu, lim: rate.NewLimiter(per, int(min(qu.N, math.MaxInt32)))}
		q.buckets[k] = b
	}
	b.seen = now
	return b
}

// sweep forgets, every 4096 takes, buckets unused for a window (they are
// full again: forgetting them changes nothing).
func (q *Quotas) sweep(now time.Time) {
	q.takes++
	if q.takes%4096 != 0 {
		return
	}
	for k, b := range q.buckets {
		if now.Sub(b.seen) > b.q.Window {
			delete(q.buckets, k)
		}
	}
	for k, l := range q.leases {
		if now.Sub(l.lastUsed) > 24*time.Hour {
			delete(q.leases, k)
		}
	}
}

func state(b *bucket, now time.Time) Decision {
	tokens := b.lim.TokensAt(now)
	d := Decision{Limited: true, Quota: b.q, Remaining: int64(max(0, math.Floor(tokens)))}
	missing := float64(b.q.N) - tokens
	if missing > 0 {
		d.Reset = time.Duration(missing / float64(b.lim.Limit()) * float64(time.Second))
	}
	return d
}

// SetHeaders writes the RateLimit-Policy and RateLimit fields of d
// (nothing when no quota applies).
func (d Decision) SetHeaders(h http.Header) {
	if !d.Limited {
		return
	}
	w := int64(math.Ceil(d.Quota.Window.Seconds()))
	h.Set("RateLimit-Policy", `"requests";q=`+strconv.FormatInt(d.Quota.N, 10)+";w="+strconv.FormatInt(w, 10))
	h.Set("RateLimit", `"requests";r=`+strconv.FormatInt(d.Remaining, 10)+";t="+strconv.FormatInt(int64(math.Ceil(d.Reset.Seconds())), 10))
}
