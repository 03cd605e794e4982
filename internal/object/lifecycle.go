package object

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/coffer-storage/coffer/internal/audit"
	"math"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/coffer-storage/coffer/internal/config"
	"github.com/coffer-storage/coffer/internal/detach"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// Lifecycle (S3 lifecycle rules; docs/lifecycle.md)
//
// A bucket's rules are a meta.Lifecycle in its record, set by its owner
// (SetBucketLifecycle). Every node runs RunLifecycle; one at a time holds
// the run's lease in the metadata store (meta.Lifecycles) and works:
// every Interval a run walks the buckets with rules, each bucket's
// versions in pages of whole keys (then its multipart uploads), and saves
// its cursor after each page, which renews the lease. After a crash the
// run resumes from the cursor, on any node; at most a page is redone, and
// redoing is harmless (every decision is taken again from what the store
// holds).
//
// For each version the rules decide, at the worker's clock, by the
// matcher of package meta (the one x-amz-expiration uses): a current
// version past its Expiration is deleted as a client's DELETE would (a
// delete marker in a versioned bucket, removal otherwise); a noncurrent
// version NoncurrentDays after it became noncurrent (its successor's
// creation), beyond the NewerNoncurrentVersions newest, is removed; a
// delete marker that is its key's only version is removed under
// ExpiredObjectDeleteMarker; an upload DaysAfterInitiation after its
// creation is aborted.
//
// Decisions are taken on a page's listing; before deleting, the worker
// reads the rules again and the version itself (its tags included), takes
// the decision again on them, and deletes with meta.Cond.IfVersion set
// to that version and its tags (meta.Cond.IfVersion and IfTags, checked
// in the delete's transaction): a version overwritten or re-tagged in
// between, or a rule changed before the re-read, is not deleted. A refusal (the version changed, is gone,
// or is locked: object lock) is skipped and counted, never forced.

// LifecycleOptions tune RunLifecycle; LifecycleOptionsFrom fills them from
// config.Config.
type LifecycleOptions struct {
	// Owner names this node in the lease ("": a random name).
	Owner string
	// Interval between the starts of two runs (--lifecycle-interval).
	Interval time.Duration
	// PageSize is the versions per page (--lifecycle-page).
	PageSize int
	// Lease is how long the run stays this node's without a save.
	Lease time.Duration
	// Poll is how often a node that does not hold the lease tries again.
	Poll time.Duration
	// Day is the length of a lifecycle day (meta.Lifecycle24h; shorter
	// only in tests: COFFER_LIFECYCLE_DAY).
	Day meta.Day
	// Now is the worker's clock (nil: the service's).
	Now func() time.Time
	// beforeDelete, in tests, runs between a page's decisions and its
	// deletes.
	beforeDelete func()
}

// LifecycleStats are this node's counters of lifecycle work (metrics).
type LifecycleStats struct {
	// Expired counts current versions expired (a delete marker written,
	// or removed in a bucket not versioned); VersionsRemoved noncurrent
	// versions removed; MarkersRemoved expired delete markers removed;
	// UploadsAborted multipart uploads aborted.
	Expired, VersionsRemoved, MarkersRemoved, UploadsAborted atomic.Int64
	// Skipped by reason: locked (object lock refused), changed (the
	// version or the rules changed since the decision), gone (deleted
	// meanwhile), error (any other failure; logged).
	SkippedLocked, SkippedChanged, SkippedGone, SkippedError atomic.Int64
	// LastRunSeconds is the duration of the last finished run (float64
	// bits); LastSuccess its end (Unix seconds; 0: none on this node).
	LastRunSeconds, LastSuccess atomic.Int64
	// Running is 1 while this node works on a run.
	Running atomic.Int64
}

// LastRun returns the duration of the last run this node finished.
func (st *LifecycleStats) LastRun() float64 {
	return math.Float64frombits(uint64(st.LastRunSeconds.Load()))
}

