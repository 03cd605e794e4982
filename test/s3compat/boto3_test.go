package s3compat

import (
	"path/filepath"
	"testing"
	"time"
)

// testBoto3 runs py/test_boto3.py with pytest: buckets, objects and
// metadata, listing (delimiter, 2,500-key paging, URL encoding), copy,
// batch delete, multipart (upload_file/download_file of 50 MiB, manual
// parts, abort, list uploads), presigned GET/PUT, conditional and range
// GET, checksums and error codes.
func (e *env) testBoto3(t *testing.T) {
	py := python(t)
	pydir, err := filepath.Abs("py")
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	r := &runner{
		e: e, name: "pytest", bin: py, dir: pydir, bucket: e.bucket("boto3"), timeout: 10 * time.Minute,
		pre: []string{"-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "--basetemp", filepath.Join(t.TempDir(), "pytest"), "-rfE", "--durations=5"},
		env: childEnv(map[string]string{
			"HOME":                 home,
			"COFFER_S3_ENDPOINT":   e.srv.S3URL,
			"COFFER_S3_ACCESS_KEY": e.accessKey,
			"COFFER_S3_SECRET_KEY": e.secretKey,
			"COFFER_S3_BUCKET":     e.bucket("boto3"),
		}),
	}
	res := r.try(t, "test_boto3.py")
	if res.err != nil {
		t.Errorf("boto3 suite failed (pytest stops at the first failure, -x):\n%s\n%s", res, e.evidence(e.bucket("boto3")))
		return
	}
	t.Logf("pytest: %s", lastLine(res.stdout))
}
