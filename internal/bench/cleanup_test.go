package bench

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// contents returns the fake's buckets and objects.
func (f *fakeS3) contents() (buckets, objects []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for b := range f.buckets {
		buckets = append(buckets, b)
	}
	for k := range f.objects {
		objects = append(objects, k)
	}
	return buckets, objects
}

func TestCleanupDeletesWhatTheRunCreated(t *testing.T) {
	for _, sc := range []string{"s3-put", "s3-get", "s3-mixed"} {
		t.Run(sc, func(t *testing.T) {
			f := newFakeS3()
			srv := httptest.NewServer(f)
			defer srv.Close()
			o := s3Options(sc, srv.URL)
			o.Duration = 300 * time.Millisecond
			res, err := Run(context.Background(), context.Background(), o, io.Discard, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Audit.OK() || res.Audit.Verified == 0 {
				t.Fatalf("audit %+v", res.Audit)
			}
			c := res.Cleanup
			if !c.Enabled || len(c.Warnings) > 0 || c.Objects == 0 || c.Buckets != 1 {
				t.Errorf("cleanup = %+v, want the objects and the bucket deleted without warnings", c)
			}
			if buckets, objects := f.contents(); len(buckets)+len(objects) > 0 {
				t.Errorf("left on the target: buckets %v, %d objects", buckets, len(objects))
			}
		})
	}
}

func TestKeepLeavesWhatTheRunCreated(t *testing.T) {
	f := newFakeS3()
	srv := httptest.NewServer(f)
	defer srv.Close()
	o := s3Options("s3-put", srv.URL)
	o.Duration, o.Keep = 300*time.Millisecond, true
	res, err := Run(context.Background(), context.Background(), o, io.Discard, nil)
	if err != nil {
		t.Fatal(err)
	}
	buckets, objects := f.contents()
	if got, want := int64(len(objects)), res.Audit.Acknowledged; got != want || len(buckets) != 1 {
		t.Errorf("%d objects in %d buckets left, want the %d acknowledged in 1", got, len(buckets), want)
	}
	if c := res.Cleanup; c.Enabled || !strings.Contains(c.Kept, "bench-"+res.RunID+"/") {
		t.Errorf("cleanup = %+v, want off and saying what was kept", c)
	}
}

// A --bucket given by the user is never deleted, and only the run's
// objects in it are.
func TestCleanupSparesAGivenBucket(t *testing.T) {
	f := newFakeS3()
	f.buckets["mine"] = true
	f.objects["mine/notes.txt"] = []byte("not the bench's")
	srv := httptest.NewServer(f)
	defer srv.Close()
	o := s3Options("s3-put", srv.URL)
	o.Duration, o.Bucket = 300*time.Millisecond, "mine"
	res, err := Run(context.Background(), context.Background(), o, io.Discard, nil)
	if err != nil {
		t.Fatal(err)
	}
	buckets, objects := f.contents()
	if len(buckets) != 1 || len(objects) != 1 || objects[0] != "mine/notes.txt" {
		t.Errorf("left buckets %v, objects %v; want bucket mine with notes.txt only", buckets, objects)
	}
	if c := res.Cleanup; c.Buckets != 0 || c.Objects == 0 || len(c.Warnings) > 0 {
		t.Errorf("cleanup = %+v", c)
	}
}

// The first interrupt ends the load; the run still audits what was
// acknowledged and cleans up.
func TestInterruptStillAuditsAndCleansUp(t *testing.T) {
	f := newFakeS3()
	srv := httptest.NewServer(f)
	defer srv.Close()
	o := s3Options("s3-put", srv.URL)
	o.Duration = time.Minute
	load, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, err := Run(load, context.Background(), o, io.Discard, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("interrupted run took %v", d)
	}
	a := res.Audit
	if !res.Interrupted || !a.Enabled || a.Skipped != "" || a.Acknowledged == 0 || a.Verified != a.Acknowledged {
		t.Errorf("interrupted %v, audit %+v; want every acknowledged upload verified", res.Interrupted, a)
	}
	if _, objects := f.contents(); len(objects) > 0 || !res.Cleanup.Enabled {
		t.Errorf("%d objects left, cleanup %+v", len(objects), res.Cleanup)
	}
}

// A second interrupt (finish) cuts the audit and the cleanup short.
func TestSecondInterruptAbortsAuditAndCleanup(t *testing.T) {
	f := newFakeS3()
	f.slowGets = time.Hour
	srv := httptest.NewServer(f)
	defer srv.Close()
	o := s3Options("s3-put", srv.URL)
	o.Duration = time.Minute
	load, cancelLoad := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancelLoad()
	finish, abort := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer abort()
	start := time.Now()
	res, err := Run(load, finish, o, io.Discard, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("run took %v after the second interrupt", d)
	}
	if a := res.Audit; !strings.Contains(a.Skipped, "aborted") || a.Verified != 0 {
		t.Errorf("audit = %+v, want it aborted", a)
	}
	if c := res.Cleanup; len(c.Warnings) == 0 {
		t.Errorf("cleanup = %+v, want warnings that it was cut short", c)
	}
}

func TestWritePlan(t *testing.T) {
	for _, c := range []struct {
		name string
		o    Options
		want []string
	}{
		{"arrival rate", Options{Scenario: "upload-proxy", Target: "http://x", Rate: 190, Duration: 30 * time.Second},
			[]string{"the load will upload about 5.6 GiB (190 it/s × 30s = 5700 iterations × 1.0 MiB)", "deletes what it created"}},
		{"tus uploads", Options{Scenario: "tus", Target: "http://x", Rate: 10, Duration: 3 * time.Second, Size: 256 << 10},
			[]string{"the load will upload about 7.5 MiB (10 it/s × 3s = 30 iterations × 256.0 KiB)"}},
		{"a rate that does not divide a second", Options{Scenario: "upload-proxy", Target: "http://x", Rate: 3, Duration: 1500 * time.Millisecond, Size: 1 << 20},
			[]string{"the load will upload about 5.0 MiB (3 it/s × 1.5s = 5 iterations × 1.0 MiB)"}},
		{"closed model", Options{Scenario: "batch", Target: "http://x", VUs: 4, Duration: time.Minute},
			[]string{"the load uploads 250.0 KiB per iteration with up to 4 VUs for 1m0s", "projection follows"}},
		{"setup for reads", Options{Scenario: "read", Target: "http://x", Users: 20, VUs: 20, Size: 64 << 10},
			[]string{"the setup will upload 12.5 MiB (200 objects × 64.0 KiB)", "the load uploads nothing"}},
		{"compare", Options{Scenario: "s3-put", S3Target: "http://x", AccessKey: "a", SecretKey: "s", Compare: "http://y",
			CompareAccessKey: "a", CompareSecretKey: "s", Rate: 10, Duration: 10 * time.Second, Rounds: 2, Keep: true},
			[]string{"about 200.0 MiB on each of 2 endpoints (10 it/s × 20s = 200 iterations × 1.0 MiB)", "--keep"}},
		{"ping", Options{Scenario: "ping", Target: "http://x"}, []string{"the load uploads nothing"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := c.o.withDefaults()
			got := strings.Join(writePlan(o, newModel(o), map[bool]int{false: 1, true: 2}[o.Compare != ""]), "\n")
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("plan:\n%s\nwant it to contain %q", got, w)
				}
			}
		})
	}
}
