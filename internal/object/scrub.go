package object

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"hash"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/coffer-storage/coffer/internal/config"
	"github.com/coffer-storage/coffer/internal/crypt"
	"github.com/coffer-storage/coffer/internal/detach"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/integrity"
	"github.com/coffer-storage/coffer/internal/meta"
)

// The scrub (coffer fsck; the background scrub of --scrub-every)
//
// A run walks every object version of every native bucket in (bucket,
// key, version ID) order (meta.Scrubs.ListScrubVersions), reads each
// version's record and every blob it holds its bytes in, and checks them
// against the record, reading at most Rate bytes a second:
//
//   - a plaintext blob: its size, and its SHA-256 (single-blob objects) or
//     the digest its part's ETag records (partDigest: the MD5 of an S3
//     part, the CRC-32C of a direct-upload part) at the write;
//   - an encrypted blob, with the key service at hand: every segment
//     authenticated (AEAD) while decrypting, and the plaintext's digest as
//     above; without the key (an object stored with a customer key, SSE-C,
//     or a key service that is down): the blob's size only, counted as
//     unverified;
//   - an inline object (bytes in the metadata store): its length and
//     SHA-256.
//
// Each problem (missing, corrupt, unreadable) is checked again against a
// fresh read of the version's record (a version deleted meanwhile is no
// problem), logged, counted and recorded as a meta.ScrubFinding; a blob
// found good again loses its finding. Like the lifecycle worker, one
// node at a time holds the run's lease (meta.Scrubs, renewed by every
// save), and the run saves its cursor and counts every page or every few
// seconds: after a crash, or when coffer fsck and the server take turns,
// the run resumes from its cursor on whichever node takes the lease.
//
// Garage's scrub worker is the model (a persisted cursor and a tranquility
// throttle; here a byte rate), and MinIO's heal (a per-object deep check
// of the bytes against their recorded hashes).

// ScrubOptions tune the scrub; ScrubOptionsFrom fills them from
// config.Config.
type ScrubOptions struct {
	// Owner names this node (or coffer fsck) in the lease ("": random).
	Owner string
	// Every is the time between the starts of two runs (--scrub-every);
	// RunScrub does nothing if it is 0.
	Every time.Duration
	// Rate is the bytes read per second, at most (--scrub-rate).
	Rate int64
	// PageSize is the versions per page; Lease how long the run stays
	// this node's without a save; Poll how often a node that does not
	// hold it tries again; SaveEvery how often the cursor is saved
	// within a page (a slow page renews the lease too).
	PageSize          int
	Lease, Poll       time.Duration
	SaveEvery         time.Duration
	Now               func() time.Time
	Progress          func(ScrubProgress) // called after every save (coffer fsck)
	Finding           func(meta.ScrubFinding)
	forceStart, onePg bool
}

// ScrubOptionsFrom returns the scrub options in c; Owner is the caller's.
func ScrubOptionsFrom(c config.Config) ScrubOptions {
	return ScrubOptions{Every: c.ScrubEvery, Rate: c.ScrubRate}
}

// ScrubProgress are the counts of a run (ScrubRun.Progress and Last, as
// JSON).
type ScrubProgress struct {
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
	// Objects are the versions checked, Bytes the bytes read; Missing,
	// Corrupt and Unreadable the blobs found so; Unverified the
	// encrypted blobs only their size could be checked of (no key).
	Objects    int64 `json:"objects"`
	Bytes      int64 `json:"bytes"`
	Missing    int64 `json:"missing"`
	Corrupt    int64 `json:"corrupt"`
	Unreadable int64 `json:"unreadable"`
	Unverified int64 `json:"unverified"`
}

// Bad is the number of damaged blobs the run found.
func (p ScrubProgress) Bad() int64 { return p.Missing + p.Corrupt + p.Unreadable }

// ScrubStats are this node's counters of scrub work (metrics).
type ScrubStats struct {
	Objects, Bytes, Missing, Corrupt, Unreadable, Unverified atomic.Int64
	// LastSuccess is when the last run this node finished ended (Unix
	// seconds; 0: none); Running is 1 while this node scrubs.
	LastSuccess, Running atomic.Int64
}

