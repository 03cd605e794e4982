package object

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/blob"
	"github.com/coffer-storage/coffer/internal/config"
	"github.com/coffer-storage/coffer/internal/crypt"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/kms"
	"github.com/coffer-storage/coffer/internal/meta"
)

// Background jobs (encryptionjobs.go): the re-wrap after a rotation and the
// encryption of plaintext objects, run to their end, resumed after a
// crash, and never clobbering a concurrent overwrite.

// fastJobs are the default JobOptions (config.Defaults()), faster.
func fastJobs(owner string) JobOptions {
	o := JobOptionsFrom(config.Defaults())
	o.Owner, o.Poll, o.Settle, o.Lease = owner, 10*time.Millisecond, 100*time.Millisecond, time.Second
	return o
}

// runJobs runs RunEncryptionJobs until job name is done (or fails the test).
func runJobs(t *testing.T, svc *Service, name string, opts JobOptions) meta.EncryptionJob {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); svc.RunEncryptionJobs(ctx, opts) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		j, err := svc.Job(t.Context(), name)
		if err != nil {
			t.Fatal(err)
		}
		if j.State == meta.JobDone {
			return j
		}
		time.Sleep(20 * time.Millisecond)
	}
	j, _ := svc.Job(t.Context(), name)
	t.Fatalf("job %s did not finish: %+v", name, j)
	return meta.EncryptionJob{}
}

// blobDigests maps every blob to the SHA-256 of its bytes.
func blobDigests(t *testing.T, b blob.Store) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	b.List(t.Context(), "", func(i blob.Info) error {
		rc, err := b.Get(t.Context(), i.Key, 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(rc)
		rc.Close()
		out[i.Key] = sha256.Sum256(data)
		return nil
	})
	return out
}

// mixedObjects stores a single-blob, an inline and a multipart object in
// alice's bucket through svc, and returns their bytes by key.
func mixedObjects(t *testing.T, f *fixture, svc *Service, tag string) map[string][]byte {
	t.Helper()
	ctx := t.Context()
	out := map[string][]byte{}
	for key, n := range map[string]int{"single": 200_000, "inline": 100} {
		data := markerData(n)
		data[0] = tag[0]
		if _, err := svc.Put(ctx, f.alice, PutInput{Bucket: "alice-bucket", Key: tag + key, Body: bytes.NewReader(data), Size: int64(n), ContentType: "text/x-" + key}); err != nil {
			t.Fatal(err)
		}
		out[tag+key] = data
	}
	u, err := svc.CreateUpload(ctx, f.alice, CreateUploadInput{Bucket: "alice-bucket", Key: tag + "multi"})
	if err != nil {
		t.Fatal(err)
	}
	var data []byte
	var parts []meta.CompletePart
	for i, n := range []int{MinPartSize, 1000} {
		b := markerData(n)
		b[0] = byte('a' + i)
		p, err := svc.PutPart(ctx, f.alice, PartInput{Bucket: "alice-bucket", Key: tag + "multi", UploadID: u.ID, Number: i + 1, Body: bytes.NewReader(b), Size: int64(n)})
		if err != nil {
			t.Fatal(err)
		}
		data = append(data, b...)
		parts = append(parts, meta.CompletePart{Number: i + 1, ETag: p.ETag})
	}
	if _, err := svc.CompleteUpload(ctx, f.alice, "alice-bucket", tag+"multi", u.ID, parts, meta.Cond{}); err != nil {
		t.Fatal(err)
	}
	out[tag+"multi"] = data
	return out
}

