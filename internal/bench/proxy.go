package bench

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/coffer-storage/coffer/internal/s3api/sigv4"
)

// The read-proxy scenarios reproduce a published report of a read proxy in
// front of object storage (JWT-protected GETs with a memory/disk cache):
// small GETs at 10 VUs and ramped to 100, 10 MiB streaming with the time to
// first byte, and a mixed soak with the server's memory sampled. They are
// S3 scenarios, so they run against any bucket of any S3 endpoint (a
// Coffer bucket, a gateway bucket, MinIO): the setup PUTs the objects they
// read (under bench-<run id>/, deleted at the end).
const (
	proxyMedium = 1 << 20
	proxyLarge  = 10 << 20
)

// proxyScenario is proxy-get, proxy-stream or proxy-soak.
type proxyScenario struct {
	t     *target
	kind  string
	small keyPool // --size objects (proxy-get: 1 KiB; proxy-stream: 10 MiB)
	// proxy-soak only: 1 MiB and 10 MiB objects.
	medium, large keyPool
}

// proxyCounts is how many objects of each class the setup puts:
// --objects of --size; the soak adds a fifth as many 1 MiB and a
// twentieth as many 10 MiB ones (at least one each).
func proxyCounts(o Options) (small, medium, large int) {
	if o.Scenario != "proxy-soak" {
		return o.Objects, 0, 0
	}
	return o.Objects, max(1, o.Objects/5), max(1, o.Objects/20)
}

func (s *proxyScenario) setup(ctx context.Context) error {
	t := s.t
	if err := s3Setup(ctx, t); err != nil {
		return err
	}
	small, medium, large := proxyCounts(t.opts)
	classes := []struct {
		name string
		n    int
		size int64
		pool *keyPool
	}{
		{"small", small, t.opts.Size, &s.small},
		{"medium", medium, proxyMedium, &s.medium},
		{"large", large, proxyLarge, &s.large},
	}
	for ci, c := range classes {
		if c.n == 0 {
			continue
		}
		src := t.payloads(c.size)
		t.logf("setup: putting %d objects of %d bytes", c.n, c.size)
		err := parallel(ctx, c.n, t.opts.SetupConcurrency, func(ctx context.Context, i int) error {
			p := src.make(t.runNum, -1-ci, uint64(i))
			key := t.objectKey("seed-"+c.name, 0, uint64(i))
			if _, err := t.setupDoer().do(ctx, t.s3.putRequest("seed-put", key, p)); err != nil {
				return fmt.Errorf("preparing object %d: %w", i, err)
			}
			c.pool.add(&poolItem{key: key, size: p.size(), sha256: p.sha256, etag: p.etag(),
				ledger: t.ledger.add(ledgerEntry{key: key, size: p.size(), sha256: p.sha256})})
			t.setupObjects.Add(1)
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func (s *proxyScenario) iterate(ctx context.Context, v *vu) error {
	switch s.kind {
	case "proxy-get":
		return s.get(ctx, v, &s.small, "get", "")
	case "proxy-stream":
		return s.get(ctx, v, &s.small, "get", "get ttfb")
	}
	// proxy-soak: 50% small, 20% medium, 20% large GETs, 10% HEAD.
	switch n := v.rng.IntN(100); {
	case n < 50:
		return s.get(ctx, v, &s.small, "get small", "")
	case n < 70:
		return s.get(ctx, v, &s.medium, "get medium", "")
	case n < 90:
		return s.get(ctx, v, &s.large, "get large", "get large ttfb")
	default:
		return s.head(ctx, v, &s.small)
	}
}

func (s *proxyScenario) get(ctx context.Context, v *vu, pool *keyPool, name, ttfb string) error {
	it := pool.acquire(v.rng)
	if it == nil {
		return fmt.Errorf("no prepared object")
	}
	defer pool.release(it)
	rq := s.t.s3.getRequest(name, it.key, s.t.opts.VerifyReads)
	rq.ttfb = ttfb
	resp, err := v.call.do(ctx, rq)
	if err != nil {
		return err
	}
	if err := v.call.verify(resp.n == it.size && resp.header.Get("ETag") == it.etag, name, name+" size and ETag match",
		"%s: %d bytes, ETag %s; want %d, %s", it.key, resp.n, resp.header.Get("ETag"), it.size, it.etag); err != nil {
		return err
	}
	if s.t.opts.VerifyReads {
		return v.call.verify(resp.sum == it.sha256, name, name+" sha256 matches", "%s: content differs", it.key)
	}
	return nil
}

func (s *proxyScenario) head(ctx context.Context, v *vu, pool *keyPool) error {
	it := pool.acquire(v.rng)
	if it == nil {
		return fmt.Errorf("no prepared object")
	}
	defer pool.release(it)
	e := s.t.s3
	resp, err := v.call.do(ctx, &request{name: "head", method: http.MethodHead, url: e.objectURL(it.key),
		expect: http.StatusOK, sign: e.signer(sigv4.EmptySHA256)})
	if err != nil {
		return err
	}
	cl, _ := strconv.ParseInt(resp.header.Get("Content-Length"), 10, 64)
	return v.call.verify(cl == it.size && resp.header.Get("ETag") == it.etag, "head", "head size and ETag match",
		"%s: Content-Length %d ETag %s, want %d %s", it.key, cl, resp.header.Get("ETag"), it.size, it.etag)
}

// fetch reads a prepared object back for the audit.
func (s *proxyScenario) fetch(_ context.Context, e *ledgerEntry) (*request, error) {
	return s.t.s3.getRequest("audit-get", e.key, true), nil
}
