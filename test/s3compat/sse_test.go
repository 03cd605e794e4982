package s3compat

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/test/testenv"
)

// TestSSE runs py/test_sse.py with pytest against a server with
// --encryption on and a keyring named by --kms (so both shapes share it):
// SSE-S3, SSE-KMS (a known key, an unknown one), SSE-C (right, missing and
// wrong keys; copies), copies across modes, multipart uploads under SSE-S3,
// SSE-KMS and SSE-C (s3transfer and explicit calls; parts without the
// key or with another refused; UploadPartCopy across modes), bucket
// default encryption, and the refusal of DSSE.
func TestSSE(t *testing.T) {
	py := python(t)
	keyring := filepath.Join(t.TempDir(), "keyring")
	k := make([]byte, 32)
	rand.Read(k)
	if err := os.WriteFile(keyring, []byte("default 1 "+base64.StdEncoding.EncodeToString(k)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := testenv.Start(t, "--log-level", "info", "--encryption", "on", "--kms", "local://"+keyring)
	user := srv.NewUser(t)
	var key struct {
		AccessKeyID     string `json:"access_key_id"`
		SecretAccessKey string `json:"secret_access_key"`
	}
	if st := user.JSON(t, "POST", "/api/v1/keys", map[string]string{"name": "sse"}, &key); st != 201 || key.AccessKeyID == "" {
		t.Fatalf("POST /api/v1/keys: status %d", st)
	}
	pydir, err := filepath.Abs("py")
	if err != nil {
		t.Fatal(err)
	}
	var rnd [4]byte
	rand.Read(rnd[:])
	e := &env{srv: srv, user: user, accessKey: key.AccessKeyID, secretKey: key.SecretAccessKey, prefix: "sse-" + hex.EncodeToString(rnd[:])}
	r := &runner{
		e: e, name: "pytest", bin: py, dir: pydir, bucket: e.bucket("boto3"), timeout: 5 * time.Minute,
		pre: []string{"-m", "pytest", "-q", "-p", "no:cacheprovider", "--basetemp", filepath.Join(t.TempDir(), "pytest"), "-rfE"},
		env: childEnv(map[string]string{
			"HOME":                 t.TempDir(),
			"COFFER_S3_ENDPOINT":   srv.S3URL,
			"COFFER_S3_ACCESS_KEY": e.accessKey,
			"COFFER_S3_SECRET_KEY": e.secretKey,
			"COFFER_S3_BUCKET":     e.bucket("boto3"),
			"COFFER_KMS_KEY":       "default",
		}),
	}
	res := r.try(t, "test_sse.py")
	if res.err != nil {
		t.Errorf("SSE suite failed:\n%s\n%s", res, e.evidence(e.bucket("boto3")))
		return
	}
	t.Logf("pytest: %s", lastLine(res.stdout))
}
