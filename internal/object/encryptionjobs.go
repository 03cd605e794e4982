package object

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/coffer-storage/coffer/internal/audit"
	"hash"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coffer-storage/coffer/internal/config"
	"github.com/coffer-storage/coffer/internal/crypt"
	"github.com/coffer-storage/coffer/internal/detach"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/integrity"
	"github.com/coffer-storage/coffer/internal/kms"
	"github.com/coffer-storage/coffer/internal/meta"
)

// Background jobs of encryption at rest (docs/encryption.md#background-jobs)
//
// Two kinds of job, one mechanism (meta.EncryptionJobs): "rewrap" moves every
// stored data key (objects, inline objects, multipart objects' parts,
// parts of uploads in progress, tus included) to the current KEK version
// after a rotation, touching no blob byte; "encrypt:B" encrypts the
// plaintext objects of bucket B ("encrypt:" every bucket).
//
// Every node runs RunEncryptionJobs. A node leases one job at a time, works in
// keyset pages of JobOptions.PageSize rows and saves its cursor and
// counters after each page (which renews the lease): a job resumes on any
// node; a crash loses the counts of at most one page, never a row (the
// rows it changed are changed, and are not listed again). Each row is changed by
// compare-and-swap: a re-wrapped envelope replaces the old one only if the
// row still holds it (meta.EncryptionJobs.SwapEnvelope); an encrypted object
// replaces its plaintext version only if the row is still that version
// (meta.Cond.IfVersion). A concurrent overwrite, or a second worker whose
// lease expired without its knowing, therefore never clobbers anything; it
// only counts the row as skipped.
//
// A re-wrap runs in passes over the three tables and ends with a whole
// pass that changed nothing, started at least JobOptions.Settle after the
// job began: rows committed under the old version by writes that had
// their data key before the rotation (other nodes switch within their
// intermediate key's lifetime) are caught by the next pass. An encrypt
// job makes one pass: objects written in plaintext after it started (with
// encryption off) are not its business.

// EncryptionJobs are the background jobs of encryption at rest, and this
// node's counters of their work.
type EncryptionJobs struct {
	*core
	stats JobStats
}

// rewrapper is what a re-wrap needs of the keys; *kms.Keys has it.
type rewrapper interface {
	Rewrap(ctx context.Context, w kms.Wrapped, keyID string) (kms.Wrapped, bool, error)
	Current(ctx context.Context, keyID string) (kms.KeyRef, error)
}

// JobOptions tune RunEncryptionJobs, which takes them as given but for Owner:
// JobOptionsFrom fills them from config.Config (config.Defaults() for the
// defaults).
type JobOptions struct {
	// Owner names this node in job leases ("": a random name).
	Owner string
	// Lease is how long a job stays this node's without a save; a page
	// must finish well within it.
	Lease time.Duration
	// PageSize is the rows per page (--kms-job-page).
	PageSize int
	// Pause between pages (--kms-job-pause; 0: none): throttles a job.
	Pause time.Duration
	// Poll is how often an idle node looks for a job.
	Poll time.Duration
	// Settle: a re-wrap ends only with a pass begun this long after the
	// job started (three of the server's intermediate key lifetimes).
	Settle time.Duration
}

// JobOptionsFrom returns the job options in c (config.Config's EncryptionJob*
// fields); Owner is the caller's to add.
func JobOptionsFrom(c config.Config) JobOptions {
	return JobOptions{Lease: c.KMSJobLease, PageSize: c.KMSJobPage, Pause: c.KMSJobPause, Poll: c.KMSJobPoll, Settle: c.KMSJobSettle}
}

// JobStats are this node's counters of job work (for metrics).
type JobStats struct {
	Rewrapped, Encrypted, Skipped, Failed, Pages atomic.Int64
	// Running is 1 while this node holds a job.
	Running atomic.Int64
	mu      sync.Mutex
	last    map[string]meta.EncryptionJob // kind → the job this node last saved
}

// Last returns the job of kind this node last saved (ok false: none).
func (st *JobStats) Last(kind string) (meta.EncryptionJob, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	j, ok := st.last[kind]
	return j, ok
}