// LifecycleWorker applies the buckets' lifecycle rules (RunLifecycle).
type LifecycleWorker struct {
	*core
	stats LifecycleStats
}

// Lifecycle returns the service's lifecycle worker.
func (s *Service) Lifecycle() *LifecycleWorker { return s.lifecycle }

// Stats returns this node's lifecycle counters.
func (w *LifecycleWorker) Stats() *LifecycleStats { return &w.stats }

// GetBucketLifecycle returns the lifecycle configuration of a bucket a
// owns: NotFound (resource lifecycle) if it has none; NotImplemented for
// a gateway bucket.
func (s *Service) GetBucketLifecycle(ctx context.Context, a Actor, name string) (meta.Lifecycle, error) {
	b, err := s.authorize(ctx, a, name, "s3:GetLifecycleConfiguration", "")
	if err != nil {
		return meta.Lifecycle{}, err
	}
	if b.IsGateway() {
		return meta.Lifecycle{}, errGatewayUnsupported("lifecycle")
	}
	return s.meta.GetBucketLifecycle(ctx, name)
}

// SetBucketLifecycle replaces the lifecycle configuration of a bucket a
// owns (nil: none), checked by meta.CheckLifecycle; NotImplemented for a
// gateway bucket.
func (s *Service) SetBucketLifecycle(ctx context.Context, a Actor, name string, lc *meta.Lifecycle) (err error) {
	defer func() {
		s.auditReason(ctx, a, audit.BucketLifecycle, audit.Target{Bucket: name}, deleted(lc == nil), err)
	}()
	b, err := s.authorize(ctx, a, name, "s3:PutLifecycleConfiguration", "")
	if err != nil {
		return err
	}
	if b.IsGateway() {
		return errGatewayUnsupported("lifecycle")
	}
	if lc != nil {
		if err := meta.CheckLifecycle(lc); err != nil {
			return err
		}
	}
	return s.meta.SetBucketLifecycle(ctx, name, lc)
}

// ExpirationHeader returns the x-amz-expiration value of o, the current
// version of a key of bucket b (S3: `expiry-date="…", rule-id="…"`), ""
// if no rule of b expires it. day is the lifecycle day.
func ExpirationHeader(b meta.Bucket, o meta.Object, day meta.Day) string {
	if b.Lifecycle == nil || o.DeleteMarker {
		return ""
	}
	at, rule, ok := b.Lifecycle.CurrentExpiry(o, day)
	if !ok {
		return ""
	}
	return fmt.Sprintf("expiry-date=%q, rule-id=%q", at.UTC().Format(http.TimeFormat), rule)
}

// LifecycleDay is the lifecycle day the service was configured with.
func (s *Service) LifecycleDay() meta.Day {
	if s.cfg.LifecycleDay > 0 {
		return meta.Day(s.cfg.LifecycleDay)
	}
	return meta.Lifecycle24h
}

// lifecycleCursor is where a run is (LifecycleRun.Cursor, as JSON; keys
// as bytes, since they need not be valid UTF-8).
type lifecycleCursor struct {
	Bucket string `json:"b"`
	// Uploads: the bucket's versions are done; its uploads are next.
	Uploads bool `json:"u,omitempty"`
	// Key: every version of every key up to it is done (versions), or the
	// uploads up to (Key, UploadID) (uploads).
	Key      []byte `json:"k,omitempty"`
	UploadID string `json:"i,omitempty"`
}

func parseLifecycleCursor(s string) (lifecycleCursor, error) {
	var c lifecycleCursor
	if s == "" {
		return c, nil
	}
	if err := json.Unmarshal([]byte(s), &c); err != nil {
		return lifecycleCursor{}, errcode.Wrap(errcode.Internal, err, "corrupt lifecycle cursor")
	}
	return c, nil
}

func (c lifecycleCursor) encode() string {
	b, _ := json.Marshal(c)
	return string(b)
}