// Scrubber runs the scrub.
type Scrubber struct {
	*core
	stats ScrubStats
	mu    sync.Mutex // one run at a time in this process
}

// Scrubber returns the service's scrubber.
func (s *Service) Scrubber() *Scrubber { return s.scrubber }

// Stats returns this node's scrub counters.
func (w *Scrubber) Stats() *ScrubStats { return &w.stats }

// scrubCursor is where a run is (ScrubRun.Cursor, as JSON): every
// version up to After is done.
type scrubCursor struct {
	After *meta.VersionRef `json:"after,omitempty"`
}

func (w *Scrubber) defaults(opts ScrubOptions) ScrubOptions {
	if opts.Owner == "" {
		opts.Owner = "node-" + newBlobKey()[2:]
	}
	if opts.Now == nil {
		opts.Now = w.now
	}
	if opts.Rate <= 0 {
		opts.Rate = 50 << 20
	}
	if opts.PageSize <= 0 {
		opts.PageSize = 100
	}
	if opts.Lease <= 0 {
		opts.Lease = 2 * time.Minute
	}
	if opts.Poll <= 0 {
		opts.Poll = time.Minute
		if opts.Every > 0 {
			opts.Poll = min(opts.Every, time.Minute)
		}
	}
	if opts.SaveEvery <= 0 {
		opts.SaveEvery = 10 * time.Second
	}
	return opts
}