// JobStats returns this node's job counters.
func (s *EncryptionJobs) JobStats() *JobStats { return &s.stats }

// StartRewrap starts (or restarts from the beginning) the re-wrap of every
// data key to the current KEK versions.
func (s *EncryptionJobs) StartRewrap(ctx context.Context) (j meta.EncryptionJob, err error) {
	defer func() {
		s.cfg.Audit.Log(ctx, audit.Event{Action: audit.EncryptionJob, Target: audit.Target{Job: j.Name}, Reason: audit.ReasonRewrap}.Result(err))
	}()
	if _, ok := s.cfg.Keys.(rewrapper); !ok {
		return meta.EncryptionJob{}, errcode.New(errcode.NotImplemented, "no key provider: start the server with --encryption on or --kms")
	}
	return s.meta.StartJob(ctx, meta.EncryptionJob{Name: meta.RewrapJobName, Kind: meta.JobRewrap})
}

// StartEncrypt starts (or restarts) the encryption of the plaintext
// objects of bucket ("" = every bucket), under the bucket's default
// encryption if it has one, else the server's default KEK.
func (s *EncryptionJobs) StartEncrypt(ctx context.Context, bucket string) (j meta.EncryptionJob, err error) {
	defer func() {
		s.cfg.Audit.Log(ctx, audit.Event{Action: audit.EncryptionJob, Target: audit.Target{Job: j.Name, Bucket: bucket}, Reason: audit.ReasonEncrypt}.Result(err))
	}()
	if s.cfg.Keys == nil {
		return meta.EncryptionJob{}, errcode.New(errcode.NotImplemented, "no key provider: start the server with --encryption on or --kms")
	}
	if bucket != "" {
		if _, err := s.meta.GetBucket(ctx, bucket); err != nil {
			return meta.EncryptionJob{}, err
		}
	}
	return s.meta.StartJob(ctx, meta.EncryptionJob{Name: meta.EncryptJobName(bucket), Kind: meta.JobEncrypt, Bucket: bucket})
}

// Jobs lists the jobs; Job returns one (NotFound if none).
func (s *EncryptionJobs) Jobs(ctx context.Context) ([]meta.EncryptionJob, error) {
	return s.meta.ListJobs(ctx)
}

// EncryptionJob returns the job name.
func (s *EncryptionJobs) Job(ctx context.Context, name string) (meta.EncryptionJob, error) {
	return s.meta.GetJob(ctx, name)
}

// CurrentKEK returns the KEK version new data keys are wrapped under
// (Unavailable without a key provider).
func (s *EncryptionJobs) CurrentKEK(ctx context.Context) (string, error) {
	rw, ok := s.cfg.Keys.(rewrapper)
	if !ok {
		return "", errcode.New(errcode.Unavailable, "no key provider")
	}
	ref, err := rw.Current(ctx, "")
	return ref.String(), err
}

// KEKUsage counts the stored data keys under each KEK version: a version
// with none can be retired.
func (s *EncryptionJobs) KEKUsage(ctx context.Context) (map[string]int64, error) {
	return s.meta.KEKUsage(ctx)
}

