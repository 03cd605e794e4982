package metatest

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// The background jobs of encryption at rest (meta.EncryptionJobs): one
// holder at a time under a lease, a persisted cursor, saves refused to
// anyone who lost the job, and compare-and-swap updates of the rows they
// change.

var encryptionJobTests = []test{
	{name: "Lease", fn: testJobLease},
	{name: "ConcurrentAcquire", fn: testJobConcurrentAcquire},
	{name: "Restart", fn: testJobRestart},
	{name: "BadJobs", fn: testJobBad},
	{name: "EnvelopePages", fn: testEnvelopePages},
	{name: "SwapEnvelope", fn: testSwapEnvelope},
	{name: "IfVersion", fn: testIfVersion},
	{name: "PlaintextObjects", fn: testPlaintextObjects},
}

func testJobLease(t *testing.T, s store) {
	ctx := t.Context()
	now := time.Now()
	if _, ok2, err := s.AcquireJob(ctx, "node-a", now.Add(time.Minute), now); err != nil || ok2 {
		t.Fatalf("AcquireJob with no job: %v, %v; want none", ok2, err)
	}
	j, err := s.StartJob(ctx, meta.EncryptionJob{Name: meta.RewrapJobName, Kind: meta.JobRewrap})
	ok(t, err, "StartJob")
	if j.State != meta.JobRunning || j.Generation != 1 || j.Cursor != "" || j.Pass != 1 || j.LeaseOwner != "" {
		t.Fatalf("new job: %+v", j)
	}
	a, got, err := s.AcquireJob(ctx, "node-a", now.Add(time.Minute), now)
	ok(t, err, "AcquireJob node-a")
	if !got || a.Name != meta.RewrapJobName || a.LeaseOwner != "node-a" {
		t.Fatalf("node-a acquired %v: %+v", got, a)
	}
	if _, got, err := s.AcquireJob(ctx, "node-b", now.Add(time.Minute), now); err != nil || got {
		t.Fatalf("node-b acquired a leased job: %v, %v", got, err)
	}
	// The holder saves progress; anyone else is refused.
	a.Phase, a.Cursor, a.Done, a.Skipped = meta.EnvelopeObjectParts, meta.EnvelopeRef{Table: meta.EnvelopeObjectParts, PartsID: 7, Index: 2}.Encode(), 10, 3
	ok(t, s.SaveJob(ctx, a, "node-a", now.Add(2*time.Minute), now), "SaveJob by the holder")
	wantCode(t, s.SaveJob(ctx, a, "node-b", now.Add(2*time.Minute), now), errcode.Conflict, "SaveJob by another node")
	g, err := s.GetJob(ctx, meta.RewrapJobName)
	ok(t, err, "GetJob")
	if g.Phase != a.Phase || g.Cursor != a.Cursor || g.Done != 10 || g.Skipped != 3 || g.LeaseOwner != "node-a" {
		t.Errorf("after save: %+v, want phase/cursor/counters %v %q 10 3", g, a.Phase, a.Cursor)
	}
	// The lease runs out: another node takes the job where it stopped,
	// and the first can no longer save.
	later := now.Add(3 * time.Minute)
	b, got, err := s.AcquireJob(ctx, "node-b", later.Add(time.Minute), later)
	ok(t, err, "AcquireJob after expiry")
	if !got || b.LeaseOwner != "node-b" || b.Cursor != a.Cursor || b.Phase != a.Phase || b.Done != 10 {
		t.Fatalf("node-b after expiry: %v %+v", got, b)
	}
	wantCode(t, s.SaveJob(ctx, a, "node-a", later.Add(time.Minute), later), errcode.Conflict, "SaveJob after losing the lease")
	// A save that comes after the lease ran out, no one having taken the
	// job meanwhile, records its progress and renews the lease: another
	// node cannot take it then.
	late := later.Add(2 * time.Minute)
	b.Cursor, b.Done = meta.EnvelopeRef{Table: meta.EnvelopeObjectParts, PartsID: 8}.Encode(), 12
	ok(t, s.SaveJob(ctx, b, "node-b", late.Add(time.Minute), late), "SaveJob by the holder past its lease, the job not taken")
	if g, err := s.GetJob(ctx, meta.RewrapJobName); err != nil || g.Cursor != b.Cursor || g.Done != 12 || g.LeaseOwner != "node-b" || !g.LeaseUntil.After(late) {
		t.Errorf("after the late save: %+v, %v; want cursor %q, 12 done, node-b's lease past %v", g, err, b.Cursor, late)
	}
	if _, got, err := s.AcquireJob(ctx, "node-c", late.Add(time.Minute), late); err != nil || got {
		t.Fatalf("node-c took a job whose late save renewed the lease: %v, %v", got, err)
	}
	// Once another node took the expired job, the holder's late save fails.
	expired := late.Add(2 * time.Minute)
	c, got, err := s.AcquireJob(ctx, "node-c", expired.Add(time.Minute), expired)
	if err != nil || !got || c.Done != 12 {
		t.Fatalf("node-c after expiry: %v %+v %v", got, c, err)
	}
	wantCode(t, s.SaveJob(ctx, b, "node-b", expired.Add(time.Minute), expired.Add(time.Minute)), errcode.Conflict, "SaveJob past the lease, the job taken")
	b2, got, err := s.AcquireJob(ctx, "node-b", expired.Add(3*time.Minute), expired.Add(2*time.Minute)) // node-c's lease ran out too
	ok(t, err, "AcquireJob by node-b again")
	if !got {
		t.Fatal("node-b could not take the job back")
	}
	b2.State, b2.Done = meta.JobDone, 20
	ok(t, s.SaveJob(ctx, b2, "node-b", expired.Add(3*time.Minute), expired.Add(2*time.Minute)), "SaveJob done")
	g, err = s.GetJob(ctx, meta.RewrapJobName)
	ok(t, err, "GetJob")
	if g.State != meta.JobDone || g.FinishedAt.IsZero() || g.LeaseOwner != "" || g.Done != 20 {
		t.Errorf("finished job: %+v", g)
	}
	if _, got, err := s.AcquireJob(ctx, "node-c", later.Add(time.Minute), later); err != nil || got {
		t.Errorf("a finished job was acquired: %v, %v", got, err)
	}
	wantCode(t, s.SaveJob(ctx, b2, "node-b", later.Add(time.Minute), later), errcode.Conflict, "SaveJob of a finished job")
}