// LifecycleOptionsFrom returns the lifecycle options in c; Owner is the
// caller's to add.
func LifecycleOptionsFrom(c config.Config) LifecycleOptions {
	return LifecycleOptions{Interval: c.LifecycleInterval, PageSize: c.LifecyclePage, Day: meta.Day(c.LifecycleDay),
		Poll: min(c.LifecycleInterval, time.Minute)}
}

// RunLifecycle runs the lifecycle rules until ctx is done: a run every
// opts.Interval, by whichever node holds the lease.
func (w *LifecycleWorker) RunLifecycle(ctx context.Context, opts LifecycleOptions) {
	opts = w.lifecycleDefaults(opts)
	for {
		_, err := w.RunOnce(ctx, opts)
		if err != nil && ctx.Err() == nil {
			w.log.Warn("lifecycle: run paused; it resumes from its cursor", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(opts.Poll):
		}
	}
}

func (w *LifecycleWorker) lifecycleDefaults(opts LifecycleOptions) LifecycleOptions {
	if opts.Owner == "" {
		opts.Owner = "node-" + newBlobKey()[2:]
	}
	if opts.Now == nil {
		opts.Now = w.now
	}
	if opts.Day <= 0 {
		opts.Day = meta.Lifecycle24h
	}
	if opts.PageSize <= 0 {
		opts.PageSize = 1000
	}
	if opts.Lease <= 0 {
		opts.Lease = 2 * time.Minute
	}
	if opts.Interval <= 0 {
		opts.Interval = time.Hour
	}
	if opts.Poll <= 0 {
		opts.Poll = min(opts.Interval, time.Minute)
	}
	return opts
}

// errLeaseLost stops a run whose lease another node took.
var errLeaseLost = errors.New("lifecycle lease lost")

// RunOnce takes the lease and, if a run is due (or one is in progress),
// works on it to its end; ran reports whether it did.
func (w *LifecycleWorker) RunOnce(ctx context.Context, opts LifecycleOptions) (ran bool, err error) {
	opts = w.lifecycleDefaults(opts)
	now := opts.Now()
	r, ok, err := w.meta.AcquireLifecycleRun(ctx, opts.Owner, now.Add(opts.Lease), now)
	if err != nil || !ok {
		return false, err
	}
	if r.Cursor == "" {
		if !r.FinishedAt.IsZero() && now.Sub(r.FinishedAt) < opts.Interval {
			return false, nil
		}
		r.StartedAt = now
		if opts.Day != meta.Lifecycle24h {
			w.log.Warn("lifecycle: TEST ONLY: this run counts days of "+time.Duration(opts.Day).String()+", not 24h (--lifecycle-day); never set it in production",
				"lifecycle_day", time.Duration(opts.Day).String())
		}
	}
	cur, err := parseLifecycleCursor(r.Cursor)
	if err != nil {
		return false, err
	}
	w.stats.Running.Store(1)
	defer w.stats.Running.Store(0)
	save := func(c lifecycleCursor, done bool) error {
		now := opts.Now()
		until := now.Add(opts.Lease)
		r.Cursor = c.encode()
		if done {
			r.Cursor, r.FinishedAt, until = "", now, now
		}
		sctx, cancel := detach.Context(ctx)
		defer cancel()
		err := w.meta.SaveLifecycleRun(sctx, r, opts.Owner, until, now)
		if errcode.Of(err) == errcode.Conflict {
			return errLeaseLost
		}
		return err
	}
	started := time.Now()
	err = w.run(ctx, opts, cur, save)
	if errors.Is(err, errLeaseLost) {
		w.log.Info("lifecycle: lease lost (taken by another node)")
		return true, nil
	}
	if err != nil {
		return true, err
	}
	if err := save(lifecycleCursor{}, true); err != nil && !errors.Is(err, errLeaseLost) {
		return true, err
	}
	w.stats.LastRunSeconds.Store(int64(math.Float64bits(time.Since(started).Seconds())))
	w.stats.LastSuccess.Store(time.Now().Unix())
	return true, nil
}

// run works from cur through every bucket with rules.
func (w *LifecycleWorker) run(ctx context.Context, opts LifecycleOptions, cur lifecycleCursor, save func(lifecycleCursor, bool) error) error {
	for {
		if cur.Bucket != "" {
			if err := w.bucket(ctx, opts, &cur, save); err != nil {
				return err
			}
		}
		next, err := w.meta.ListLifecycleBuckets(ctx, cur.Bucket, 1)
		if err != nil || len(next) == 0 {
			return err
		}
		cur = lifecycleCursor{Bucket: next[0].Bucket}
		if err := save(cur, false); err != nil {
			return err
		}
	}
}

// bucket works on cur.Bucket from cur on, a page at a time.
func (w *LifecycleWorker) bucket(ctx context.Context, opts LifecycleOptions, cur *lifecycleCursor, save func(lifecycleCursor, bool) error) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		b, err := w.meta.GetBucket(ctx, cur.Bucket)
		if errcode.Of(err) == errcode.NotFound {
			return nil // deleted meanwhile
		}
		if err != nil {
			return err
		}
		if b.Lifecycle == nil || b.IsGateway() {
			return nil
		}
		var more bool
		if cur.Uploads {
			more, err = w.uploadsPage(ctx, opts, b, cur)
		} else {
			more, err = w.versionsPage(ctx, opts, b, cur)
		}
		if err != nil {
			return err
		}
		if !more {
			if cur.Uploads {
				return nil
			}
			*cur = lifecycleCursor{Bucket: cur.Bucket, Uploads: true}
		}
		if err := save(*cur, false); err != nil {
			return err
		}
	}
}

