package object

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/blob/faultblob"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// TestScrub: a pass checks every version's blobs against their records
// and finds, counts and records a blob deleted behind Coffer's back
// (missing), one with a flipped byte (corrupt) and one the store fails to
// read (EIO: unreadable); a second version of a key is checked too, and
// good objects (blob, inline) are not reported. An interrupted run
// resumes from its saved cursor without counting anything twice; while
// one owner holds the lease another is refused; a repaired blob loses
// its finding on the next pass.
func TestScrub(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 0)
	fb := faultblob.Wrap(f.blobs)
	f.svc = New(f.meta, fb, testConfig(func(c *Config) { c.InlineMax = 100 }), nil)
	if err := f.meta.SetBucketVersioning(ctx, "alice-bucket", meta.VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	data := strings.Repeat("scrub me ", 1000)
	objs := map[string]meta.Object{}
	for i := range 6 {
		k := fmt.Sprintf("k%d", i)
		o, err := f.put(t, f.alice, "alice-bucket", k, data+k)
		if err != nil {
			t.Fatal(err)
		}
		objs[k] = o
	}
	old := objs["k5"]
	if objs["k5"], _ = f.put(t, f.alice, "alice-bucket", "k5", data+"v2"); objs["k5"].VersionID == old.VersionID {
		t.Fatal("no second version")
	}
	if _, err := f.put(t, f.alice, "alice-bucket", "small", "inline bytes"); err != nil {
		t.Fatal(err)
	}
	// Damage: k1 missing, k2 flipped, the old version of k5 unreadable.
	if err := f.blobs.Delete(ctx, objs["k1"].BlobKey); err != nil {
		t.Fatal(err)
	}
	bad := "X" + (data + "k2")[1:]
	if _, err := f.blobs.Put(ctx, objs["k2"].BlobKey, strings.NewReader(bad), int64(len(bad))); err != nil {
		t.Fatal(err)
	}
	fb.Add(faultblob.Rule{Op: faultblob.Get, Prefix: old.BlobKey, After: 100})

	w := f.svc.Scrubber()
	// A first pass interrupted after its first save.
	cctx, cancel := context.WithCancel(ctx)
	opts := ScrubOptions{Owner: "a", PageSize: 2, Progress: func(ScrubProgress) { cancel() }}
	if _, err := w.Scrub(cctx, opts); err == nil {
		t.Fatal("interrupted pass: no error")
	}
	run, err := f.meta.GetScrubRun(ctx)
	if err != nil || run.Cursor == "" || run.LeaseOwner != "a" {
		t.Fatalf("run after an interruption: %+v, %v; want a cursor leased to a", run, err)
	}
	if _, err := w.Scrub(ctx, ScrubOptions{Owner: "b"}); errcode.Of(err) != errcode.Conflict {
		t.Fatalf("pass of another owner while a holds the lease: %v, want Conflict", err)
	}
	p, err := w.Scrub(ctx, ScrubOptions{Owner: "a", PageSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := ScrubProgress{Objects: 8, Missing: 1, Corrupt: 1, Unreadable: 1}
	if p.Objects != want.Objects || p.Missing != want.Missing || p.Corrupt != want.Corrupt || p.Unreadable != want.Unreadable || p.FinishedAt.IsZero() {
		t.Errorf("resumed pass: got %+v, want %+v", p, want)
	}
	st, err := w.ScrubStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Running || st.Last == nil || st.Last.Objects != 8 || len(st.Findings) != 3 {
		t.Errorf("status: %+v, want a finished run of 8 objects and 3 findings", st)
	}
	got := map[string]string{}
	for _, fd := range st.Findings {
		got[fd.Key+"@"+fd.VersionID] = fd.Problem
	}
	for k, problem := range map[string]string{"k1@" + objs["k1"].VersionID: meta.ScrubMissing, "k2@" + objs["k2"].VersionID: meta.ScrubCorrupt,
		"k5@" + old.VersionID: meta.ScrubUnreadable} {
		if got[k] != problem {
			t.Errorf("finding of %s: %q, want %q (all: %v)", k, got[k], problem, got)
		}
	}

	// Repair k2 and the store: the next pass forgets their findings.
	fb.Clear()
	good := data + "k2"
	if _, err := f.blobs.Put(ctx, objs["k2"].BlobKey, strings.NewReader(good), int64(len(good))); err != nil {
		t.Fatal(err)
	}
	if p, err = w.Scrub(ctx, ScrubOptions{Owner: "b"}); err != nil || p.Bad() != 1 {
		t.Fatalf("pass after the repair: %+v, %v; want only the missing blob", p, err)
	}
	if fs, _ := f.meta.ListScrubFindings(ctx, "", 10); len(fs) != 1 || fs[0].Problem != meta.ScrubMissing {
		t.Errorf("findings after the repair: %+v", fs)
	}
	// The background scrub is not due again before Every.
	if ran, err := w.RunOnce(ctx, ScrubOptions{Owner: "c", Every: time.Hour}); ran || err != nil {
		t.Errorf("RunOnce right after a pass: ran %v, %v", ran, err)
	}
}

// TestRunScrub: the background scrub (RunScrub, as coffer serve runs it)
// starts a run at once when none ever finished, finishes it, and does
// nothing with Every 0.
func TestRunScrub(t *testing.T) {
	f := newFixture(t, 0)
	if _, err := f.put(t, f.alice, "alice-bucket", "k", "some bytes"); err != nil {
		t.Fatal(err)
	}
	w := f.svc.Scrubber()
	w.RunScrub(t.Context(), ScrubOptions{}) // Every 0: returns at once
	if r, _ := f.meta.GetScrubRun(t.Context()); r != (meta.ScrubRun{}) {
		t.Fatalf("RunScrub with Every 0 ran: %+v", r)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.RunScrub(ctx, ScrubOptions{Owner: "n", Every: time.Hour, Poll: 10 * time.Millisecond})
	}()
	defer func() { cancel(); <-done }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		st, err := w.ScrubStatus(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if st.Last != nil {
			if st.Last.Objects != 1 || st.Last.Bad() != 0 {
				t.Errorf("background run: %+v, want 1 good object", st.Last)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the background scrub did not finish a run")
		}
	}
}

// TestScrubChecksCRC32C: the scrub checks the CRC-32C verified reads
// check (beside the SHA-256), so a record the reads would refuse (here
// a CRC-32C that is not the bytes', the SHA-256 intact) is a finding of
// coffer fsck too, not a good object. Without the scrub's CRC check the
// pass finds nothing.
func TestScrubChecksCRC32C(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 0)
	data := strings.Repeat("crc me ", 1000)
	if _, err := f.put(t, f.alice, "alice-bucket", "k", data); err != nil {
		t.Fatal(err)
	}
	o, err := f.meta.GetObject(ctx, "alice-bucket", "k")
	if err != nil {
		t.Fatal(err)
	}
	o.CRC32C[0] ^= 1
	if _, err := f.meta.PutObjects(ctx, []meta.Put{{Object: o, InPlace: true}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.readRange(t, "k", 0, -1); !IsCorrupt(err) {
		t.Fatalf("verified read against a wrong CRC-32C: %v, want an integrity error", err)
	}
	p, err := f.svc.Scrubber().Scrub(ctx, ScrubOptions{Owner: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Corrupt != 1 {
		t.Errorf("scrub pass: %+v, want the object corrupt", p)
	}
}
