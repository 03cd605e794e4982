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

// gateways is a server with two gateway buckets over one MinIO bucket
// (ro over all of it, rw under rw/), from --gateway flags with
// credentials from a file, and an S3 key of their owner.
type gateways struct {
	e      *env
	ro, rw string
	minio  *testbackend.MinIO
	bucket string // the backend bucket
	srv    *testenv.Server
}

func startGateways(t *testing.T) gateways {
	t.Helper()
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
	return gateways{e: e, ro: ro, rw: rw, minio: m, bucket: mb, srv: srv}
}

// TestAWSCLIGateway: gateway buckets refuse multipart uploads, so the aws
// cli's `s3 cp` of a file over its 8 MiB threshold fails until the
// threshold is raised with the command docs/gateway.md gives; then it is
// one PUT, stored in the backend.
func TestAWSCLIGateway(t *testing.T) {
	g := startGateways(t)
	aws := g.e.awsRunner(t, g.rw)
	src := filepath.Join(t.TempDir(), "big.bin")
	writeRandom(t, src, 20<<20, 7)
	if res := aws.try(t, "s3", "cp", "--only-show-errors", src, "s3://"+g.rw+"/big.bin"); res.err == nil || !strings.Contains(res.stderr, "NotImplemented") {
		t.Errorf("aws s3 cp of 20 MiB to a gateway bucket with the default threshold: want NotImplemented\n%s", res)
	}
	aws.run(t, "configure", "set", "default.s3.multipart_threshold", "5GB")
	aws.run(t, "s3", "cp", "--only-show-errors", src, "s3://"+g.rw+"/big.bin")
	dst := filepath.Join(t.TempDir(), "big.out")
	aws.run(t, "s3", "cp", "--only-show-errors", "s3://"+g.rw+"/big.bin", dst)
	if got, want := fileSHA(t, dst), fileSHA(t, src); got != want {
		t.Errorf("after the threshold: sha256 %s, uploaded %s", got, want)
	}
}

// TestBoto3Gateway runs py/test_boto3_gateway.py: boto3 lists (paginated,
// with a delimiter), reads, ranges and conditionally reads gateway buckets
// over MinIO while the test writes MinIO directly; a ro gateway refuses
// writes with AccessDenied; a rw one stores PutObject in the backend and
// refuses multipart uploads with NotImplemented. The gateways come from
// --gateway flags (credentials from a file).
func TestBoto3Gateway(t *testing.T) {
	py := python(t)
	g := startGateways(t)
	e, ro, rw, m, mb := g.e, g.ro, g.rw, g.minio, g.bucket
	pydir, err := filepath.Abs("py")
	if err != nil {
		t.Fatal(err)
	}
	r := &runner{
		e: e, name: "pytest", bin: py, dir: pydir, bucket: ro, timeout: 5 * time.Minute,
		pre: []string{"-m", "pytest", "-q", "-p", "no:cacheprovider", "--basetemp", filepath.Join(t.TempDir(), "pytest"), "-rfE"},
		env: childEnv(map[string]string{
			"HOME":                 t.TempDir(),
			"COFFER_S3_ENDPOINT":   g.srv.S3URL,
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
