// Package versitygw runs versitygw's S3 integration suite (an independent
// conformance suite, `versitygw test`, pinned at Version) against a real
// `coffer serve` on loopback and compares every outcome with the expected
// results checked in as testdata/expected.txt.
//
// # The suite
//
// `versitygw test NAME` runs one test in its own process; every test uses
// the bucket test-bucket-1, and `full-flow` stops at the first panic, so
// the tests run one at a time on a server, and the runner removes any
// leftover test-* bucket (its versions, its uploads) before each. The
// runner splits the chosen tests into shards (COFFER_VERSITYGW_SHARDS,
// default 4) that run side by side, each against a server of its own. AWS_CA_BUNDLE is unset
// for them (the suite fails at once with "unable to add custom RootCAs"
// otherwise). The tests of versitygw's own IAM service, website listener
// and POSIX backend are not chosen; the chosen set is every other test
// whose name matches one of selected.
//
// # Expected results
//
// testdata/expected.txt has one line per chosen test: its name and either
// "pass" or "known-fail: REASON", the reason saying whether the test
// encodes versitygw's own behaviour where AWS's differs (with the AWS
// reference) or is a Coffer gap and the issue that tracks it. The test
// fails when a test expected to pass fails, when a known failure passes
// (flip it to pass), and when a chosen test is missing from the file or
// the file names a test the suite does not have; so the file stays true.
// COFFER_VERSITYGW_WRITE=PATH writes the observed results in the file's
// format to PATH (failures as "known-fail: TODO" with the first line of
// the test's error), to review before copying lines over.
//
// # The binary
//
// scripts/test.sh installs it with `go install` from the Go module proxy
// into ~/.cache/coffer-tools/versitygw-VERSION and sets COFFER_VERSITYGW.
// Without it the test skips, or fails under COFFER_REQUIRE_CLIENTS=1.
package versitygw

import (
	"bufio"
	"bytes"
	"context"
	"debug/buildinfo"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/coffer-storage/coffer/internal/testbackend"
	"github.com/coffer-storage/coffer/test/testenv"
)

// Version is the release of versitygw whose suite the expected results
// describe (scripts/test.sh installs the same).
const Version = "v1.8.0"

// selected are the name patterns (path.Match) of the chosen tests: the
// groups of the S3 operations Coffer claims, those of issue 20
// (versioning, object lock, tagging, lifecycle) and of issue 21.
var selected = []string{
	"PutObject_*", "GetObject_*", "HeadObject_*", "CopyObject_*",
	"DeleteObject_*", "DeleteObjects_*", "ListObjects_*", "ListObjectsV2_*",
	"CreateMultipartUpload_*", "UploadPart_*", "UploadPartCopy_*",
	"CompleteMultipartUpload_*", "AbortMultipartUpload_*", "ListParts_*",
	"ListMultipartUploads_*", "CreateBucket_*", "HeadBucket_*", "DeleteBucket_*",
	"ListBuckets_*",
	// issue 20
	"Versioning_*", "ListObjectVersions_*", "PutBucketVersioning_*", "GetBucketVersioning_*",
	"WORMProtection_*", "PutObjectRetention_*", "PutObjectLegalHold_*",
	"PutObjectLockConfiguration_*", "*Tagging*", "*Lifecycle*",
	// issue 21: CORS
	"PutBucketCors_*", "GetBucketCors*", "DeleteBucketCors*", "PreflightOPTIONS_*",
	// issue 21: browser POST policy uploads, presigned authentication
	"PostObject_*", "PresignedAuth_*",
	// issue 21: ACLs
	"PutBucketAcl_*", "GetBucketAcl*", "PutObjectAcl_*", "GetObjectAcl_*", "PublicBucket_*",
	// issue 21: access control with a second user (versitygw's IAM)
	"AccessControl_*",
	// issue 21
	"PutBucketPolicy_*", "GetBucketPolicy*", "DeleteBucketPolicy*",
}

// versioned are the tests versitygw's full-flow runs only against a
// versioning-enabled gateway (its TestVersioning group): they run with
// --versioning-enabled, which makes the suite's cleanup delete every
// version rather than every key.
//
// The object lock groups run with it too: an S3 bucket with object lock
// is always versioned, so only a cleanup that deletes every version
// empties it (versitygw's posix backend locks without versions).
var versioned = regexp.MustCompile(`^(Versioning_|ListObjectVersions_|PutBucketVersioning_|GetBucketVersioning_|` +
	`WORMProtection_|PutObjectRetention_|PutObjectLegalHold_|PutObjectLockConfiguration_)`)