// RunEncryptionJobs works on jobs until ctx is done: one at a time, leased, each
// to its end or until the lease is lost.
func (s *EncryptionJobs) RunEncryptionJobs(ctx context.Context, opts JobOptions) {
	if opts.Owner == "" {
		opts.Owner = "node-" + newBlobKey()[2:]
	}
	for {
		worked := false
		now := s.now()
		j, ok, err := s.meta.AcquireJob(ctx, opts.Owner, now.Add(opts.Lease), now)
		switch {
		case err != nil && ctx.Err() == nil:
			s.log.Warn("looking for encryption jobs failed", "err", err)
		case ok:
			worked = true
			s.stats.Running.Store(1)
			err := s.runJob(ctx, j, opts)
			s.stats.Running.Store(0)
			if err != nil && ctx.Err() == nil {
				s.log.Warn("encryption job paused; it resumes from its cursor", "job", j.Name, "err", err)
				worked = false
			}
		}
		if !worked {
			select {
			case <-ctx.Done():
				return
			case <-time.After(opts.Poll):
			}
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// runJob works on j (leased to opts.Owner) until it is done, the lease is
// lost, or an error (the key service is down, ...) pauses it; a pause
// first saves the rows done before it. A heartbeat renews the lease every
// Lease/3 with the last saved state, so a page that takes long (large
// objects to encrypt) or a long pause keeps the job; a save that comes
// after the lease ran out still counts if no other node took the job
// meanwhile (meta.EncryptionJobs.SaveJob). If a save finds the lease lost,
// the page is abandoned: the rows it changed stay changed, uncounted.
func (s *EncryptionJobs) runJob(ctx context.Context, j meta.EncryptionJob, opts JobOptions) error {
	s.log.Info("encryption job: working", "job", j.Name, "pass", j.Pass, "done", j.Done)
	var (
		mu    sync.Mutex // serialises saves: the heartbeat never saves over a newer state
		saved = j
	)
	save := func(state meta.EncryptionJob) error {
		now := s.now()
		sctx, cancel := detach.Context(ctx)
		defer cancel()
		return s.meta.SaveJob(sctx, state, opts.Owner, now.Add(opts.Lease), now)
	}
	commit := func() error { // saves j as the page left it
		mu.Lock()
		defer mu.Unlock()
		err := save(j)
		if err == nil {
			saved = j
		}
		return err
	}
	work, lost := context.WithCancelCause(ctx)
	defer lost(nil)
	hbDone := make(chan struct{})
	defer func() { lost(nil); <-hbDone }()
	go func() {
		defer close(hbDone)
		tick := time.NewTicker(opts.Lease / 3)
		defer tick.Stop()
		for {
			select {
			case <-work.Done():
				return
			case <-tick.C:
			}
			mu.Lock()
			err := save(saved)
			mu.Unlock()
			if err != nil && errcode.As(err).Detail["reason"] == "job_lease_lost" {
				lost(err)
				return
			}
		}
	}()
	for {
		var err error
		switch j.Kind {
		case meta.JobRewrap:
			err = s.rewrapPage(work, &j, opts)
		case meta.JobEncrypt:
			err = s.encryptPage(work, &j, opts)
		default:
			err = errcode.New(errcode.Internal, "unknown job kind %q", j.Kind)
		}
		if cause := context.Cause(work); cause != nil && ctx.Err() == nil && errcode.As(cause).Detail["reason"] == "job_lease_lost" {
			s.log.Info("encryption job: lease lost (restarted, or taken by another node)", "job", j.Name)
			return nil
		}
		if err != nil {
			// The rows before the one that paused the page are changed,
			// and are not listed again (an encrypted object is no longer
			// plaintext, a re-wrapped key no longer under an old
			// version): keep their counts and the cursor past them.
			if serr := commit(); serr != nil {
				s.log.Warn("encryption job: saving the progress before the pause failed", "job", j.Name, "err", serr)
			}
			return err
		}
		if err := commit(); err != nil {
			if errcode.As(err).Detail["reason"] == "job_lease_lost" {
				s.log.Info("encryption job: lease lost (restarted, or taken by another node)", "job", j.Name)
				return nil
			}
			return err
		}
		s.stats.Pages.Add(1)
		s.stats.mu.Lock()
		if s.stats.last == nil {
			s.stats.last = map[string]meta.EncryptionJob{}
		}
		s.stats.last[j.Kind] = j
		s.stats.mu.Unlock()
		if j.State == meta.JobDone {
			s.log.Info("encryption job: finished", "job", j.Name, "done", j.Done, "skipped", j.Skipped, "failed", j.Failed, "passes", j.Pass)
			return nil
		}
		if opts.Pause > 0 {
			select {
			case <-work.Done():
			case <-time.After(opts.Pause):
			}
		}
		if work.Err() != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			s.log.Info("encryption job: lease lost (restarted, or taken by another node)", "job", j.Name)
			return nil
		}
	}
}

// jobFailed records a row that could not be changed.
func (s *EncryptionJobs) jobFailed(j *meta.EncryptionJob, what string, err error) {
	j.Failed++
	j.LastError = fmt.Sprintf("%s: %v", what, err)
	if len(j.LastError) > 1000 {
		j.LastError = j.LastError[:1000]
	}
	s.stats.Failed.Add(1)
	s.log.Warn("encryption job: row left as it is", "job", j.Name, "row", what, "err", err)
}

// pauses reports whether err should pause the job rather than count a
// failed row: the key or metadata service is unavailable, the disk is
// full, the context ended.
func pauses(ctx context.Context, err error) bool {
	return ctx.Err() != nil || errcode.Is(err, errcode.Unavailable) || errcode.Is(err, errcode.StorageFull) ||
		errors.Is(err, context.DeadlineExceeded)
}

// rewrapPage re-wraps one page of the job's current table and moves its
// cursor (to the next table, or the next pass, at the end of one).
func (s *EncryptionJobs) rewrapPage(ctx context.Context, j *meta.EncryptionJob, opts JobOptions) error {
	rw, ok := s.cfg.Keys.(rewrapper)
	if !ok {
		return errcode.New(errcode.Unavailable, "no key provider to re-wrap with")
	}
	target, err := rw.Current(ctx, "")
	if err != nil {
		return err
	}
	after, err := meta.ParseCursor(j.Phase, j.Cursor)
	if err != nil {
		return err
	}
	rows, err := s.meta.ListEnvelopes(ctx, j.Phase, after, target.String(), opts.PageSize)
	if err != nil {
		return err
	}
	for _, row := range rows {
		if err := s.rewrapRow(ctx, rw, j, row); err != nil {
			return err // runJob saves the rows before it; the job resumes at this one
		}
		j.Cursor = row.Ref.Encode()
	}
	if len(rows) == opts.PageSize {
		return nil
	}
	// The end of a table.
	j.Cursor = ""
	if j.Phase < meta.EnvelopeUploadParts {
		j.Phase++
		return nil
	}
	j.Phase = meta.EnvelopeObjects
	if j.PassChanged == 0 && s.now().Sub(j.CreatedAt) >= opts.Settle {
		j.State = meta.JobDone
		return nil
	}
	if j.PassChanged == 0 {
		// Nothing to do now, but writes may still commit under the old
		// version: look again shortly.
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(time.Second, opts.Settle)):
		}
	}
	j.Pass++
	j.PassChanged = 0
	return nil
}

