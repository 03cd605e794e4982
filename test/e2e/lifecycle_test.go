package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/coffer-storage/coffer/test/testenv"
)

// lifecycleFlags run the worker with the test-only short day: a day of
// a second, a run every second.
var lifecycleFlags = []string{"--lifecycle-day", "1s", "--lifecycle-interval", "1s"}

func expireRule(id, prefix string, days int32) types.LifecycleRule {
	return types.LifecycleRule{ID: aws.String(id), Status: types.ExpirationStatusEnabled,
		Filter:                      &types.LifecycleRuleFilter{Prefix: aws.String(prefix)},
		Expiration:                  &types.LifecycleExpiration{Days: aws.Int32(days)},
		NoncurrentVersionExpiration: &types.NoncurrentVersionExpiration{NoncurrentDays: aws.Int32(days)}}
}

// waitFor polls cond every 200 ms until it holds or limit passes.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v", what, limit)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func s3Code(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// TestS3Lifecycle drives lifecycle with aws-sdk-go-v2 against the binary
// (both shapes), with test days of a second: the configuration round
// trip, x-amz-expiration on PUT and HEAD, a refused transition, and the
// worker expiring what a rule selects and nothing else.
func TestS3Lifecycle(t *testing.T) {
	srv := testenv.Start(t, lifecycleFlags...)
	cl, _ := s3Client(t, srv)
	ctx := t.Context()
	bucket := "lc-" + strings.ToLower(hex.EncodeToString(randBytes(t, 4)))
	if _, err := cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.GetBucketLifecycleConfiguration(ctx, &s3.GetBucketLifecycleConfigurationInput{Bucket: aws.String(bucket)}); s3Code(err) != "NoSuchLifecycleConfiguration" {
		t.Fatalf("GetBucketLifecycleConfiguration without one: %v", err)
	}
	bad := expireRule("t", "tmp/", 1)
	bad.Transitions = []types.Transition{{Days: aws.Int32(30), StorageClass: types.TransitionStorageClassGlacier}}
	if _, err := cl.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{Bucket: aws.String(bucket),
		LifecycleConfiguration: &types.BucketLifecycleConfiguration{Rules: []types.LifecycleRule{bad}}}); s3Code(err) != "NotImplemented" {
		t.Fatalf("a transition: %v, want NotImplemented", err)
	}
	// Objects first, then the rule: the worker expires what exists.
	put := func(key string) *s3.PutObjectOutput {
		t.Helper()
		out, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader("data of " + key)})
		if err != nil {
			t.Fatalf("PutObject %s: %v", key, err)
		}
		return out
	}
	put("keep/a")
	if _, err := cl.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{Bucket: aws.String(bucket),
		LifecycleConfiguration: &types.BucketLifecycleConfiguration{Rules: []types.LifecycleRule{expireRule("tmp", "tmp/", 3)}}}); err != nil {
		t.Fatal(err)
	}
	got, err := cl.GetBucketLifecycleConfiguration(ctx, &s3.GetBucketLifecycleConfigurationInput{Bucket: aws.String(bucket)})
	if err != nil || len(got.Rules) != 1 || aws.ToString(got.Rules[0].ID) != "tmp" || aws.ToInt32(got.Rules[0].Expiration.Days) != 3 {
		t.Fatalf("GetBucketLifecycleConfiguration: %+v, %v", got, err)
	}
	out := put("tmp/x")
	if e := aws.ToString(out.Expiration); !strings.Contains(e, `rule-id="tmp"`) || !strings.Contains(e, "expiry-date=") {
		t.Errorf("PutObject x-amz-expiration = %q", e)
	}
	head, err := cl.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("tmp/x")})
	if err != nil || !strings.Contains(aws.ToString(head.Expiration), `rule-id="tmp"`) {
		t.Errorf("HeadObject x-amz-expiration = %q, %v", aws.ToString(head.Expiration), err)
	}
	if head, err := cl.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("keep/a")}); err != nil || head.Expiration != nil {
		t.Errorf("HeadObject of a key no rule selects: x-amz-expiration %q, %v", aws.ToString(head.Expiration), err)
	}
	// Three test days (3 s, rounded up to a day boundary) and a run.
	waitFor(t, 60*time.Second, "tmp/x expired", func() bool {
		_, err := cl.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("tmp/x")})
		return err != nil
	})
	if _, err := cl.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("keep/a")}); err != nil {
		t.Errorf("keep/a after the run: %v", err)
	}
	// The metrics of docs/lifecycle.md, on /metrics.
	waitFor(t, 30*time.Second, "a finished run in the metrics", func() bool {
		return metricSum(t, srv, "coffer_lifecycle_last_success_timestamp_seconds") > 0
	})
	if got := metricSum(t, srv, "coffer_lifecycle_expired_objects_total"); got != 1 {
		t.Errorf("coffer_lifecycle_expired_objects_total = %v, want 1", got)
	}
	if got := metricSum(t, srv, "coffer_lifecycle_skipped_total"); got != 0 {
		t.Errorf("coffer_lifecycle_skipped_total = %v, want 0", got)
	}
	if !strings.Contains(srv.Stderr(), "TEST ONLY") {
		t.Errorf("the server did not warn about the test-only day length:\n%s", srv.Stderr())
	}
	if _, err := cl.DeleteBucketLifecycle(ctx, &s3.DeleteBucketLifecycleInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.GetBucketLifecycleConfiguration(ctx, &s3.GetBucketLifecycleConfigurationInput{Bucket: aws.String(bucket)}); s3Code(err) != "NoSuchLifecycleConfiguration" {
		t.Errorf("after DeleteBucketLifecycle: %v", err)
	}
}