// notSelected are the groups that need what Coffer does not offer:
// versitygw's IAM service and its admin API.
var notSelected = regexp.MustCompile(`^(IAM|S3IAM)`)

// posixTests are the tests of versitygw's own POSIX backend (its
// tests/integration/posix.go: directories, file-name lengths), which
// full-flow does not run; not chosen.
var posixTests = []string{
	"PutObject_overwrite_dir_obj", "PutObject_overwrite_file_obj", "PutObject_overwrite_file_obj_with_nested_obj",
	"PutObject_dir_obj_with_data", "PutObject_with_slashes", "CreateMultipartUpload_dir_obj", "PutObject_name_too_long",
	"HeadObject_name_too_long", "DeleteObject_name_too_long", "CopyObject_overwrite_same_dir_object",
	"CopyObject_overwrite_same_file_object", "PutObject_race_with_delete",
}

// perTest bounds one test's process (the suite's own requests time out
// after 30 s; its cleanup retries a delete three times a second apart).
const perTest = 3 * time.Minute

func TestMain(m *testing.M) { testbackend.Main(m) }

func TestVersitygw(t *testing.T) {
	bin := binary(t)
	all, err := listTests(bin)
	if err != nil {
		t.Fatal(err)
	}
	chosen := choose(all)
	want, err := readExpected(filepath.Join("testdata", "expected.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range chosen {
		if _, ok := want[name]; !ok {
			t.Errorf("testdata/expected.txt does not classify %s (pass or known-fail: reason)", name)
		}
	}
	for name := range want {
		if !slices.Contains(chosen, name) {
			t.Errorf("testdata/expected.txt names %s, which versitygw %s's suite does not have among the chosen tests", name, Version)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	// The tests run in shards side by side, each against a server of its
	// own (its own data folder, or database and bucket on the scale-out
	// shape), one test at a time within a shard: the suite's tests mostly
	// wait (loopback round trips, fsync), so four shards take about a
	// quarter of the time of one on two cores.
	shards := 4
	if v, err := strconv.Atoi(os.Getenv("COFFER_VERSITYGW_SHARDS")); err == nil && v > 0 {
		shards = v
	}
	start := time.Now()
	var mu sync.Mutex
	results := map[string]result{}
	// Not t.Parallel: -test.parallel (GOMAXPROCS) would run only two at
	// a time; t.Run may be called from several goroutines at once.
	var wg sync.WaitGroup
	for i, mine := range split(chosen, shards) {
		wg.Go(func() {
			t.Run(fmt.Sprintf("shard%d", i+1), func(t *testing.T) {
				sh := &shard{t: t}
				sh.fresh()
				for _, name := range mine {
					t.Run(name, func(t *testing.T) {
						r := sh.run(t, bin, name)
						mu.Lock()
						results[name] = r
						mu.Unlock()
						e := want[name]
						switch {
						case e.pass && !r.pass:
							t.Errorf("expected to pass, failed:\n%s", r.output)
						case !e.pass && r.pass:
							t.Errorf("known failure (%s) passes now: change its line in testdata/expected.txt to pass", e.reason)
						case !e.pass:
							t.Logf("known failure: %s\n(it failed with: %s)", e.reason, failure(r.output))
						}
					})
				}
			})
		})
	}
	wg.Wait()
	t.Logf("%d tests of versitygw %s in %v\n%s", len(results), Version, time.Since(start).Round(time.Second), summary(results, want))
	if p := os.Getenv("COFFER_VERSITYGW_WRITE"); p != "" {
		if err := writeObserved(p, chosen, results, want); err != nil {
			t.Error(err)
		}
	}
}

// slow are the tests that wait out an object lock's retention (the
// suite's, or the runner's cleanup of what they leave): 3-20 s each, where
// most tests take a fraction of a second.
var slow = regexp.MustCompile(`(?i)retention|worm|object_lock|racey`)

// split deals the tests into n shards of about equal time: the slow ones
// first, each to the shard with the least so far (counted 10 against 1),
// then the rest; each shard keeps the suite's order.
func split(names []string, n int) [][]string {
	shards := make([][]string, n)
	load := make([]int, n)
	for _, pass := range []bool{true, false} {
		for _, name := range names {
			if slow.MatchString(name) != pass {
				continue
			}
			i := 0
			for j := range load {
				if load[j] < load[i] {
					i = j
				}
			}
			shards[i] = append(shards[i], name)
			load[i] += map[bool]int{true: 10, false: 1}[pass]
		}
	}
	for _, sh := range shards {
		sort.Strings(sh)
	}
	return shards
}

// shard is one server and its account, on which a shard's tests run one
// at a time.
type shard struct {
	t      *testing.T
	srv    *testenv.Server
	ak, sk string
	cl     *s3.Client
}

// fresh starts a server with an account that is empty, as versitygw's
// root account is: its default bucket would show in the ListBuckets
// tests.
func (sh *shard) fresh() {
	t := sh.t
	sh.srv = testenv.Start(t)
	sh.ak, sh.sk = accessKey(t, sh.srv)
	sh.cl = s3.NewFromConfig(aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider(sh.ak, sh.sk, "")},
		func(o *s3.Options) { o.BaseEndpoint = aws.String(sh.srv.S3URL); o.UsePathStyle = true })
	if err := removeBuckets(t.Context(), sh.cl, func(string) bool { return true }); err != nil {
		t.Fatal(err)
	}
}

// run runs one test of the suite on the shard's server (t is the test's
// own), after removing what earlier tests left.
func (sh *shard) run(t *testing.T, bin, name string) result {
	err := removeBuckets(t.Context(), sh.cl, isTestBucket)
	if err != nil && strings.Contains(err.Error(), "protected by object lock") {
		// A test that failed half-way left a version under
		// COMPLIANCE retention (or its bucket's default), which
		// no one can remove before its date, by design: the next
		// tests need the bucket's name, so they get a new server.
		t.Logf("a leftover version is locked (%v): starting a fresh server", err)
		sh.fresh()
		err = nil
	}
	if err != nil {
		t.Fatalf("removing leftover test buckets: %v", err)
	}
	return run(t.Context(), bin, name, sh.ak, sh.sk, sh.srv.S3URL)
}

// binary returns the versitygw binary: $COFFER_VERSITYGW, else the one
// scripts/test.sh installs into the cache.
func binary(t *testing.T) string {
	p := os.Getenv("COFFER_VERSITYGW")
	if p == "" {
		if dir, err := os.UserCacheDir(); err == nil {
			p = filepath.Join(dir, "coffer-tools", "versitygw-"+Version, "versitygw")
		}
	}
	if _, err := os.Stat(p); err != nil {
		msg := fmt.Sprintf("no versitygw %s binary at %q (scripts/test.sh installs it: GOBIN=DIR go install github.com/versity/versitygw/cmd/versitygw@%s)", Version, p, Version)
		if os.Getenv("COFFER_REQUIRE_CLIENTS") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	// The expected results are those of one release: the binary must be
	// it (go install records the module version in the binary).
	if info, err := buildinfo.ReadFile(p); err != nil || info.Main.Path != "github.com/versity/versitygw" || info.Main.Version != Version {
		got := "unreadable build info"
		if err == nil {
			got = info.Main.Path + "@" + info.Main.Version
		}
		t.Fatalf("%s is %s, not github.com/versity/versitygw@%s, whose results testdata/expected.txt holds", p, got, Version)
	}
	return p
}

// suiteEnv is the environment of every versitygw process: without
// AWS_CA_BUNDLE, which it cannot load, nor any AWS setting of the machine.
func suiteEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") {
			env = append(env, kv)
		}
	}
	return env
}