// rewrapRow moves one row's data key to its KEK's current version.
// It returns only errors that pause the job.
func (s *EncryptionJobs) rewrapRow(ctx context.Context, rw rewrapper, j *meta.EncryptionJob, row meta.EnvelopeRow) error {
	what := describeRef(row.Ref)
	env, err := crypt.ParseEnvelope(row.Envelope)
	if err != nil {
		s.jobFailed(j, what, err)
		return nil
	}
	keyID := ""
	switch env.Mode {
	case crypt.ModeServer:
	case crypt.ModeKMSKey:
		keyID = kms.KeyRef{ID: env.KEKID}.Name()
	default:
		j.Skipped++
		s.stats.Skipped.Add(1)
		return nil
	}
	w := kms.Wrapped{KEK: kms.KeyRef{ID: env.KEKID, Version: env.KEKVersion}, Ciphertext: env.WrappedKey}
	out, changed, err := rw.Rewrap(ctx, w, keyID)
	if err != nil {
		if pauses(ctx, err) {
			return err
		}
		s.jobFailed(j, what, err)
		return nil
	}
	if !changed {
		j.Skipped++
		s.stats.Skipped.Add(1)
		return nil
	}
	env.KEKID, env.KEKVersion, env.WrappedKey = out.KEK.ID, out.KEK.Version, out.Ciphertext
	b, err := env.Marshal()
	if err != nil {
		s.jobFailed(j, what, err)
		return nil
	}
	swapped, err := s.meta.SwapEnvelope(ctx, row.Ref, row.Envelope, b, out.KEK.String())
	if err != nil {
		return err
	}
	if !swapped { // overwritten or gone meanwhile: its new row has a new key
		j.Skipped++
		s.stats.Skipped.Add(1)
		return nil
	}
	j.Done++
	j.PassChanged++
	s.stats.Rewrapped.Add(1)
	return nil
}

