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
	b := e.bucket("post")
	py := python(t)
	pydir, err := filepath.Abs("py")
	if err != nil {
		t.Fatal(err)
	}
	r := &runner{
		e: e, name: "pytest", bin: py, dir: pydir, bucket: b, timeout: 5 * time.Minute,
		pre: []string{"-m", "pytest", "-q", "-p", "no:cacheprovider", "--basetemp", filepath.Join(t.TempDir(), "pytest"), "-rfE"},
		env: childEnv(map[string]string{
			"HOME":                 t.TempDir(),
			"COFFER_S3_ENDPOINT":   e.srv.S3URL,
			"COFFER_S3_ACCESS_KEY": e.accessKey,
			"COFFER_S3_SECRET_KEY": e.secretKey,
			"COFFER_S3_BUCKET":     b,
		}),
	}
	res := r.try(t, "test_post.py")
	if res.err != nil {
		t.Errorf("POST policy suite failed:\n%s\n%s", res, e.evidence(b))
		return
	}
	t.Logf("pytest: %s", lastLine(res.stdout))
}