// listTests returns the names of the suite's single tests, from the
// command list of `versitygw test --help`.
func listTests(bin string) ([]string, error) {
	cmd := exec.Command(bin, "test", "--help")
	cmd.Env = suiteEnv()
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("versitygw test --help: %v", err)
	}
	var names []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && strings.HasSuffix(sc.Text(), " integration test") && f[1] == "Runs" {
			names = append(names, f[0])
		}
	}
	if len(names) < 100 {
		return nil, fmt.Errorf("versitygw test --help lists %d tests; is it versitygw %s?", len(names), Version)
	}
	sort.Strings(names)
	return names, nil
}

func choose(all []string) []string {
	var chosen []string
	for _, n := range all {
		if notSelected.MatchString(n) || slices.Contains(posixTests, n) {
			continue
		}
		for _, p := range selected {
			if ok, _ := path.Match(p, n); ok {
				chosen = append(chosen, n)
				break
			}
		}
	}
	return chosen
}

type expectation struct {
	pass   bool
	reason string
}

// readExpected parses the expected results: "NAME pass" or
// "NAME known-fail: REASON" per line; blank lines and # comments aside.
func readExpected(file string) (map[string]expectation, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	want := map[string]expectation{}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, rest, _ := strings.Cut(line, " ")
		rest = strings.TrimSpace(rest)
		var e expectation
		switch {
		case rest == "pass":
			e.pass = true
		case strings.HasPrefix(rest, "known-fail:") && strings.TrimSpace(strings.TrimPrefix(rest, "known-fail:")) != "":
			e.reason = strings.TrimSpace(strings.TrimPrefix(rest, "known-fail:"))
		default:
			return nil, fmt.Errorf("%s:%d: want \"NAME pass\" or \"NAME known-fail: REASON\", got %q", file, i+1, line)
		}
		if _, dup := want[name]; dup {
			return nil, fmt.Errorf("%s:%d: %s is listed twice", file, i+1, name)
		}
		want[name] = e
	}
	return want, nil
}