func TestEncryptJob(t *testing.T) {
	f, keys := encFixture(t)
	ctx := t.Context()
	plain := New(f.meta, f.blobs, testConfig(func(c *Config) { c.GarbageGrace, c.Keys = time.Nanosecond, keys }), nil)
	objs := mixedObjects(t, f, plain, "p-")
	before := map[string]meta.Object{}
	for key := range objs {
		o, err := f.meta.GetObject(ctx, "alice-bucket", key)
		if err != nil || !isPlaintext(o) {
			t.Fatalf("setup: %s: %v, plaintext %v", key, err, isPlaintext(o))
		}
		before[key] = o
	}
	if _, err := plain.StartEncrypt(ctx, "nope"); !errcode.Is(err, errcode.NotFound) {
		t.Errorf("StartEncrypt of a missing bucket: %v, want NotFound", err)
	}
	if _, err := plain.StartEncrypt(ctx, "alice-bucket"); err != nil {
		t.Fatal(err)
	}
	j := runJobs(t, plain, meta.EncryptJobName("alice-bucket"), fastJobs("a"))
	if j.Done != 3 || j.Failed != 0 {
		t.Errorf("job: %+v, want 3 done, none failed", j)
	}
	if _, err := plain.CollectGarbage(ctx); err != nil { // the replaced plaintext blobs
		t.Fatal(err)
	}
	for key, data := range objs {
		wantNoMarker(t, f, "alice-bucket", key)
		wantRanges(t, f, "alice-bucket", key, data, MinPartSize)
		o, err := f.meta.GetObject(ctx, "alice-bucket", key)
		if err != nil {
			t.Fatal(err)
		}
		if EncryptionOf(o).Mode == 0 {
			t.Errorf("%s: still plaintext", key)
		}
		b := before[key]
		if o.ETag != b.ETag || o.SHA256 != b.SHA256 || o.Size != b.Size || o.ContentType != b.ContentType ||
			!o.ModTime.Equal(b.ModTime) || o.Checksum != b.Checksum || len(o.Parts) != len(b.Parts) {
			t.Errorf("%s: what readers see changed:\n got %+v\nwant %+v", key, o, b)
		}
	}
	// bob's bucket was not the job's.
	if _, err := plain.Put(ctx, f.bob, PutInput{Bucket: "bob-bucket", Key: "x", Body: bytes.NewReader(markerData(100_000)), Size: 100_000}); err != nil {
		t.Fatal(err)
	}
	if refs, err := f.meta.ListPlaintextObjects(ctx, "", nil, 0); err != nil || len(refs) != 1 || refs[0].Bucket != "bob-bucket" {
		t.Errorf("plaintext objects left: %+v, %v; want bob's only", refs, err)
	}
}

// TestEncryptSwapLosesToOverwrite: an object overwritten after the job
// read it keeps the overwrite; the job's encrypted blob is discarded.
func TestEncryptSwapLosesToOverwrite(t *testing.T) {
	f, keys := encFixture(t)
	ctx := t.Context()
	plain := New(f.meta, f.blobs, testConfig(func(c *Config) { c.GarbageGrace, c.Keys, c.InlineMax = time.Nanosecond, keys, 0 }), nil)
	if _, err := plain.Put(ctx, f.alice, PutInput{Bucket: "alice-bucket", Key: "k", Body: bytes.NewReader(markerData(1000)), Size: 1000}); err != nil {
		t.Fatal(err)
	}
	stale, err := f.meta.GetObject(ctx, "alice-bucket", "k")
	if err != nil {
		t.Fatal(err)
	}
	newer := []byte("the overwrite")
	if _, err := plain.Put(ctx, f.alice, PutInput{Bucket: "alice-bucket", Key: "k", Body: bytes.NewReader(newer), Size: int64(len(newer))}); err != nil {
		t.Fatal(err)
	}
	if _, err := plain.CollectGarbage(ctx); err != nil {
		t.Fatal(err)
	}
	blobsBefore := blobDigests(t, f.blobs)
	b, _ := f.meta.GetBucket(ctx, "alice-bucket")
	// The stale version's blob is gone: use the current one's bytes with
	// the stale row (what a job that read the row just before sees).
	cur, _ := f.meta.GetObject(ctx, "alice-bucket", "k")
	stale.BlobKey, stale.Size, stale.SHA256 = cur.BlobKey, cur.Size, cur.SHA256
	err = plain.swapEncrypted(ctx, b, stale, SSE{Mode: crypt.ModeServer})
	if errcode.As(err).Detail["reason"] != "object_changed" {
		t.Fatalf("swap of a stale version: %v, want object_changed", err)
	}
	if got := f.read(t, f.alice, "alice-bucket", "k"); got != string(newer) {
		t.Errorf("after the failed swap: %q, want the overwrite", got)
	}
	if after := blobDigests(t, f.blobs); len(after) != len(blobsBefore) {
		t.Errorf("blobs: %d after, %d before: the discarded encrypted blob was left", len(after), len(blobsBefore))
	}
}