// lifecycleAction is what a rule decided for one version.
type lifecycleAction int

const (
	expireCurrent lifecycleAction = iota + 1
	removeNoncurrent
	removeMarker
)

// candidate is a version a page's listing decided to delete.
type candidate struct {
	action lifecycleAction
	v      meta.Object // as listed
	since  time.Time   // removeNoncurrent: when it became noncurrent
	newer  int         // removeNoncurrent: noncurrent versions newer than it
	only   bool        // removeMarker: the key's only version
}

// versionsPage works on the next page of whole keys of b's versions after
// cur.Key, and moves cur past them; more is false after the last.
func (w *LifecycleWorker) versionsPage(ctx context.Context, opts LifecycleOptions, b meta.Bucket, cur *lifecycleCursor) (more bool, err error) {
	page, err := w.meta.ListObjectVersions(ctx, b.Name, meta.VersionListOptions{KeyMarker: string(cur.Key), Limit: opts.PageSize})
	if err != nil || len(page.Versions) == 0 {
		return false, err
	}
	vs := page.Versions
	if page.Truncated {
		last := vs[len(vs)-1].Key
		i := len(vs)
		for i > 0 && vs[i-1].Key == last {
			i--
		}
		if i > 0 {
			vs = vs[:i] // the last key may go on in the next page
		} else if vs, err = w.wholeKey(ctx, b.Name, page); err != nil {
			return false, err
		}
	}
	now := opts.Now()
	lc := *b.Lifecycle
	var cands []candidate
	for start := 0; start < len(vs); {
		end := start + 1
		for end < len(vs) && vs[end].Key == vs[start].Key {
			end++
		}
		cands = append(cands, decideKey(lc, vs[start:end], now, opts.Day)...)
		start = end
	}
	if len(cands) > 0 {
		if opts.beforeDelete != nil {
			opts.beforeDelete()
		}
		// The rules as they are now: a rule changed since the listing
		// decides again.
		lc, err := w.meta.GetBucketLifecycle(ctx, b.Name)
		switch {
		case errcode.As(err) != nil && errcode.As(err).Detail["resource"] == "lifecycle":
			w.stats.SkippedChanged.Add(int64(len(cands)))
			cands = nil
		case err != nil:
			return false, err
		}
		for _, c := range cands {
			w.apply(ctx, b, lc, c, now, opts.Day)
		}
	}
	cur.Key = []byte(vs[len(vs)-1].Key)
	return page.Truncated || len(vs) < len(page.Versions), nil
}