func describeRef(r meta.EnvelopeRef) string {
	switch r.Table {
	case meta.EnvelopeObjects:
		return fmt.Sprintf("object %s/%q version %s", r.Bucket, r.Key, r.VersionID)
	case meta.EnvelopeObjectParts:
		return fmt.Sprintf("object part %d/%d", r.PartsID, r.Index)
	}
	return fmt.Sprintf("upload part %s/%d", r.UploadID, r.Number)
}

// encryptPage encrypts one page of plaintext objects.
func (s *EncryptionJobs) encryptPage(ctx context.Context, j *meta.EncryptionJob, opts JobOptions) error {
	after, err := meta.ParseCursor(meta.EnvelopeObjects, j.Cursor)
	if err != nil {
		return err
	}
	refs, err := s.meta.ListPlaintextObjects(ctx, j.Bucket, after, opts.PageSize)
	if err != nil {
		return err
	}
	for _, ref := range refs {
		if err := s.encryptObject(ctx, j, ref); err != nil {
			return err
		}
		j.Cursor = ref.Encode()
	}
	if len(refs) < opts.PageSize {
		j.State = meta.JobDone
	}
	return nil
}

// encryptObject encrypts one plaintext object in place: new blobs (or
// inline bytes) encrypted, then the row swapped if it is still the
// version read. It returns only errors that pause the job.
func (s *EncryptionJobs) encryptObject(ctx context.Context, j *meta.EncryptionJob, ref meta.EnvelopeRef) error {
	what := describeRef(ref)
	var o meta.Object
	var err error
	if ref.VersionID == "" { // a cursor saved before versions
		o, err = s.meta.GetObject(ctx, ref.Bucket, ref.Key)
	} else {
		o, err = s.meta.GetObjectVersion(ctx, ref.Bucket, ref.Key, ref.VersionID)
	}
	if errcode.Is(err, errcode.NotFound) {
		j.Skipped++
		s.stats.Skipped.Add(1)
		return nil
	}
	if err != nil {
		return err
	}
	if !isPlaintext(o) {
		j.Skipped++
		s.stats.Skipped.Add(1)
		return nil
	}
	b, err := s.meta.GetBucket(ctx, ref.Bucket)
	if err != nil {
		return err
	}
	sse := bucketSSE(b)
	if sse.Mode == 0 {
		sse.Mode = crypt.ModeServer
	}
	err = s.swapEncrypted(ctx, b, o, sse)
	switch {
	case err == nil:
		j.Done++
		s.stats.Encrypted.Add(1)
	case errcode.As(err).Detail["reason"] == "object_changed":
		j.Skipped++ // overwritten meanwhile: the new version is the writer's
		s.stats.Skipped.Add(1)
	case pauses(ctx, err):
		return err
	default:
		s.jobFailed(j, what, err)
	}
	return nil
}

func isPlaintext(o meta.Object) bool {
	if o.Encryption != nil {
		return false
	}
	for _, p := range o.Parts {
		if p.Encryption != nil {
			return false
		}
	}
	return true
}