type result struct {
	pass   bool
	output string
	took   time.Duration
}

// run runs one test in its own process.
func run(ctx context.Context, bin, name, ak, sk, endpoint string) result {
	ctx, cancel := context.WithTimeout(ctx, perTest)
	defer cancel()
	args := []string{"test", "-a", ak, "-s", sk, "-e", endpoint, name}
	if versioned.MatchString(name) {
		args = append(args, "--versioning-enabled")
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = suiteEnv()
	t0 := time.Now()
	out, err := cmd.CombinedOutput()
	r := result{output: strings.TrimSpace(stripColour(string(out))), took: time.Since(t0)}
	if ctx.Err() != nil {
		r.output += fmt.Sprintf("\n(killed after %v)", perTest)
	}
	// A pass is a clean exit that reports a pass and no failure (a test
	// whose cleanup fails exits with an error too). Not "PASS "+name: a
	// few tests report under another name than the command's (in
	// v1.8.0, CopyObject_copy_source_starting_with_slash passes as
	// CopyObject_CopySource_starting_with_slash).
	r.pass = err == nil && strings.Contains(r.output, "PASS ") && !strings.Contains(r.output, "FAIL ")
	return r
}

var colour = regexp.MustCompile("\x1b\\[[0-9;]*m")

func stripColour(s string) string { return colour.ReplaceAllString(s, "") }

func isTestBucket(name string) bool { return strings.HasPrefix(name, "test-") }

// removeBuckets deletes the account's buckets that match keep, with every
// object version and multipart upload in them.
func removeBuckets(ctx context.Context, cl *s3.Client, match func(string) bool) error {
	out, err := cl.ListBuckets(ctx, &s3.ListBucketsInput{})
	if err != nil {
		return err
	}
	var errs []error
	for _, b := range out.Buckets {
		if name := aws.ToString(b.Name); match(name) {
			errs = append(errs, emptyAndDelete(ctx, cl, name))
		}
	}
	return errors.Join(errs...)
}

func emptyAndDelete(ctx context.Context, cl *s3.Client, bucket string) error {
	for range 100 { // pages of versions, then of uploads
		v, err := cl.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: &bucket})
		if err != nil {
			return err
		}
		var ids []types.ObjectIdentifier
		for _, o := range v.Versions {
			ids = append(ids, types.ObjectIdentifier{Key: o.Key, VersionId: o.VersionId})
		}
		for _, o := range v.DeleteMarkers {
			ids = append(ids, types.ObjectIdentifier{Key: o.Key, VersionId: o.VersionId})
		}
		u, err := cl.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: &bucket})
		if err != nil {
			return err
		}
		if len(ids) == 0 && len(u.Uploads) == 0 {
			_, err := cl.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: &bucket})
			return err
		}
		for _, id := range ids {
			if err := deleteLocked(ctx, cl, bucket, id); err != nil {
				return fmt.Errorf("delete %s/%s: %w", bucket, aws.ToString(id.Key), err)
			}
		}
		for _, up := range u.Uploads {
			if _, err := cl.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &bucket, Key: up.Key, UploadId: up.UploadId}); err != nil {
				return fmt.Errorf("abort upload %s/%s: %w", bucket, aws.ToString(up.Key), err)
			}
		}
	}
	return fmt.Errorf("bucket %s does not empty", bucket)
}

