package s3compat

import (
	"path/filepath"
	"testing"
	"time"
)

// testPost checks browser POST policy uploads (PostObject) with forms made
// by boto3's generate_presigned_post and SigV2 forms made by hand, posted
// with requests (py/test_post.py): success, ${filename}, 201 and redirect
// answers, content-length-range refusals that store nothing, an expired
// policy, an extra field, a wrong signature.
func (e *env) testPost(t *testing.T) {
	e.pytest(t, "test_post.py", e.bucket("post"), "POST policy")
}

// pytest runs one file of py/ with the environment of test_boto3.py
// (COFFER_S3_ENDPOINT, _ACCESS_KEY, _SECRET_KEY and _BUCKET = bucket).
func (e *env) pytest(t *testing.T, file, bucket, what string) {
	t.Helper()
	py := python(t)
	pydir, err := filepath.Abs("py")
	if err != nil {
		t.Fatal(err)
	}
	r := &runner{
		e: e, name: "pytest", bin: py, dir: pydir, bucket: bucket, timeout: 5 * time.Minute,
		pre: []string{"-m", "pytest", "-q", "-p", "no:cacheprovider", "--basetemp", filepath.Join(t.TempDir(), "pytest"), "-rfE"},
		env: childEnv(map[string]string{
			"HOME":                 t.TempDir(),
			"COFFER_S3_ENDPOINT":   e.srv.S3URL,
			"COFFER_S3_ACCESS_KEY": e.accessKey,
			"COFFER_S3_SECRET_KEY": e.secretKey,
			"COFFER_S3_BUCKET":     bucket,
		}),
	}
	res := r.try(t, file)
	if res.err != nil {
		t.Errorf("%s suite failed:\n%s\n%s", what, res, e.evidence(bucket))
		return
	}
	t.Logf("pytest: %s", lastLine(res.stdout))
}