// swapEncrypted writes o's bytes encrypted under sse and swaps the row
// if it is still o (Cond.IfVersion): what readers see is kept (size, ETag,
// SHA-256, checksums, content type, user metadata, Last-Modified, the
// part layout of a multipart object). The plaintext read back is checked
// against the object's SHA-256 (a part's against its MD5) before anything
// is swapped: a damaged blob is never sealed as if it were good.
func (s *EncryptionJobs) swapEncrypted(ctx context.Context, b meta.Bucket, o meta.Object, sse SSE) error {
	enc := o
	var staged []string
	var rvs []*reserver
	defer func() {
		for _, rv := range rvs {
			rv.done()
		}
	}()
	writeBlob := func(src string, size int64, r io.Reader) (string, *sealer, error) {
		key := newBlobKey()
		sl, err := s.newSealer(ctx, key, sse)
		if err != nil {
			return "", nil, err
		}
		if sl == nil {
			return "", nil, errcode.New(errcode.Internal, "no encryption chosen")
		}
		st := meta.Staging{BlobKey: key, OwnerID: b.OwnerID}
		if o.VersionID == meta.NullVersion {
			// The rewrite replaces the null version: its credit.
			st.Bucket, st.Key = o.Bucket, o.Key
		}
		rv, n, err := s.writeStaged(ctx, st, r, size, sl)
		if err != nil {
			return "", nil, err
		}
		rvs = append(rvs, rv)
		staged = append(staged, key)
		if n != size {
			return "", nil, errcode.New(errcode.Internal, "blob %s: %d bytes, want %d", src, n, size)
		}
		return key, sl, nil
	}
	fail := func(err error) error {
		s.discardStaged(ctx, staged)
		return err
	}
	switch {
	case len(o.Parts) > 0:
		enc.Parts = make([]meta.ObjectPart, len(o.Parts))
		// Parts without an MD5 of their own (a tus upload's) are checked
		// together against the object's SHA-256 before the row changes.
		var whole hash.Hash
		for _, p := range o.Parts {
			if md5, crc := partDigest(p.ETag); md5 == nil && crc == nil && unhex(o.SHA256) != nil {
				whole = sha256.New()
			}
		}
		for i, p := range o.Parts {
			md5, crc := partDigest(p.ETag)
			src, err := s.blobs.Get(ctx, p.BlobKey, 0, p.Size)
			if err != nil {
				return fail(err)
			}
			var body io.Reader = src
			if whole != nil {
				body = io.TeeReader(src, whole)
			}
			var r io.Reader = integrity.NewReader(body, integrity.Options{Size: p.Size, MD5: md5, NoMD5: md5 == nil, NoSHA256: true})
			if crc != nil {
				// A direct-upload part: its CRC-32C (directETag).
				r = &crcCheck{r: r, size: p.Size, want: binary.BigEndian.Uint32(crc)}
			}
			key, sl, err := writeBlob(p.BlobKey, p.Size, r)
			src.Close()
			if err != nil {
				return fail(err)
			}
			np := p
			np.BlobKey, np.Encryption, np.EncryptionKEK = key, sl.envelope, sl.kek
			enc.Parts[i] = np
		}
		if whole != nil {
			if got, want := whole.Sum(nil), unhex(o.SHA256); !bytes.Equal(got, want) {
				return fail(integrity.Mismatch("sha256", want, got))
			}
		}
	case o.IsInline():
		sl, err := s.newSealer(ctx, inlineIdentity, sse)
		if err != nil {
			return err
		}
		r := integrity.NewReader(bytes.NewReader(o.Inline), integrity.Options{Size: o.Size, SHA256: unhex(o.SHA256), NoMD5: true})
		ct, err := io.ReadAll(sl.encrypt(r))
		if err != nil {
			return err
		}
		enc.Inline, enc.Encryption, enc.EncryptionKEK = ct, sl.envelope, sl.kek
	default:
		src, err := s.blobs.Get(ctx, o.BlobKey, 0, o.Size)
		if err != nil {
			return err
		}
		r := integrity.NewReader(src, integrity.Options{Size: o.Size, SHA256: unhex(o.SHA256), NoMD5: true})
		key, sl, err := writeBlob(o.BlobKey, o.Size, r)
		src.Close()
		if err != nil {
			return fail(err)
		}
		enc.BlobKey, enc.Encryption, enc.EncryptionKEK = key, sl.envelope, sl.kek
	}
	// Single blobs commit their staging with the row; parts' stagings
	// (several for one row) keep their blobs until the row points at
	// them, and are released after.
	put := meta.Put{Object: enc, Cond: meta.Cond{IfVersion: meta.Version(o)}, BucketOwner: b.OwnerID, InPlace: true}
	if enc.BlobKey != "" {
		put.Staged = true
	}
	cctx, cancel := detach.Context(ctx)
	defer cancel()
	if _, err := s.meta.PutObjects(cctx, []meta.Put{put}); err != nil {
		return fail(err)
	}
	if enc.BlobKey != "" {
		s.endStaging(staged...)
	} else {
		s.unstage(ctx, staged...)
	}
	return nil
}

// unhex decodes a stored hex digest (nil if it is not one: not checked).
func unhex(h string) []byte {
	b, err := hex.DecodeString(h)
	if err != nil || len(b) != 32 {
		return nil
	}
	return b
}