// testJobConcurrentAcquire: of many nodes asking at once, exactly one
// gets the job.
func testJobConcurrentAcquire(t *testing.T, s store) {
	ctx := t.Context()
	_, err := s.StartJob(ctx, meta.EncryptionJob{Name: meta.RewrapJobName, Kind: meta.JobRewrap})
	ok(t, err, "StartJob")
	now := time.Now()
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		owners []string
	)
	for i := range 8 {
		wg.Go(func() {
			owner := fmt.Sprintf("node-%d", i)
			_, got, err := s.AcquireJob(ctx, owner, now.Add(time.Minute), now)
			if err != nil {
				t.Errorf("AcquireJob %s: %v", owner, err)
			}
			if got {
				mu.Lock()
				owners = append(owners, owner)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(owners) != 1 {
		t.Fatalf("%d nodes acquired the job (%v), want exactly 1", len(owners), owners)
	}
	j, err := s.GetJob(ctx, meta.RewrapJobName)
	ok(t, err, "GetJob")
	if j.LeaseOwner != owners[0] {
		t.Errorf("lease owner %q, want the winner %q", j.LeaseOwner, owners[0])
	}
}

func testJobRestart(t *testing.T, s store) {
	ctx := t.Context()
	now := time.Now()
	_, err := s.StartJob(ctx, meta.EncryptionJob{Name: meta.EncryptJobName("alice"), Kind: meta.JobEncrypt, Bucket: "alice"})
	ok(t, err, "StartJob")
	j, got, err := s.AcquireJob(ctx, "node-a", now.Add(time.Minute), now)
	if err != nil || !got {
		t.Fatalf("AcquireJob: %v %v", got, err)
	}
	j.Cursor, j.Done = meta.EnvelopeRef{Bucket: "alice", Key: "k"}.Encode(), 5
	ok(t, s.SaveJob(ctx, j, "node-a", now.Add(time.Minute), now), "SaveJob")
	// Restarted (coffer encrypt again): from the start, a new generation;
	// the worker of the old one cannot save over it.
	r, err := s.StartJob(ctx, meta.EncryptionJob{Name: meta.EncryptJobName("alice"), Kind: meta.JobEncrypt, Bucket: "alice"})
	ok(t, err, "StartJob again")
	if r.Generation != 2 || r.Cursor != "" || r.Done != 0 || r.State != meta.JobRunning {
		t.Errorf("restarted job: %+v", r)
	}
	wantCode(t, s.SaveJob(ctx, j, "node-a", now.Add(time.Minute), now), errcode.Conflict, "SaveJob of the old generation")
	_, err = s.StartJob(ctx, meta.EncryptionJob{Name: meta.EncryptJobName(""), Kind: meta.JobEncrypt})
	ok(t, err, "StartJob for every bucket")
	js, err := s.ListJobs(ctx)
	ok(t, err, "ListJobs")
	if len(js) != 2 || js[0].Name != "encrypt:" || js[1].Name != "encrypt:alice" || js[1].Bucket != "alice" {
		t.Errorf("ListJobs: %+v", js)
	}
}

func testJobBad(t *testing.T, s store) {
	ctx := t.Context()
	for _, j := range []meta.EncryptionJob{
		{Name: "rewrap", Kind: "encrypt"}, {Name: "x", Kind: meta.JobRewrap}, {Name: "encrypt:a", Kind: meta.JobEncrypt, Bucket: "b"},
		{Name: "rewrap", Kind: meta.JobRewrap, Bucket: "b"}, {Name: "delete", Kind: "delete"},
	} {
		_, err := s.StartJob(ctx, j)
		wantCode(t, err, errcode.InvalidArgument, fmt.Sprintf("StartJob(%+v)", j))
	}
	if js, err := s.ListJobs(ctx); err != nil || len(js) != 0 {
		t.Errorf("refused jobs stored: %+v, %v", js, err)
	}
	_, err := s.GetJob(ctx, "rewrap")
	wantCode(t, err, errcode.NotFound, "GetJob of a missing job")
	now := time.Now()
	_, err = s.StartJob(ctx, meta.EncryptionJob{Name: meta.RewrapJobName, Kind: meta.JobRewrap})
	ok(t, err, "StartJob")
	j, _, err := s.AcquireJob(ctx, "a", now.Add(time.Minute), now)
	ok(t, err, "AcquireJob")
	bad := j
	bad.Cursor = "{not json"
	wantCode(t, s.SaveJob(ctx, bad, "a", now.Add(time.Minute), now), errcode.InvalidArgument, "SaveJob with a malformed cursor")
	bad = j
	bad.Cursor = meta.EnvelopeRef{Table: meta.EnvelopeUploadParts, UploadID: "u"}.Encode() // another table's
	wantCode(t, s.SaveJob(ctx, bad, "a", now.Add(time.Minute), now), errcode.InvalidArgument, "SaveJob with a cursor of another phase")
	bad = j
	bad.State = "paused"
	wantCode(t, s.SaveJob(ctx, bad, "a", now.Add(time.Minute), now), errcode.InvalidArgument, "SaveJob with an unknown state")
	if g, err := s.GetJob(ctx, "rewrap"); err != nil || g.Cursor != "" || g.State != meta.JobRunning {
		t.Errorf("after refused saves: %+v, %v", g, err)
	}
}

// kekObjects stores, in bucket alice: objects and parts under KEK
// versions 1 and 2, an SSE-C one (KEK ""), and a plaintext one.
func kekObjects(t *testing.T, s store) (v1 []meta.Object) {
	addUser(t, s, "alice", 0)
	for i, kek := range []string{"local:default#1", "local:default#2", "local:default#1", "", "local:default#1"} {
		o := obj("alice", fmt.Sprintf("k%d\x00\xff", i), 10)
		o.Encryption, o.EncryptionKEK = envelope(o.Key), kek
		if i == 4 {
			o = inlineObj("alice", "inline", []byte("ciphertext"))
			o.Encryption, o.EncryptionKEK = envelope("inline"), kek
		}
		put1(t, s, o)
		if kek == "local:default#1" {
			v1 = append(v1, o)
		}
	}
	put1(t, s, obj("alice", "plain", 5))
	return v1
}

func testEnvelopePages(t *testing.T, s store) {
	ctx := t.Context()
	v1 := kekObjects(t, s)
	// Pages of one row: the rows not under version 2, in key order.
	var got []string
	var after *meta.EnvelopeRef
	for range 10 {
		rows, err := s.ListEnvelopes(ctx, meta.EnvelopeObjects, after, "local:default#2", 1)
		ok(t, err, "ListEnvelopes")
		if len(rows) == 0 {
			break
		}
		if len(rows) != 1 {
			t.Fatalf("ListEnvelopes limit 1: %d rows", len(rows))
		}
		r := rows[0]
		got = append(got, r.Ref.Key)
		o, err := s.GetObject(ctx, "alice", r.Ref.Key)
		ok(t, err, "GetObject")
		if !bytes.Equal(r.Envelope, o.Encryption) || r.KEK != o.EncryptionKEK || r.Ref.Bucket != "alice" || r.Ref.Table != meta.EnvelopeObjects {
			t.Errorf("row %+v: envelope %q, KEK %q; the object has %q, %q", r.Ref, r.Envelope, r.KEK, o.Encryption, o.EncryptionKEK)
		}
		// The cursor goes through its stored form.
		after, err = meta.ParseCursor(meta.EnvelopeObjects, r.Ref.Encode())
		ok(t, err, "ParseCursor")
	}
	want := []string{"inline", "k0\x00\xff", "k2\x00\xff"}
	if fmt.Sprint(got) != fmt.Sprint(want) || len(v1) != 3 {
		t.Errorf("rows under a KEK other than version 2: %q, want %q", got, want)
	}

	// Parts of multipart objects and of uploads in progress.
	u := addUpload(t, s, "alice", "big")
	var ps []meta.Part
	for i := range 3 {
		p := part(u.ID, i+1, 5<<20)
		p.Encryption, p.EncryptionKEK = envelope("up"), fmt.Sprintf("local:default#%d", 1+i%2)
		ps = append(ps, putPart(t, s, p))
	}
	rows, err := s.ListEnvelopes(ctx, meta.EnvelopeUploadParts, nil, "local:default#2", 0)
	ok(t, err, "ListEnvelopes upload parts")
	if len(rows) != 2 || rows[0].Ref.UploadID != u.ID || rows[0].Ref.Number != 1 || rows[1].Ref.Number != 3 || !bytes.Equal(rows[1].Envelope, ps[2].Encryption) {
		t.Errorf("upload parts under version 1: %+v", rows)
	}
	rows, err = s.ListEnvelopes(ctx, meta.EnvelopeUploadParts, &rows[0].Ref, "local:default#2", 0)
	ok(t, err, "ListEnvelopes upload parts after the first")
	if len(rows) != 1 || rows[0].Ref.Number != 3 {
		t.Errorf("upload parts after part 1: %+v", rows)
	}
	_, err = s.CompleteUpload(ctx, u.ID, completion(3), completeOf(ps...), 0, meta.Cond{})
	ok(t, err, "CompleteUpload")
	rows, err = s.ListEnvelopes(ctx, meta.EnvelopeObjectParts, nil, "local:default#2", 0)
	ok(t, err, "ListEnvelopes object parts")
	if len(rows) != 2 || rows[1].Ref.Index-rows[0].Ref.Index != 2 || rows[0].Ref.PartsID != rows[1].Ref.PartsID || rows[0].Ref.PartsID == 0 || !bytes.Equal(rows[0].Envelope, ps[0].Encryption) {
		t.Errorf("object parts under version 1: %+v", rows)
	}
	usage, err := s.KEKUsage(ctx)
	ok(t, err, "KEKUsage")
	if usage["local:default#1"] != 5 || usage["local:default#2"] != 2 || len(usage) != 2 {
		t.Errorf("KEKUsage: %v, want 5 under #1 (3 objects, 2 parts), 2 under #2", usage)
	}
	_, err = s.ListEnvelopes(ctx, meta.EnvelopeTable(9), nil, "", 0)
	wantCode(t, err, errcode.InvalidArgument, "ListEnvelopes of an unknown table")
}

func testSwapEnvelope(t *testing.T, s store) {
	ctx := t.Context()
	v1 := kekObjects(t, s)
	o := v1[0]
	ref := meta.EnvelopeRef{Table: meta.EnvelopeObjects, Bucket: o.Bucket, Key: o.Key, VersionID: meta.NullVersion}
	next := envelope("rewrapped")
	swapped, err := s.SwapEnvelope(ctx, ref, o.Encryption, next, "local:default#2")
	ok(t, err, "SwapEnvelope")
	if !swapped {
		t.Fatal("SwapEnvelope of the current envelope did not swap")
	}
	o.Encryption, o.EncryptionKEK = next, "local:default#2"
	wantObject(t, s, o)
	// The old envelope again (a worker that read the row before): no.
	swapped, err = s.SwapEnvelope(ctx, ref, v1[0].Encryption, envelope("stale"), "local:default#3")
	ok(t, err, "SwapEnvelope stale")
	if swapped {
		t.Error("SwapEnvelope with a stale old envelope swapped")
	}
	wantObject(t, s, o)
	// The object was overwritten meanwhile: its new row is left alone.
	over := encrypted(obj("alice", v1[1].Key, 3))
	put1(t, s, over)
	swapped, err = s.SwapEnvelope(ctx, meta.EnvelopeRef{Table: meta.EnvelopeObjects, Bucket: "alice", Key: v1[1].Key, VersionID: meta.NullVersion}, v1[1].Encryption, envelope("x"), "local:default#2")
	ok(t, err, "SwapEnvelope of an overwritten object")
	if swapped {
		t.Error("SwapEnvelope clobbered an overwrite")
	}
	wantObject(t, s, over)
	// Gone.
	swapped, err = s.SwapEnvelope(ctx, meta.EnvelopeRef{Table: meta.EnvelopeObjects, Bucket: "alice", Key: "nope", VersionID: meta.NullVersion}, v1[1].Encryption, envelope("x"), "k")
	if err != nil || swapped {
		t.Errorf("SwapEnvelope of a missing row: %v, %v", swapped, err)
	}
	// An upload's part.
	u := addUpload(t, s, "alice", "up")
	p := part(u.ID, 1, 100)
	p.Encryption, p.EncryptionKEK = envelope("part"), "local:default#1"
	putPart(t, s, p)
	swapped, err = s.SwapEnvelope(ctx, meta.EnvelopeRef{Table: meta.EnvelopeUploadParts, UploadID: u.ID, Number: 1}, p.Encryption, next, "local:default#2")
	if err != nil || !swapped {
		t.Fatalf("SwapEnvelope of an upload part: %v, %v", swapped, err)
	}
	listed, _, err := s.ListParts(ctx, u.ID, 0, 0)
	ok(t, err, "ListParts")
	if len(listed) != 1 || !bytes.Equal(listed[0].Encryption, next) || listed[0].EncryptionKEK != "local:default#2" {
		t.Errorf("upload part after swap: %+v", listed)
	}
}

func testIfVersion(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	for _, o := range []meta.Object{obj("alice", "blob", 10), inlineObj("alice", "inline", []byte("0123"))} {
		put1(t, s, o)
		cur, err := s.GetObject(ctx, "alice", o.Key)
		ok(t, err, "GetObject")
		v := meta.Version(cur)
		// The same bytes, now encrypted, in place of that version.
		enc := cur
		if enc.BlobKey != "" {
			enc.BlobKey = fmt.Sprintf("blob/enc-%d", seq.Add(1))
		} else {
			enc.Inline = []byte("ciphertext-of-0123")
		}
		enc.Encryption, enc.EncryptionKEK = envelope("enc"), "local:default#1"
		// An overwrite between the read and the swap wins.
		over := obj("alice", o.Key, 10)
		over.ModTime = cur.ModTime
		put1(t, s, over)
		_, err = s.PutObjects(ctx, []meta.Put{{Object: enc, Cond: meta.Cond{IfVersion: v}}})
		wantCode(t, err, errcode.PreconditionFailed, "PutObjects IfVersion after an overwrite")
		wantObject(t, s, over)
		// Of the current version, the swap succeeds and keeps what
		// readers see (the store keeps the given ModTime).
		cur, err = s.GetObject(ctx, "alice", o.Key)
		ok(t, err, "GetObject")
		enc = cur
		enc.BlobKey = fmt.Sprintf("blob/enc-%d", seq.Add(1))
		enc.Encryption, enc.EncryptionKEK = envelope("enc"), "local:default#1"
		olds, err := s.PutObjects(ctx, []meta.Put{{Object: enc, Cond: meta.Cond{IfVersion: meta.Version(cur)}}})
		ok(t, err, "PutObjects IfVersion")
		wantObject(t, s, enc)
		if len(olds) != 1 || olds[0].Replaced.BlobKey != over.BlobKey {
			t.Errorf("replaced: %+v", olds)
		}
		_, err = s.PutObjects(ctx, []meta.Put{{Object: enc, Cond: meta.Cond{IfVersion: meta.Version(cur)}}})
		wantCode(t, err, errcode.PreconditionFailed, "PutObjects IfVersion of a replaced version")
	}
	_, err := s.PutObjects(ctx, []meta.Put{{Object: obj("alice", "missing", 1), Cond: meta.Cond{IfVersion: "v"}}})
	wantCode(t, err, errcode.PreconditionFailed, "PutObjects IfVersion of a missing object")
	wantMissing(t, s, "alice", "missing")
}

func testPlaintextObjects(t *testing.T, s store) {
	ctx := t.Context()
	kekObjects(t, s) // alice: "plain" is the only plaintext object
	addUser(t, s, "bob", 0)
	put1(t, s, inlineObj("bob", "b-inline", []byte("x")))
	put1(t, s, obj("bob", "b-blob", 3))
	// A multipart object with plaintext parts, and one with encrypted ones.
	for i, enc := range []bool{false, true} {
		o := obj("bob", fmt.Sprintf("multi%d", i), 20)
		o.BlobKey = ""
		for j := range 2 {
			p := meta.ObjectPart{BlobKey: fmt.Sprintf("blob/mp-%d", seq.Add(1)), Size: 10, ETag: fmt.Sprintf("%032x", j)}
			if enc {
				p.Encryption, p.EncryptionKEK = envelope("mp"), "local:default#1"
			}
			o.Parts = append(o.Parts, p)
		}
		o.ETag, o.Checksum = "0123456789abcdef0123456789abcdef-2", meta.Checksum{}
		put1(t, s, o)
	}
	all := func(bucket string, limit int) []string {
		var out []string
		var after *meta.EnvelopeRef
		for range 20 {
			refs, err := s.ListPlaintextObjects(ctx, bucket, after, limit)
			ok(t, err, "ListPlaintextObjects")
			if len(refs) == 0 {
				return out
			}
			for _, r := range refs {
				out = append(out, r.Bucket+"/"+r.Key)
			}
			after = &refs[len(refs)-1]
		}
		return out
	}
	if got, want := fmt.Sprint(all("", 2)), "[alice/plain bob/b-blob bob/b-inline bob/multi0]"; got != want {
		t.Errorf("plaintext objects: %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(all("bob", 1)), "[bob/b-blob bob/b-inline bob/multi0]"; got != want {
		t.Errorf("plaintext objects of bob: %s, want %s", got, want)
	}
}
