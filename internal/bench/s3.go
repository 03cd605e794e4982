package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coffer-storage/coffer/internal/s3api/sigv4"
)

// s3Endpoint is an S3 service addressed path-style.
type s3Endpoint struct {
	base           string
	bucket         string
	access, secret string
	region         string
	unsigned       bool // UNSIGNED-PAYLOAD instead of the body's SHA-256
}

func (e *s3Endpoint) bucketURL() string { return e.base + "/" + sigv4.URIEncode(e.bucket, false) }

func (e *s3Endpoint) objectURL(key string) string {
	return e.bucketURL() + "/" + sigv4.URIEncode(key, false)
}

// signer signs a request for a body with the given hex SHA-256.
func (e *s3Endpoint) signer(payloadHash string) func(*http.Request) error {
	if e.unsigned {
		payloadHash = sigv4.UnsignedPayload
	}
	return func(r *http.Request) error {
		return sigv4.SignRequest(r, e.access, e.secret, e.region, payloadHash, time.Now())
	}
}

func (e *s3Endpoint) putRequest(name, key string, p *payload) *request {
	return &request{
		name: name, method: http.MethodPut, url: e.objectURL(key),
		body: p.reader, bodyLen: p.size(), expect: http.StatusOK,
		sign: e.signer(p.shaHex()),
	}
}

func (e *s3Endpoint) getRequest(name, key string, hash bool) *request {
	return &request{name: name, method: http.MethodGet, url: e.objectURL(key), expect: http.StatusOK,
		sign: e.signer(sigv4.EmptySHA256), hash: hash}
}

// createBucket makes the bench bucket and reports whether it did (the
// cleanup deletes only a bucket the run created). A bucket we already own
// is fine. Some servers answer BucketAlreadyExists even to the owner, so
// then a HEAD tells whether the bucket is ours.
func (e *s3Endpoint) createBucket(ctx context.Context, d doer) (created bool, err error) {
	_, err = d.do(ctx, &request{name: "create-bucket", method: http.MethodPut, url: e.bucketURL(),
		expect: http.StatusOK, sign: e.signer(sigv4.EmptySHA256)})
	var re *reqError
	if !errors.As(err, &re) || re.status != http.StatusConflict {
		return err == nil, err
	}
	if strings.Contains(re.msg, "BucketAlreadyOwnedByYou") {
		return false, nil
	}
	if _, herr := d.do(ctx, &request{name: "head-bucket", method: http.MethodHead, url: e.bucketURL(),
		expect: http.StatusOK, sign: e.signer(sigv4.EmptySHA256)}); herr != nil {
		return false, fmt.Errorf("bucket %s exists and is not usable with this key (%v); choose another --bucket", e.bucket, herr)
	}
	return false, nil
}

// poolItem is an object the S3 scenarios may read, stat or delete.
type poolItem struct {
	key    string
	size   int64
	sha256 [32]byte
	etag   string
	ledger int // index in the ledger
	idx    int // index in the pool
	refs   int // readers in flight: not deletable while > 0
}

// keyPool is the live objects of a run. Readers lease an object so a
// concurrent delete cannot pull it away mid-read (which would count as a
// false failure).
type keyPool struct {
	mu    sync.Mutex
	items []*poolItem
}

func (p *keyPool) add(it *poolItem) {
	p.mu.Lock()
	it.idx = len(p.items)
	p.items = append(p.items, it)
	p.mu.Unlock()
}

func (p *keyPool) acquire(rng *rand.Rand) *poolItem {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.items) == 0 {
		return nil
	}
	it := p.items[rng.IntN(len(p.items))]
	it.refs++
	return it
}

func (p *keyPool) release(it *poolItem) {
	p.mu.Lock()
	it.refs--
	p.mu.Unlock()
}

// takeForDelete removes and returns a random object nobody is reading,
// or nil.
func (p *keyPool) takeForDelete(rng *rand.Rand) *poolItem {
	p.mu.Lock()
	defer p.mu.Unlock()
	for range 8 {
		if len(p.items) <= 1 {
			return nil
		}
		it := p.items[rng.IntN(len(p.items))]
		if it.refs > 0 {
			continue
		}
		last := p.items[len(p.items)-1]
		p.items[it.idx], last.idx = last, it.idx
		p.items = p.items[:len(p.items)-1]
		return it
	}
	return nil
}

// s3Scenario is s3-put, s3-get or s3-mixed.
type s3Scenario struct {
	t    *target
	kind string
	pool keyPool
}

// s3Setup makes the S3 key (when none was given: on the Coffer at
// --target) and the bucket of an S3 scenario.
func s3Setup(ctx context.Context, t *target) error {
	e := t.s3
	if e.access == "" {
		// No key given: create an account and a key on the Coffer at --target.
		u := &user{email: t.email(0), password: t.password()}
		t.users = []*user{u}
		if err := createAccount(ctx, t.setupDoer(), t.opts.Target, t.opts.AdminToken, u); err != nil {
			return fmt.Errorf("creating a user for an S3 key: %w", err)
		}
		sess := &session{base: t.opts.Target, u: u}
		u.sess = sess
		if err := sess.login(ctx, t.setupDoer()); err != nil {
			return fmt.Errorf("logging in to create an S3 key: %w", err)
		}
		id, secret, err := sess.createKey(ctx, t.setupDoer())
		if err != nil {
			return fmt.Errorf("creating an S3 key: %w", err)
		}
		t.made.key(id, sess)
		e.access, e.secret = id, secret
		t.setupStats.Users, t.setupStats.Sessions = 1, 1
	}
	created, err := e.createBucket(ctx, t.setupDoer())
	if created && t.opts.Bucket == "" {
		// Only the run's own coffer-bench-<run id> is deleted at the end:
		// a --bucket may be one the user had (AWS answers 200 to its owner
		// re-creating a bucket in us-east-1).
		t.made.createdBucket()
	}
	if err != nil {
		return fmt.Errorf("creating bucket %s on %s: %w", e.bucket, e.base, err)
	}
	return nil
}