func TestRewrapJob(t *testing.T) {
	f, keys := encFixture(t)
	ctx := t.Context()
	objs := mixedObjects(t, f, f.svc, "e-")
	// An upload in progress with an encrypted part (S3 multipart, tus).
	u, err := f.svc.CreateUpload(ctx, f.alice, CreateUploadInput{Bucket: "alice-bucket", Key: "pending"})
	if err != nil {
		t.Fatal(err)
	}
	part := markerData(1000)
	if _, err := f.svc.PutPart(ctx, f.alice, PartInput{Bucket: "alice-bucket", Key: "pending", UploadID: u.ID, Number: 1, Body: bytes.NewReader(part), Size: 1000}); err != nil {
		t.Fatal(err)
	}
	old := keys.Default().String()
	usage, err := f.svc.KEKUsage(ctx)
	if err != nil || usage[old] != 5 { // single, inline, 2 object parts, 1 upload part
		t.Fatalf("KEKUsage before: %v, %v; want 5 under %s", usage, err, old)
	}
	blobsBefore := blobDigests(t, f.blobs)
	cur, err := keys.Rotate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.StartRewrap(ctx); err != nil {
		t.Fatal(err)
	}
	j := runJobs(t, f.svc, meta.RewrapJobName, fastJobs("a"))
	if j.Done != 5 || j.Failed != 0 || j.Pass < 2 {
		t.Errorf("job: %+v, want 5 done, none failed, a second pass that changed nothing", j)
	}
	usage, err = f.svc.KEKUsage(ctx)
	if err != nil || usage[old] != 0 || usage[cur.String()] != 5 {
		t.Errorf("KEKUsage after: %v, %v; want all 5 under %s", usage, err, cur)
	}
	// Not a blob byte rewritten.
	if after := blobDigests(t, f.blobs); fmt.Sprint(after) != fmt.Sprint(blobsBefore) {
		t.Error("the re-wrap changed blobs")
	}
	for key, data := range objs {
		wantRanges(t, f, "alice-bucket", key, data, MinPartSize)
	}
	// The upload completes and reads back with its re-wrapped part.
	ps, _, err := f.meta.ListParts(ctx, u.ID, 0, 0)
	if err != nil || len(ps) != 1 {
		t.Fatal(ps, err)
	}
	if _, err := f.svc.CompleteUpload(ctx, f.alice, "alice-bucket", "pending", u.ID, []meta.CompletePart{{Number: 1, ETag: ps[0].ETag}}, meta.Cond{}); err != nil {
		t.Fatal(err)
	}
	wantRanges(t, f, "alice-bucket", "pending", part)
}

// TestJobResumes: a node that dies mid-job (its context ends after a
// page) leaves the cursor; another node takes the job once the lease ran
// out and finishes it.
func TestJobResumes(t *testing.T) {
	f, keys := encFixture(t)
	ctx := t.Context()
	want := plaintextKeys(t, f, keys, 12)
	// Node a: pages of 2, and it dies after its first save.
	aCtx, kill := context.WithCancel(ctx)
	a := New(f.meta, f.blobs, testConfig(func(c *Config) { c.GarbageGrace, c.Keys = time.Nanosecond, keys }), nil)
	opts := fastJobs("node-a")
	opts.PageSize, opts.Pause, opts.Lease = 2, time.Hour, 300*time.Millisecond
	done := make(chan struct{})
	go func() { defer close(done); a.RunEncryptionJobs(aCtx, opts) }()
	var j meta.EncryptionJob
	for j.Cursor == "" {
		time.Sleep(10 * time.Millisecond)
		var err error
		if j, err = a.Job(ctx, meta.EncryptJobName("")); err != nil {
			t.Fatal(err)
		}
	}
	// Its pause between pages outlasts the lease many times: the
	// heartbeat keeps the job its own. Seen in the lease as stored, not
	// after a sleep a busy machine's scheduler could outlast: renewed
	// past three leases beyond the page's save, the progress unchanged,
	// and another node asking at the last renewal is refused.
	first := j
	for deadline := time.Now().Add(30 * time.Second); !j.LeaseUntil.After(first.LeaseUntil.Add(3 * opts.Lease)); {
		if time.Now().After(deadline) {
			t.Fatalf("the heartbeat did not renew the lease during the pause: %+v, after the page %+v", j, first)
		}
		time.Sleep(10 * time.Millisecond)
		var err error
		if j, err = a.Job(ctx, meta.EncryptJobName("")); err != nil {
			t.Fatal(err)
		}
	}
	if j.Done != first.Done || j.Cursor != first.Cursor || j.LeaseOwner != "node-a" {
		t.Fatalf("the heartbeat saved other progress: %+v, after the page %+v", j, first)
	}
	if other, got, err := f.meta.AcquireJob(ctx, "node-x", time.Now().Add(time.Minute), j.UpdatedAt); err != nil || got {
		t.Fatalf("another node took the job from a live holder: %v %+v %v", got, other, err)
	}
	kill()
	<-done
	if first.State != meta.JobRunning || first.Done != 2 || first.LeaseOwner != "node-a" {
		t.Fatalf("after node a's first page: %+v", first)
	}
	// Node b: waits out a's lease, then resumes from the cursor.
	b := New(f.meta, f.blobs, testConfig(func(c *Config) { c.GarbageGrace, c.Keys = time.Nanosecond, keys }), nil)
	bo := fastJobs("node-b")
	bo.PageSize = 2
	j = runJobs(t, b, meta.EncryptJobName(""), bo)
	if j.Done != 12 || j.Failed != 0 || j.Skipped != 0 {
		t.Errorf("resumed job: %+v, want 12 done (2 by a, 10 by b), none redone", j)
	}
	if refs, err := f.meta.ListPlaintextObjects(ctx, "", nil, 0); err != nil || len(refs) != 0 {
		t.Errorf("plaintext left: %v %v", refs, err)
	}
	for key, data := range want {
		wantRanges(t, f, "alice-bucket", key, data)
	}
}