// RunScrub scrubs every opts.Every until ctx is done, whichever node holds
// the lease; nothing if opts.Every is 0.
func (w *Scrubber) RunScrub(ctx context.Context, opts ScrubOptions) {
	if opts.Every <= 0 || w.meta.Scrubs == nil {
		return
	}
	opts = w.defaults(opts)
	for {
		if _, err := w.RunOnce(ctx, opts); err != nil && ctx.Err() == nil {
			w.log.Warn("scrub: run paused; it resumes from its cursor", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(opts.Poll):
		}
	}
}

// errScrubLeaseLost stops a run whose lease another node took.
var errScrubLeaseLost = errors.New("scrub lease lost")

// ErrScrubBusy is Scrub's error when another process holds the run.
func ErrScrubBusy(owner string, until time.Time) error {
	return &errcode.Error{Code: errcode.Conflict, Message: "another process scrubs now (" + owner + ", lease until " + until.UTC().Format(time.RFC3339) + ")",
		Detail: map[string]any{"reason": "scrub_busy"}}
}

// Scrub runs one whole pass now (coffer fsck): it resumes the run in
// progress, if any, else starts one, whatever Every says; ErrScrubBusy if
// another process holds the lease. It returns the run's counts.
func (w *Scrubber) Scrub(ctx context.Context, opts ScrubOptions) (ScrubProgress, error) {
	opts.forceStart = true
	opts = w.defaults(opts)
	now := opts.Now()
	r, ok, err := w.meta.AcquireScrubRun(ctx, opts.Owner, now.Add(opts.Lease), now)
	if err != nil {
		return ScrubProgress{}, err
	}
	if !ok {
		cur, _ := w.meta.GetScrubRun(ctx)
		return ScrubProgress{}, ErrScrubBusy(cur.LeaseOwner, cur.LeaseUntil)
	}
	p, _, err := w.run(ctx, opts, r)
	return p, err
}

// RunOnce takes the lease and, if a run is due (or one is in progress),
// works on it to its end; ran reports whether it did.
func (w *Scrubber) RunOnce(ctx context.Context, opts ScrubOptions) (ran bool, err error) {
	opts = w.defaults(opts)
	now := opts.Now()
	r, ok, err := w.meta.AcquireScrubRun(ctx, opts.Owner, now.Add(opts.Lease), now)
	if err != nil || !ok {
		return false, err
	}
	_, ran, err = w.run(ctx, opts, r)
	return ran, err
}

// run works on the leased run r: resumes it, or starts one if due.
func (w *Scrubber) run(ctx context.Context, opts ScrubOptions, r meta.ScrubRun) (ScrubProgress, bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := opts.Now()
	var p ScrubProgress
	if r.Cursor == "" {
		if !opts.forceStart && !r.FinishedAt.IsZero() && now.Sub(r.FinishedAt) < opts.Every {
			// Not due: free the lease for whoever's turn it is next.
			w.release(ctx, r, opts)
			return p, false, nil
		}
		r.StartedAt, r.Cursor = now, "{}"
		p.StartedAt = now.UTC()
	} else if r.Progress != "" {
		if err := json.Unmarshal([]byte(r.Progress), &p); err != nil {
			return p, false, errcode.Wrap(errcode.Internal, err, "corrupt scrub progress")
		}
	}
	var cur scrubCursor
	if err := json.Unmarshal([]byte(r.Cursor), &cur); err != nil {
		return p, false, errcode.Wrap(errcode.Internal, err, "corrupt scrub cursor")
	}
	w.stats.Running.Store(1)
	defer w.stats.Running.Store(0)
	save := func(done bool) error {
		now := opts.Now()
		until := now.Add(opts.Lease)
		c, _ := json.Marshal(cur)
		pj, _ := json.Marshal(p)
		r.Cursor, r.Progress = string(c), string(pj)
		if done {
			// The lease ends before now: anyone may take it at once.
			r.Cursor, r.Progress, r.Last, r.FinishedAt, until = "", "", string(pj), now, now.Add(-time.Millisecond)
		}
		sctx, cancel := detach.Context(ctx)
		defer cancel()
		err := w.meta.SaveScrubRun(sctx, r, opts.Owner, until, now)
		if errcode.Of(err) == errcode.Conflict {
			return errScrubLeaseLost
		}
		if err == nil && opts.Progress != nil {
			opts.Progress(p)
		}
		return err
	}
	known, err := w.knownFindings(ctx)
	if err != nil {
		return p, true, err
	}
	lim := rate.NewLimiter(rate.Limit(opts.Rate), int(min(opts.Rate, scrubChunk)))
	saved := time.Now()
	for {
		page, err := w.meta.ListScrubVersions(ctx, cur.After, opts.PageSize)
		if err != nil {
			return p, true, err
		}
		for _, v := range page {
			if err := w.check(ctx, opts, lim, v, &p, known); err != nil {
				return p, true, err
			}
			cur.After = &v
			if time.Since(saved) >= opts.SaveEvery {
				if err := save(false); err != nil {
					return p, true, w.lost(err)
				}
				saved = time.Now()
			}
		}
		if len(page) < opts.PageSize || opts.onePg {
			break
		}
		if err := save(false); err != nil {
			return p, true, w.lost(err)
		}
		saved = time.Now()
	}
	if err := w.prune(ctx, p.StartedAt); err != nil {
		return p, true, err
	}
	p.FinishedAt = opts.Now().UTC()
	if err := save(true); err != nil {
		return p, true, w.lost(err)
	}
	w.stats.LastSuccess.Store(p.FinishedAt.Unix())
	w.log.Info("scrub: run finished", "objects", p.Objects, "bytes", p.Bytes, "missing", p.Missing, "corrupt", p.Corrupt,
		"unreadable", p.Unreadable, "unverified", p.Unverified, "took", p.FinishedAt.Sub(p.StartedAt).String())
	return p, true, nil
}

// lost logs a lease lost to another node (the run goes on there).
func (w *Scrubber) lost(err error) error {
	if errors.Is(err, errScrubLeaseLost) {
		w.log.Info("scrub: lease lost (taken by another node)")
		return ErrScrubBusy("another node", time.Time{})
	}
	return err
}

// release gives the lease back (a run that was not due).
func (w *Scrubber) release(ctx context.Context, r meta.ScrubRun, opts ScrubOptions) {
	now := opts.Now()
	if err := w.meta.SaveScrubRun(ctx, r, opts.Owner, now.Add(-time.Millisecond), now); err != nil && errcode.Of(err) != errcode.Conflict {
		w.log.Warn("scrub: could not release the lease", "err", err)
	}
}

// knownFindings are the blob keys with a finding now (a good check
// deletes theirs).
func (w *Scrubber) knownFindings(ctx context.Context) (map[string]bool, error) {
	known := map[string]bool{}
	after := ""
	for {
		fs, err := w.meta.ListScrubFindings(ctx, after, 1000)
		if err != nil {
			return nil, err
		}
		for _, f := range fs {
			known[f.BlobKey] = true
		}
		if len(fs) < 1000 {
			return known, nil
		}
		after = fs[len(fs)-1].BlobKey
	}
}

// prune forgets the findings older than a whole run that began at
// started: their blobs were checked since (found bad again, a finding
// is recorded anew) or belong to versions deleted since.
func (w *Scrubber) prune(ctx context.Context, started time.Time) error {
	after := ""
	for {
		fs, err := w.meta.ListScrubFindings(ctx, after, 1000)
		if err != nil {
			return err
		}
		for _, f := range fs {
			if f.FoundAt.Before(started.Truncate(time.Millisecond)) {
				if err := w.meta.DeleteScrubFinding(ctx, f.BlobKey); err != nil {
					return err
				}
			}
		}
		if len(fs) < 1000 {
			return nil
		}
		after = fs[len(fs)-1].BlobKey
	}
}

// scrubChunk is the most bytes the scrub reads at once.
const scrubChunk = 256 << 10

// check scrubs version v: every blob of it.
func (w *Scrubber) check(ctx context.Context, opts ScrubOptions, lim *rate.Limiter, v meta.VersionRef, p *ScrubProgress, known map[string]bool) error {
	o, err := w.meta.GetObjectVersion(ctx, v.Bucket, v.Key, v.VersionID)
	switch {
	case errcode.Is(err, errcode.NotFound):
		return nil // deleted since the listing
	case err != nil:
		return err
	case o.DeleteMarker:
		return nil
	}
	p.Objects++
	w.stats.Objects.Add(1)
	type piece struct {
		key           string // blob key ("" inline)
		size          int64
		env           []byte
		sha, md5, crc []byte
	}
	var pieces []piece
	var wholeWant []byte // the SHA-256 of the parts together, when they are checked so
	switch {
	case o.IsInline():
		pieces = []piece{{size: o.Size, env: o.Encryption, sha: unhex(o.SHA256)}}
	case o.Parts == nil:
		pc := piece{key: o.BlobKey, size: o.Size, env: o.Encryption, sha: unhex(o.SHA256)}
		if pc.sha == nil {
			pc.md5 = unhexMD5(o.ETag)
		}
		pieces = []piece{pc}
	default:
		for _, pt := range o.Parts {
			pc := piece{key: pt.BlobKey, size: pt.Size, env: pt.Encryption}
			if pc.md5, pc.crc = partDigest(pt.ETag); pc.md5 == nil && pc.crc == nil {
				// A part without an MD5 of its own (a tus upload's):
				// the parts are checked together against the object's
				// SHA-256.
				wholeWant = unhex(o.SHA256)
			}
			pieces = append(pieces, pc)
		}
	}
	var whole hash.Hash
	if wholeWant != nil {
		whole = sha256.New()
	}
	record := func(pc piece, problem string, err error) error {
		// Still the same version, with the same blob? (A delete since the
		// record was read may have reclaimed it.)
		again, gerr := w.meta.GetObjectVersion(ctx, v.Bucket, v.Key, v.VersionID)
		if errcode.Is(gerr, errcode.NotFound) || gerr == nil && !holds(again, pc.key) {
			return nil
		}
		switch problem {
		case meta.ScrubMissing:
			p.Missing++
			w.stats.Missing.Add(1)
		case meta.ScrubCorrupt:
			p.Corrupt++
			w.stats.Corrupt.Add(1)
		default:
			p.Unreadable++
			w.stats.Unreadable.Add(1)
		}
		f := meta.ScrubFinding{BlobKey: pc.key, Bucket: o.Bucket, Key: o.Key, VersionID: o.VersionID, Problem: problem, Detail: err.Error(), FoundAt: w.now().UTC()}
		if f.BlobKey == "" {
			f.BlobKey = "inline:" + o.Bucket + "/" + o.Key + "@" + o.VersionID
		}
		w.log.Error("scrub: damaged blob", "problem", problem, "bucket", o.Bucket, "key", o.Key, "version_id", o.VersionID, "blob", f.BlobKey, "err", err)
		if err := w.meta.RecordScrubFinding(ctx, f); err != nil {
			return err
		}
		known[f.BlobKey] = true
		if opts.Finding != nil {
			opts.Finding(f)
		}
		return nil
	}
	for _, pc := range pieces {
		var tee io.Writer
		if whole != nil {
			tee = whole
		}
		problem, n, err := w.checkBlob(ctx, lim, o, pc.key, pc.size, pc.env, pc.sha, pc.md5, pc.crc, tee)
		p.Bytes += n
		w.stats.Bytes.Add(n)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		switch problem {
		case "":
			if known[pc.key] && pc.key != "" && whole == nil {
				if err := w.meta.DeleteScrubFinding(ctx, pc.key); err != nil {
					return err
				}
				delete(known, pc.key)
			}
			continue
		case "unverified":
			p.Unverified++
			w.stats.Unverified.Add(1)
			whole = nil
			continue
		}
		whole = nil // the whole check needs every part read
		if err := record(pc, problem, err); err != nil {
			return err
		}
	}
	if whole == nil {
		return nil
	}
	// Parts checked together: which one is damaged is unknown, so a
	// mismatch is a finding on each; a match clears theirs.
	got := whole.Sum(nil)
	var mismatch error
	if !bytes.Equal(got, wholeWant) {
		mismatch = integrity.Mismatch("sha256", wholeWant, got)
	}
	for _, pc := range pieces {
		if mismatch != nil {
			if err := record(pc, meta.ScrubCorrupt, mismatch); err != nil {
				return err
			}
		} else if known[pc.key] {
			if err := w.meta.DeleteScrubFinding(ctx, pc.key); err != nil {
				return err
			}
			delete(known, pc.key)
		}
	}
	return nil
}

// holds reports whether o still keeps its bytes in blob key ("": inline).
func holds(o meta.Object, key string) bool {
	if key == "" {
		return o.IsInline()
	}
	for _, k := range o.BlobKeys() {
		if k == key {
			return true
		}
	}
	return false
}

// checkBlob reads one blob (key; "" for o's inline bytes) of plaintext
// size bytes, envelope env, against sha, md5 or crc (a CRC-32C; any may be nil), at
// most lim's rate: problem "" (good), "unverified", or a meta.Scrub*
// problem with its error; n is the bytes read. The plaintext read also
// goes to tee, if not nil.
func (w *Scrubber) checkBlob(ctx context.Context, lim *rate.Limiter, o meta.Object, key string, size int64, env, sha, md5, crc []byte, tee io.Writer) (problem string, n int64, err error) {
	fetch := func(off, n int64) (io.ReadCloser, error) { return w.blobs.Get(ctx, key, off, n) }
	identity := key
	if key == "" {
		if env == nil && int64(len(o.Inline)) != size {
			return meta.ScrubCorrupt, 0, errcode.New(errcode.Internal, "inline object has %d of its %d bytes", len(o.Inline), size)
		}
		fetch, identity = bytesFetcher(o.Inline), inlineIdentity
	}
	var rc io.ReadCloser
	var storeErr error
	if env == nil {
		whole := int64(-1) // to the blob's end: a longer blob is corrupt too
		if key == "" {
			whole = size
		}
		rc, err = fetch(0, whole)
	} else {
		op := opener{s: w.core, bucket: o.Bucket, key: o.Key, envelope: env, identity: identity, size: size,
			fetch: func(off, n int64) (io.ReadCloser, error) {
				rc, err := fetch(off, n)
				if err != nil {
					storeErr = err
				}
				return rc, err
			}, plainOpenerErr: func(err error) error { return err }}
		rc, err = op.open(ctx, 0, size)
		if err != nil && storeErr == nil && !crypt.IsIntegrity(err) && !IsCorrupt(err) {
			// No key (SSE-C, a key service down): the blob's size only.
			return w.sizeOnly(ctx, key, size)
		}
	}
	if err != nil {
		return classifyScrub(err, storeErr), 0, err
	}
	defer rc.Close()
	var ir io.Reader = integrity.NewReader(storeReader{rc, &storeErr}, integrity.Options{Size: size, SHA256: sha, MD5: md5, NoMD5: md5 == nil})
	if key != "" && env == nil && len(o.Parts) == 0 && len(o.CRC32C) == 4 {
		// The CRC-32C verified reads check (verify.go), beside the
		// SHA-256: a record the reads would refuse is found here too.
		ir = &crcCheck{r: ir, size: size, want: binary.BigEndian.Uint32(o.CRC32C)}
	}
	if len(crc) == 4 {
		ir = &crcCheck{r: ir, size: size, want: binary.BigEndian.Uint32(crc)}
	}
	buf := make([]byte, min(scrubChunk, lim.Burst()))
	for {
		if err := lim.WaitN(ctx, len(buf)); err != nil {
			return "", n, ctx.Err()
		}
		m, err := ir.Read(buf)
		n += int64(m)
		if tee != nil {
			tee.Write(buf[:m])
		}
		if err == io.EOF {
			return "", n, nil
		}
		if err != nil {
			return classifyScrub(err, storeErr), n, err
		}
	}
}

// sizeOnly checks the size of encrypted blob key (its plaintext size
// bytes) without decrypting it.
func (w *Scrubber) sizeOnly(ctx context.Context, key string, size int64) (string, int64, error) {
	if key == "" {
		return "unverified", 0, nil
	}
	info, err := w.blobs.Stat(ctx, key)
	if err != nil {
		return classifyScrub(err, err), 0, err
	}
	want, err := crypt.CiphertextSize(size)
	if err == nil && info.Size != want {
		return meta.ScrubCorrupt, 0, errcode.New(errcode.Internal, "encrypted blob has %d bytes, %d expected", info.Size, want)
	}
	return "unverified", 0, nil
}

// classifyScrub names the problem of a failed check: the store's error
// storeErr (missing or unreadable), else the bytes' (corrupt).
func classifyScrub(err, storeErr error) string {
	switch {
	case storeErr != nil && errcode.Is(storeErr, errcode.NotFound):
		return meta.ScrubMissing
	case storeErr != nil:
		return meta.ScrubUnreadable
	case errcode.Is(err, errcode.NotFound):
		return meta.ScrubMissing
	}
	switch errcode.Of(err) {
	case errcode.ChecksumMismatch, errcode.IncompleteBody, errcode.TooLarge, errcode.RangeNotSatisfiable:
		return meta.ScrubCorrupt
	}
	if IsCorrupt(err) || crypt.IsIntegrity(err) {
		return meta.ScrubCorrupt
	}
	return meta.ScrubUnreadable
}

// unhexMD5 is an MD5 ETag's digest, or nil.
func unhexMD5(etag string) []byte {
	b, err := hex.DecodeString(etag)
	if err != nil || len(b) != 16 {
		return nil
	}
	return b
}

// ScrubStatus is the scrub as the admin API shows it.
type ScrubStatus struct {
	// Running says a run is in progress (Progress its counts so far),
	// held by LeaseOwner until LeaseUntil.
	Running    bool           `json:"running"`
	Progress   *ScrubProgress `json:"progress,omitempty"`
	LeaseOwner string         `json:"lease_owner,omitempty"`
	LeaseUntil *time.Time     `json:"lease_until,omitempty"`
	// Last is the last finished run (nil: none).
	Last *ScrubProgress `json:"last,omitempty"`
	// Findings are the damaged blobs (the first 1000).
	Findings []meta.ScrubFinding `json:"findings"`
}

// ScrubStatus returns the scrub's state (for an administrator: the
// caller authorises).
func (w *Scrubber) ScrubStatus(ctx context.Context) (ScrubStatus, error) {
	var st ScrubStatus
	r, err := w.meta.GetScrubRun(ctx)
	if err != nil {
		return st, err
	}
	if r.Cursor != "" {
		st.Running, st.LeaseOwner = true, r.LeaseOwner
		until := r.LeaseUntil
		st.LeaseUntil = &until
		var p ScrubProgress
		if json.Unmarshal([]byte(r.Progress), &p) == nil {
			st.Progress = &p
		}
	}
	if r.Last != "" {
		var p ScrubProgress
		if json.Unmarshal([]byte(r.Last), &p) == nil {
			st.Last = &p
		}
	}
	if st.Findings, err = w.meta.ListScrubFindings(ctx, "", 1000); err != nil {
		return st, err
	}
	if st.Findings == nil {
		st.Findings = []meta.ScrubFinding{}
	}
	return st, nil
}