func (s *s3Scenario) setup(ctx context.Context) error {
	t := s.t
	if err := s3Setup(ctx, t); err != nil {
		return err
	}
	if s.kind == "s3-put" {
		return nil
	}
	src := t.payloads(t.opts.Size)
	t.logf("setup: putting %d objects of %d bytes", t.opts.Objects, t.opts.Size)
	return parallel(ctx, t.opts.Objects, t.opts.SetupConcurrency, func(ctx context.Context, i int) error {
		p := src.make(t.runNum, -1, uint64(i))
		key := t.objectKey("seed", 0, uint64(i))
		if _, err := t.setupDoer().do(ctx, t.s3.putRequest("seed-put", key, p)); err != nil {
			return fmt.Errorf("preparing object %d: %w", i, err)
		}
		s.pool.add(&poolItem{key: key, size: p.size(), sha256: p.sha256, etag: p.etag(),
			ledger: t.ledger.add(ledgerEntry{key: key, size: p.size(), sha256: p.sha256})})
		t.setupObjects.Add(1)
		return nil
	})
}

func (s *s3Scenario) iterate(ctx context.Context, v *vu) error {
	switch s.kind {
	case "s3-put":
		return s.put(ctx, v)
	case "s3-get":
		return s.get(ctx, v)
	}
	// s3-mixed: 45% GET, 30% PUT, 15% DELETE, 10% STAT.
	switch n := v.rng.IntN(100); {
	case n < 45:
		return s.get(ctx, v)
	case n < 75:
		return s.put(ctx, v)
	case n < 90:
		return s.delete(ctx, v)
	default:
		return s.stat(ctx, v)
	}
}

func (s *s3Scenario) put(ctx context.Context, v *vu) error {
	t := s.t
	seq := v.next()
	p := t.payloads(t.opts.Size).make(t.runNum, v.id, seq)
	key := t.objectKey("put", v.id, seq)
	resp, err := v.call.do(ctx, t.s3.putRequest("put", key, p))
	if err != nil {
		return err
	}
	// A single-part PUT's ETag is the MD5 of the body on every S3.
	if err := v.call.verify(resp.header.Get("ETag") == p.etag(), "put", "put ETag is the MD5",
		"ETag %s, want %s", resp.header.Get("ETag"), p.etag()); err != nil {
		return err
	}
	it := &poolItem{key: key, size: p.size(), sha256: p.sha256, etag: p.etag(),
		ledger: t.ledger.add(ledgerEntry{key: key, size: p.size(), sha256: p.sha256})}
	if s.kind == "s3-mixed" {
		s.pool.add(it)
	}
	return nil
}

func (s *s3Scenario) get(ctx context.Context, v *vu) error {
	it := s.pool.acquire(v.rng)
	if it == nil {
		return s.put(ctx, v)
	}
	defer s.pool.release(it)
	resp, err := v.call.do(ctx, s.t.s3.getRequest("get", it.key, s.t.opts.VerifyReads))
	if err != nil {
		return err
	}
	if err := v.call.verify(resp.n == it.size, "get", "get size matches", "%s: %d bytes, want %d", it.key, resp.n, it.size); err != nil {
		return err
	}
	if err := v.call.verify(resp.header.Get("ETag") == it.etag, "get", "get ETag matches",
		"%s: ETag %s, want %s", it.key, resp.header.Get("ETag"), it.etag); err != nil {
		return err
	}
	if s.t.opts.VerifyReads {
		return v.call.verify(resp.sum == it.sha256, "get", "get sha256 matches", "%s: content differs", it.key)
	}
	return nil
}

func (s *s3Scenario) stat(ctx context.Context, v *vu) error {
	it := s.pool.acquire(v.rng)
	if it == nil {
		return s.put(ctx, v)
	}
	defer s.pool.release(it)
	e := s.t.s3
	resp, err := v.call.do(ctx, &request{name: "stat", method: http.MethodHead, url: e.objectURL(it.key),
		expect: http.StatusOK, sign: e.signer(sigv4.EmptySHA256)})
	if err != nil {
		return err
	}
	cl, _ := strconv.ParseInt(resp.header.Get("Content-Length"), 10, 64)
	return v.call.verify(cl == it.size && resp.header.Get("ETag") == it.etag, "stat", "stat size and ETag match",
		"%s: Content-Length %d ETag %s, want %d %s", it.key, cl, resp.header.Get("ETag"), it.size, it.etag)
}

func (s *s3Scenario) delete(ctx context.Context, v *vu) error {
	it := s.pool.takeForDelete(v.rng)
	if it == nil {
		return s.put(ctx, v)
	}
	e := s.t.s3
	_, err := v.call.do(ctx, &request{name: "delete", method: http.MethodDelete, url: e.objectURL(it.key),
		expect: http.StatusNoContent, sign: e.signer(sigv4.EmptySHA256)})
	if err != nil {
		// Unknown whether it is gone: keep it out of the pool and the audit.
		s.t.ledger.markDeleted(it.ledger)
		return err
	}
	s.t.ledger.markDeleted(it.ledger)
	return nil
}

// fetch reads an acknowledged object back for the audit.
func (s *s3Scenario) fetch(_ context.Context, e *ledgerEntry) (*request, error) {
	return s.t.s3.getRequest("audit-get", e.key, true), nil
}