// wholeKey returns every version of the one key a truncated page holds,
// listing on.
func (w *LifecycleWorker) wholeKey(ctx context.Context, bucket string, page meta.VersionPage) ([]meta.Object, error) {
	vs := page.Versions
	key := vs[0].Key
	for page.Truncated {
		var err error
		page, err = w.meta.ListObjectVersions(ctx, bucket, meta.VersionListOptions{KeyMarker: page.NextKeyMarker, VersionIDMarker: page.NextVersionIDMarker})
		if err != nil {
			return nil, err
		}
		for _, v := range page.Versions {
			if v.Key != key {
				return vs, nil
			}
			vs = append(vs, v)
		}
	}
	return vs, nil
}

// decideKey decides, at now, for the versions of one key (newest first,
// as listed).
func decideKey(lc meta.Lifecycle, vs []meta.Object, now time.Time, day meta.Day) []candidate {
	var out []candidate
	noncurrent := 0
	for i, v := range vs {
		if v.IsLatest {
			if c, ok := decideCurrent(lc, v, len(vs) == 1, now, day); ok {
				out = append(out, c)
			}
			continue
		}
		if i == 0 {
			continue // no latest listed: nothing to date it by
		}
		c := candidate{action: removeNoncurrent, v: v, since: vs[i-1].ModTime, newer: noncurrent}
		noncurrent++
		if decideNoncurrent(lc, c, now, day) {
			out = append(out, c)
		}
	}
	return out
}

// decideCurrent decides for the current version v (only: the key's only
// version).
func decideCurrent(lc meta.Lifecycle, v meta.Object, only bool, now time.Time, day meta.Day) (candidate, bool) {
	if v.DeleteMarker {
		_, ok := lc.ExpiresMarker(v.Key)
		return candidate{action: removeMarker, v: v, only: true}, ok && only
	}
	at, _, ok := anyTags(lc).CurrentExpiry(v, day)
	return candidate{action: expireCurrent, v: v}, ok && !now.Before(at)
}

func decideNoncurrent(lc meta.Lifecycle, c candidate, now time.Time, day meta.Day) bool {
	at, _, ok := anyTags(lc).NoncurrentExpiry(c.v, c.since, c.newer, day)
	return ok && !now.Before(at)
}

// anyTags returns lc with its tag predicates satisfied by any version
// when the version's tags are not known (a listing): a superset of what
// lc selects, which apply narrows with the version's own tags.
func anyTags(lc meta.Lifecycle) meta.Lifecycle {
	if !lc.NeedsTags() {
		return lc
	}
	out := meta.Lifecycle{Rules: make([]meta.LifecycleRule, len(lc.Rules))}
	for i, r := range lc.Rules {
		if r.NeedsTags() {
			f := *r.Filter
			f.Tag = nil
			if f.And != nil {
				a := *f.And
				a.Tags = nil
				f.And = &a
			}
			r.Filter = &f
		}
		out.Rules[i] = r
	}
	return out
}