// lcObject is a version the crash test wrote.
type lcObject struct {
	key, version string
	sum          [32]byte
	size         int
}

// TestLifecycleKill9: SIGKILL the server while lifecycle works through a
// few thousand versions (2,400 here: a versioned bucket, 800 keys under a
// rule with two versions each, 800 under none; a third of them large
// enough to live in blobs), restart it, and check that every version
// still listed reads back whole (bytes and SHA-256: no row whose blob is
// gone), that nothing the rule does not select changed, and that the run
// resumes and finishes.
func TestLifecycleKill9(t *testing.T) {
	srv := testenv.Start(t, lifecycleFlags...)
	cl, _ := s3Client(t, srv)
	ctx := t.Context()
	bucket := "lck-" + strings.ToLower(hex.EncodeToString(randBytes(t, 4)))
	if _, err := cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(bucket),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	const keys = 800
	var (
		mu      sync.Mutex
		written []lcObject
	)
	type job struct {
		key string
		i   int
	}
	jobs := make(chan job)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for j := range jobs {
				size := 2 << 10
				if j.i%3 == 0 {
					size = 70 << 10 // above the inline limit: a blob
				}
				data := randBytes(t, size)
				out, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(j.key), Body: bytes.NewReader(data)})
				if err != nil {
					t.Errorf("PutObject %s: %v", j.key, err)
					continue
				}
				mu.Lock()
				written = append(written, lcObject{key: j.key, version: aws.ToString(out.VersionId), sum: sha256.Sum256(data), size: size})
				mu.Unlock()
			}
		})
	}
	for i := range keys {
		jobs <- job{fmt.Sprintf("keep/%04d", i), i}
		jobs <- job{fmt.Sprintf("exp/%04d", i), i}
	}
	for i := range keys {
		jobs <- job{fmt.Sprintf("exp/%04d", i), i}
	}
	close(jobs)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if _, err := cl.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{Bucket: aws.String(bucket),
		LifecycleConfiguration: &types.BucketLifecycleConfiguration{Rules: []types.LifecycleRule{expireRule("exp", "exp/", 1)}}}); err != nil {
		t.Fatal(err)
	}
	// Kill once the worker has begun: some exp/ key reads as deleted.
	waitFor(t, 60*time.Second, "lifecycle started", func() bool {
		_, err := cl.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("exp/0000")})
		return err != nil
	})
	srv.Restart()
	verify := func(when string) (left int) {
		t.Helper()
		listed := map[string]bool{}
		p := s3.NewListObjectVersionsPaginator(cl, &s3.ListObjectVersionsInput{Bucket: aws.String(bucket)})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				t.Fatalf("%s: ListObjectVersions: %v", when, err)
			}
			for _, v := range page.Versions {
				listed[aws.ToString(v.Key)+"@"+aws.ToString(v.VersionId)] = true
			}
		}
		for _, o := range written {
			in := listed[o.key+"@"+o.version]
			if !in && strings.HasPrefix(o.key, "keep/") {
				t.Errorf("%s: %s (%s), which no rule selects, is gone", when, o.key, o.version)
				continue
			}
			if !in {
				continue
			}
			if strings.HasPrefix(o.key, "exp/") {
				left++
			}
			out, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(o.key), VersionId: aws.String(o.version)})
			if s3Code(err) == "NoSuchVersion" && strings.HasPrefix(o.key, "exp/") {
				continue // removed by the worker since the listing (a row whose blob is gone would not read as missing)
			}
			if err != nil {
				t.Errorf("%s: %s (%s) is listed but cannot be read: %v", when, o.key, o.version, err)
				continue
			}
			data, err := io.ReadAll(out.Body)
			out.Body.Close()
			if err != nil || len(data) != o.size || sha256.Sum256(data) != o.sum {
				t.Errorf("%s: %s (%s): %d bytes, %v; want %d bytes of its SHA-256", when, o.key, o.version, len(data), err, o.size)
			}
		}
		return left
	}
	left := verify("after the restart")
	t.Logf("after the kill: %d of %d exp/ versions left", left, 2*keys)
	// The run resumes (from its cursor, or the next run) and finishes:
	// every exp/ version goes (each key's last one under a delete marker,
	// then as a noncurrent version).
	waitFor(t, 3*time.Minute, "every exp/ version removed", func() bool {
		p := s3.NewListObjectVersionsPaginator(cl, &s3.ListObjectVersionsInput{Bucket: aws.String(bucket), Prefix: aws.String("exp/")})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil || len(page.Versions) > 0 {
				return false
			}
		}
		return true
	})
	if left := verify("after the run"); left != 0 {
		t.Errorf("after the run: %d exp/ versions left", left)
	}
}