// deleteLocked deletes a version a test left behind, locked or not: with
// the bypass of GOVERNANCE retention, its legal hold lifted, and a short
// COMPLIANCE retention (the suite's tests lock for seconds) waited out.
func deleteLocked(ctx context.Context, cl *s3.Client, bucket string, id types.ObjectIdentifier) error {
	del := func() error {
		_, err := cl.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &bucket, Key: id.Key, VersionId: id.VersionId,
			BypassGovernanceRetention: aws.Bool(true)})
		return err
	}
	err := del()
	if err == nil || !strings.Contains(err.Error(), "AccessDenied") {
		return err
	}
	cl.PutObjectLegalHold(ctx, &s3.PutObjectLegalHoldInput{Bucket: &bucket, Key: id.Key, VersionId: id.VersionId,
		LegalHold: &types.ObjectLockLegalHold{Status: types.ObjectLockLegalHoldStatusOff}})
	r, rerr := cl.GetObjectRetention(ctx, &s3.GetObjectRetentionInput{Bucket: &bucket, Key: id.Key, VersionId: id.VersionId})
	if rerr == nil && r.Retention != nil && r.Retention.RetainUntilDate != nil {
		if wait := time.Until(*r.Retention.RetainUntilDate); wait > 0 && wait < time.Minute {
			time.Sleep(wait + 100*time.Millisecond)
		}
	}
	if err := del(); err != nil {
		return fmt.Errorf("%w (retention %+v, %v)", err, r, rerr)
	}
	return nil
}

// accessKey makes an account and its S3 key with the admin commands.
func accessKey(t *testing.T, srv *testenv.Server) (id, secret string) {
	email := fmt.Sprintf("versitygw-%d@example.com", time.Now().UnixNano())
	if out, err := srv.Command("user", "create", "--data", srv.Data, "--email", email, "--password", "correct horse battery").CombinedOutput(); err != nil {
		t.Fatalf("coffer user create: %v\n%s", err, out)
	}
	out, err := srv.Command("key", "create", "--data", srv.Data, "--email", email, "--name", "versitygw").CombinedOutput()
	if err != nil {
		t.Fatalf("coffer key create: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		k, v, _ := strings.Cut(line, ":")
		switch strings.TrimSpace(k) {
		case "access_key_id":
			id = strings.TrimSpace(v)
		case "secret_access_key":
			secret = strings.TrimSpace(v)
		}
	}
	if id == "" || secret == "" {
		t.Fatalf("coffer key create printed no key:\n%s", out)
	}
	return id, secret
}

// group is a test's group: its name up to the first underscore.
func group(name string) string {
	g, _, _ := strings.Cut(name, "_")
	return g
}

// summary is a table of passed, failed and known-failing tests by group,
// with their run time.
func summary(results map[string]result, want map[string]expectation) string {
	type row struct {
		pass, fail, known, unexpected int
		took                          time.Duration
	}
	rows := map[string]*row{}
	var total row
	for name, r := range results {
		g := group(name)
		if rows[g] == nil {
			rows[g] = &row{}
		}
		for _, x := range []*row{rows[g], &total} {
			x.took += r.took
			switch e := want[name]; {
			case r.pass && e.pass:
				x.pass++
			case r.pass:
				x.pass++
				x.unexpected++
			case e.pass:
				x.fail++
			default:
				x.known++
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-34s %6s %6s %6s %8s\n", "group", "pass", "FAIL", "known", "time")
	names := make([]string, 0, len(rows))
	for g := range rows {
		names = append(names, g)
	}
	sort.Strings(names)
	line := func(g string, x *row) {
		fmt.Fprintf(&b, "%-34s %6d %6d %6d %8v", g, x.pass, x.fail, x.known, x.took.Round(100*time.Millisecond))
		if x.unexpected > 0 {
			fmt.Fprintf(&b, "  (%d known failures pass now)", x.unexpected)
		}
		b.WriteString("\n")
	}
	for _, g := range names {
		line(g, rows[g])
	}
	line("total", &total)
	return b.String()
}

// writeObserved writes the results in the expected file's format, keeping
// the reasons of known failures that still fail (with the error they
// failed with in a comment below).
func writeObserved(file string, chosen []string, results map[string]result, want map[string]expectation) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# observed results of versitygw %s's suite against Coffer, %s\n", Version, time.Now().UTC().Format(time.RFC3339))
	for _, name := range chosen {
		r, ok := results[name]
		switch {
		case !ok:
			continue
		case r.pass:
			fmt.Fprintf(&b, "%s pass\n", name)
		case !want[name].pass && want[name].reason != "":
			fmt.Fprintf(&b, "%s known-fail: %s\n#   observed: %s\n", name, want[name].reason, failure(r.output))
		default:
			fmt.Fprintf(&b, "%s known-fail: TODO %s\n", name, failure(r.output))
		}
	}
	return os.WriteFile(file, []byte(b.String()), 0o644)
}

// failure is the line of a failed test's output that says why: a panic's
// message, else the suite's FAIL line, else the last line.
func failure(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, prefix := range []string{"panic: ", "FAIL "} {
		for _, l := range lines {
			if strings.HasPrefix(l, prefix) {
				return l
			}
		}
	}
	return lines[len(lines)-1]
}