// apply takes c's decision again on the version as it is now, under lc
// (the rules read after the listing), and deletes it pinned to that
// version; a refusal is counted as skipped.
func (w *LifecycleWorker) apply(ctx context.Context, b meta.Bucket, lc meta.Lifecycle, c candidate, now time.Time, day meta.Day) {
	key := c.v.Key
	if c.action == removeMarker {
		// A marker has no bytes or tags to pin: check it is still the
		// key's only version, under a rule that removes it.
		page, err := w.meta.ListObjectVersions(ctx, b.Name, meta.VersionListOptions{Prefix: key, Limit: 2})
		if err != nil {
			w.skip(err, key)
			return
		}
		n := 0
		for _, v := range page.Versions {
			if v.Key == key {
				n++
			}
		}
		if _, ok := lc.ExpiresMarker(key); !ok || n != 1 || page.Versions[0].Key != key || page.Versions[0].VersionID != c.v.VersionID ||
			!page.Versions[0].DeleteMarker {
			w.stats.SkippedChanged.Add(1)
			return
		}
		if _, err := w.meta.DeleteVersion(ctx, b.Name, key, c.v.VersionID, meta.Cond{}); err != nil {
			w.skip(err, key)
			return
		}
		w.stats.MarkersRemoved.Add(1)
		return
	}
	full, err := w.meta.GetObjectVersion(ctx, b.Name, key, c.v.VersionID)
	if err != nil {
		w.skip(err, key)
		return
	}
	if full.DeleteMarker != c.v.DeleteMarker {
		w.stats.SkippedChanged.Add(1)
		return
	}
	var due bool
	switch c.action {
	case expireCurrent:
		at, _, ok := lc.CurrentExpiry(full, day)
		due = ok && !now.Before(at) && full.IsLatest
	case removeNoncurrent:
		at, _, ok := lc.NoncurrentExpiry(full, c.since, c.newer, day)
		due = ok && !now.Before(at) && !full.IsLatest
	}
	if !due {
		w.stats.SkippedChanged.Add(1)
		return
	}
	cond := meta.Cond{IfVersion: meta.Version(full), IfTags: meta.TagsKey(full.Tags)}
	if full.DeleteMarker {
		cond = meta.Cond{} // a noncurrent marker: nothing to pin
	}
	if c.action == expireCurrent {
		_, err = w.meta.DeleteObject(ctx, b.Name, key, cond)
	} else {
		_, err = w.meta.DeleteVersion(ctx, b.Name, key, full.VersionID, cond)
	}
	if err != nil {
		w.skip(err, key)
		return
	}
	if c.action == expireCurrent {
		w.stats.Expired.Add(1)
	} else {
		w.stats.VersionsRemoved.Add(1)
	}
}

// skip counts a delete that did not happen.
func (w *LifecycleWorker) skip(err error, key string) {
	switch {
	case meta.IsLocked(err):
		w.stats.SkippedLocked.Add(1)
	case errcode.Of(err) == errcode.PreconditionFailed:
		w.stats.SkippedChanged.Add(1)
	case errcode.Of(err) == errcode.NotFound:
		w.stats.SkippedGone.Add(1)
	default:
		w.stats.SkippedError.Add(1)
		w.log.Warn("lifecycle: a delete failed; skipped", "key", key, "err", err)
	}
}

// uploadsPage aborts the uploads of b due by its rules, a page at a time
// after (cur.Key, cur.UploadID).
func (w *LifecycleWorker) uploadsPage(ctx context.Context, opts LifecycleOptions, b meta.Bucket, cur *lifecycleCursor) (more bool, err error) {
	ups, more, err := w.meta.ListUploads(ctx, b.Name, meta.ListUploadsOptions{KeyMarker: string(cur.Key), UploadIDMarker: cur.UploadID, Limit: opts.PageSize})
	if err != nil || len(ups) == 0 {
		return false, err
	}
	now := opts.Now()
	var due []meta.Upload
	for _, u := range ups {
		if at, _, ok := b.Lifecycle.AbortAfter(u.Key, u.CreatedAt, opts.Day); ok && !now.Before(at) {
			due = append(due, u)
		}
	}
	if len(due) > 0 {
		lc, err := w.meta.GetBucketLifecycle(ctx, b.Name)
		if err != nil && errcode.Of(err) != errcode.NotFound {
			return false, err
		}
		for _, u := range due {
			if at, _, ok := lc.AbortAfter(u.Key, u.CreatedAt, opts.Day); !ok || now.Before(at) {
				w.stats.SkippedChanged.Add(1)
				continue
			}
			if err := (&Uploads{w.core}).abortUpload(ctx, u); err != nil {
				w.skip(err, u.Key)
				continue
			}
			w.stats.UploadsAborted.Add(1)
		}
	}
	last := ups[len(ups)-1]
	cur.Key, cur.UploadID = []byte(last.Key), last.ID
	return more, nil
}