// stepKeys is flakyKeys calling at before it hands out the n-th data key
// (from 1): a hook into the middle of a job's page (fault injection).
type stepKeys struct {
	*flakyKeys
	n  atomic.Int64
	at func(n int64) error
}

func (k *stepKeys) GenerateDataKey(ctx context.Context, id string) (kms.DataKey, error) {
	if err := k.at(k.n.Add(1)); err != nil {
		return kms.DataKey{}, err
	}
	return k.flakyKeys.GenerateDataKey(ctx, id)
}

// plaintextKeys stores n small plaintext objects k00, k01, ... in alice's
// bucket, starts the encryption of every bucket, and returns the objects'
// bytes by key.
func plaintextKeys(t *testing.T, f *fixture, keys *flakyKeys, n int) map[string][]byte {
	t.Helper()
	plain := New(f.meta, f.blobs, testConfig(func(c *Config) { c.GarbageGrace, c.Keys = time.Nanosecond, keys }), nil)
	out := map[string][]byte{}
	for i := range n {
		data := markerData(100 + i)
		key := fmt.Sprintf("k%02d", i)
		if _, err := plain.Put(t.Context(), f.alice, PutInput{Bucket: "alice-bucket", Key: key, Body: bytes.NewReader(data), Size: int64(len(data))}); err != nil {
			t.Fatal(err)
		}
		out[key] = data
	}
	if _, err := plain.StartEncrypt(t.Context(), ""); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestJobLateSaveKeepsItsPage: a page that outlasts the lease (the node's
// clock jumps an hour during it, as a stalled process or a loaded
// machine's heartbeat sees it) is saved late, no other node having taken
// the job meanwhile, and its rows stay counted. Before, the late save
// failed as lease_lost, the node took its job back from the cursor saved
// before the page, and the page's objects, encrypted and so no longer
// listed, were never counted (TestJobResumes in CI under load: 10 done of
// 12, the cursor at the end).
func TestJobLateSaveKeepsItsPage(t *testing.T) {
	f, keys := encFixture(t)
	plaintextKeys(t, f, keys, 4)
	var skew atomic.Int64
	sk := &stepKeys{flakyKeys: keys, at: func(n int64) error {
		if n == 1 {
			skew.Store(int64(time.Hour))
		}
		return nil
	}}
	a := New(f.meta, f.blobs, testConfig(func(c *Config) { c.GarbageGrace, c.Keys = time.Nanosecond, sk }), nil)
	a.now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	opts := fastJobs("node-a")
	opts.PageSize, opts.Lease = 2, time.Minute
	j := runJobs(t, a, meta.EncryptJobName(""), opts)
	if j.Done != 4 || j.Skipped != 0 || j.Failed != 0 {
		t.Errorf("job: %+v, want 4 done: the late page counted", j)
	}
	if refs, err := f.meta.ListPlaintextObjects(t.Context(), "", nil, 0); err != nil || len(refs) != 0 {
		t.Errorf("plaintext left: %v %v", refs, err)
	}
}

// TestJobPauseKeepsItsRows: the key service goes down at the second
// object of a page; the job pauses and resumes after the object it
// encrypted before, which stays counted. Before, the pause dropped the
// page's progress: the job resumed from the cursor saved before the page
// and the object already encrypted, no longer listed, was never counted.
func TestJobPauseKeepsItsRows(t *testing.T) {
	f, keys := encFixture(t)
	plaintextKeys(t, f, keys, 4)
	sk := &stepKeys{flakyKeys: keys, at: func(n int64) error {
		if n == 2 {
			return errcode.Retry(errcode.Unavailable, time.Second, "key service unreachable")
		}
		return nil
	}}
	a := New(f.meta, f.blobs, testConfig(func(c *Config) { c.GarbageGrace, c.Keys = time.Nanosecond, sk }), nil)
	opts := fastJobs("node-a")
	opts.PageSize = 2
	j := runJobs(t, a, meta.EncryptJobName(""), opts)
	if j.Done != 4 || j.Skipped != 0 || j.Failed != 0 {
		t.Errorf("job: %+v, want 4 done: the row before the pause counted", j)
	}
	if n := sk.n.Load(); n != 5 {
		t.Errorf("%d data keys asked for, want 5 (4 objects, one asked again after the pause)", n)
	}
	if refs, err := f.meta.ListPlaintextObjects(t.Context(), "", nil, 0); err != nil || len(refs) != 0 {
		t.Errorf("plaintext left: %v %v", refs, err)
	}
}