// metricSum is the sum of the samples of name on srv's /metrics.
func metricSum(t *testing.T, srv *testenv.Server, name string) float64 {
	t.Helper()
	resp, err := srv.HTTPClient().Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	sum := 0.0
	for _, line := range strings.Split(string(body), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && (f[0] == name || strings.HasPrefix(f[0], name+"{")) {
			var v float64
			fmt.Sscan(f[1], &v)
			sum += v
		}
	}
	return sum
}

// TestLifecycleTwoNodes (scale-out shape): two nodes share the store and
// both run the worker; the lease lets one work at a time, so every object
// due is expired exactly once between them and neither finds the other's
// deletes under its feet (no delete skipped as changed or gone).
func TestLifecycleTwoNodes(t *testing.T) {
	if !testenv.ScaleOut() {
		t.Skip("scale-out shape only (COFFER_E2E_BACKEND=scaleout)")
	}
	b := testenv.NewBackends(t)
	n1 := testenv.StartNode(t, b, lifecycleFlags...)
	n2 := testenv.StartNode(t, b, lifecycleFlags...)
	cl, _ := s3Client(t, n1)
	ctx := t.Context()
	const bucket = "lc-two-nodes"
	if _, err := cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	const n = 300
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(fmt.Sprintf("k%03d", i)),
					Body: strings.NewReader("x")}); err != nil {
					t.Errorf("PutObject: %v", err)
				}
			}
		})
	}
	wg.Wait()
	if _, err := cl.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{Bucket: aws.String(bucket),
		LifecycleConfiguration: &types.BucketLifecycleConfiguration{Rules: []types.LifecycleRule{expireRule("all", "", 1)}}}); err != nil {
		t.Fatal(err)
	}
	expired := func() float64 {
		return metricSum(t, n1, "coffer_lifecycle_expired_objects_total") + metricSum(t, n2, "coffer_lifecycle_expired_objects_total")
	}
	waitFor(t, 2*time.Minute, "every object expired", func() bool { return expired() >= n })
	time.Sleep(3 * time.Second) // more runs, on either node
	if got := expired(); got != n {
		t.Errorf("the two nodes expired %v objects, want %d (each once)", got, n)
	}
	skipped := metricSum(t, n1, "coffer_lifecycle_skipped_total") + metricSum(t, n2, "coffer_lifecycle_skipped_total")
	if skipped != 0 {
		t.Errorf("%v deletes skipped: the nodes worked at once", skipped)
	}
	out, err := cl.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	if err != nil || len(out.Contents) != 0 {
		t.Errorf("objects left: %d, %v", len(out.Contents), err)
	}
	t.Logf("node 1 expired %v, node 2 %v", metricSum(t, n1, "coffer_lifecycle_expired_objects_total"), metricSum(t, n2, "coffer_lifecycle_expired_objects_total"))
}
