package s3compat

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/testbackend"
	"github.com/coffer-storage/coffer/test/testenv"
)

// TestBoto3Gateway runs py/test_boto3_gateway.py: boto3 lists (paginated,
// with a delimiter), reads, ranges and conditionally reads gateway buckets
// over MinIO while the test writes MinIO directly; a ro gateway refuses
// writes with AccessDenied; a rw one stores PutObject in the backend and
// refuses multipart uploads with NotImplemented. The gateways come from
// --gateway flags (credentials from a file).
func TestBoto3Gateway(t *testing.T) {
	py := python(t)
	m := testbackend.StartMinIO(t)
	mb := m.CreateBucket(t)
	creds := filepath.Join(t.TempDir(), "creds")
	if err := os.WriteFile(creds, []byte("access_key="+m.AccessKey+"\nsecret_key="+m.SecretKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := testenv.Start(t, "--log-level", "info")
	user := srv.NewUser(t)
	ro, rw := "gwro-"+testbackend.RandomHex(4), "gwrw-"+testbackend.RandomHex(4)
	q := "?endpoint=" + m.Endpoint() + "&credentials_file=" + creds + "&owner=" + user.Email
	// The owner exists now: restart with the gateways.
	srv.Args = append(srv.Args, "--gateway", ro+"=s3://"+mb+q+"&mode=ro", "--gateway", rw+"=s3://"+mb+"/rw"+q+"&mode=rw")
	srv.Restart()
	user.Login(t, "correct horse battery")
	var key struct {
		AccessKeyID     string `json:"access_key_id"`
		SecretAccessKey string `json:"secret_access_key"`
	}
	if st := user.JSON(t, "POST", "/api/v1/keys", map[string]string{"name": "gateway"}, &key); st != 201 {
		t.Fatalf("POST /api/v1/keys: status %d", st)
	}
	e := &env{srv: srv, user: user, accessKey: key.AccessKeyID, secretKey: key.SecretAccessKey, prefix: "gateway"}
	pydir, err := filepath.Abs("py")
	if err != nil {
		t.Fatal(err)
	}
	r := &runner{
		e: e, name: "pytest", bin: py, dir: pydir, bucket: ro, timeout: 5 * time.Minute,
		pre: []string{"-m", "pytest", "-q", "-p", "no:cacheprovider", "--basetemp", filepath.Join(t.TempDir(), "pytest"), "-rfE"},
		env: childEnv(map[string]string{
			"HOME":                 t.TempDir(),
			"COFFER_S3_ENDPOINT":   srv.S3URL,
			"COFFER_S3_ACCESS_KEY": e.accessKey,
			"COFFER_S3_SECRET_KEY": e.secretKey,
			"COFFER_GW_RO":         ro,
			"COFFER_GW_RW":         rw,
			"MINIO_ENDPOINT":       m.Endpoint(),
			"MINIO_ACCESS_KEY":     m.AccessKey,
			"MINIO_SECRET_KEY":     m.SecretKey,
			"MINIO_BUCKET":         mb,
		}),
	}
	res := r.try(t, "test_boto3_gateway.py")
	if res.err != nil {
		t.Fatalf("boto3 gateway suite failed:\n%s", res)
	}
	if !strings.Contains(res.stdout, "passed") {
		t.Fatalf("pytest ran nothing: %s", res)
	}
	t.Logf("pytest: %s", lastLine(res.stdout))
}
