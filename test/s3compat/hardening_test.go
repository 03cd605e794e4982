package s3compat

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/test/testenv"
)

// TestBoto3Hardening runs py/test_boto3_hardening.py with pytest against a
// server of its own: server-side encryption Coffer does not implement
// (DSSE, encryption contexts, also on multipart uploads) and other unimplemented parameters are refused with
// NotImplemented and store nothing; a customer key for a plain object is
// InvalidRequest; list_object_versions (and its paginator) lists an unversioned
// bucket, delete_object(VersionId="null") deletes, and boto3's
// object_versions.delete() empties a bucket as cleanup tools do; a
// versioned bucket: version IDs, delete markers, an old version restored
// by a copy, the null version of a suspended bucket, emptied with its
// markers by object_versions.delete().
func TestBoto3Hardening(t *testing.T) {
	py := python(t)
	srv := testenv.Start(t, "--log-level", "info")
	user := srv.NewUser(t)
	var key struct {
		AccessKeyID     string `json:"access_key_id"`
		SecretAccessKey string `json:"secret_access_key"`
	}
	if st := user.JSON(t, "POST", "/api/v1/keys", map[string]string{"name": "hardening"}, &key); st != 201 || key.AccessKeyID == "" {
		t.Fatalf("POST /api/v1/keys: status %d", st)
	}
	e := &env{srv: srv, user: user, accessKey: key.AccessKeyID, secretKey: key.SecretAccessKey, prefix: "hardening"}
	pydir, err := filepath.Abs("py")
	if err != nil {
		t.Fatal(err)
	}
	r := &runner{
		e: e, name: "pytest", bin: py, dir: pydir, bucket: e.bucket("boto3"), timeout: 5 * time.Minute,
		pre: []string{"-m", "pytest", "-q", "-p", "no:cacheprovider", "--basetemp", filepath.Join(t.TempDir(), "pytest"), "-rfE"},
		env: childEnv(map[string]string{
			"HOME":                 t.TempDir(),
			"COFFER_S3_ENDPOINT":   srv.S3URL,
			"COFFER_S3_ACCESS_KEY": e.accessKey,
			"COFFER_S3_SECRET_KEY": e.secretKey,
			"COFFER_S3_BUCKET":     e.bucket("boto3"),
		}),
	}
	res := r.try(t, "test_boto3_hardening.py")
	if res.err != nil {
		t.Fatalf("boto3 hardening suite failed:\n%s\n%s", res, e.evidence(e.bucket("boto3")))
	}
	t.Logf("pytest: %s", lastLine(res.stdout))
}
