package s3compat

import (
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testSigV2 checks AWS Signature Version 2 with real clients at their
// defaults against a custom endpoint: boto3's generate_presigned_url and
// aws cli's `s3 presign` (both SigV2 unless configured otherwise), used
// with plain HTTP; and SigV2-signed requests from boto3 (signature_version
// "s3") and s3cmd (signature_v2 = True).
func (e *env) testSigV2(t *testing.T) {
	b := e.bucket("sigv2")

	t.Run("boto3", func(t *testing.T) { e.pytest(t, "test_sigv2.py", b, "boto3 SigV2") })

	t.Run("awscli presign", func(t *testing.T) {
		aws := e.defaultAWSRunner(t, b)
		work := t.TempDir()
		src := filepath.Join(work, "presign me.bin")
		writeRandom(t, src, 256<<10, 7)
		data, _ := os.ReadFile(src)
		aws.run(t, "s3", "mb", "s3://"+b+"-cli")
		obj := "s3://" + b + "-cli/dir/presign me ü.bin"
		aws.run(t, "s3", "cp", "--only-show-errors", src, obj)

		url := strings.TrimSpace(aws.run(t, "s3", "presign", obj).stdout)
		if !isV2URL(t, url) || !strings.HasPrefix(url, e.srv.S3URL+"/") {
			t.Fatalf("aws s3 presign (default config): %q is not a SigV2 URL on %s", url, e.srv.S3URL)
		}
		if st, body := httpGet(t, url); st != 200 || shaHex(body) != shaHex(data) {
			t.Errorf("GET %s: status %d, %d bytes (want 200, %d bytes)\n%s", url, st, len(body), len(data), trim(body))
		}
		if curl, err := exec.LookPath("curl"); err == nil {
			out := filepath.Join(work, "curl.out")
			cmd := exec.Command(curl, "-sS", "--noproxy", "*", "-o", out, "-w", "%{http_code}", url)
			cmd.Env = childEnv(nil)
			code, err := cmd.Output()
			got, _ := os.ReadFile(out)
			if err != nil || string(code) != "200" || shaHex(got) != shaHex(data) {
				t.Errorf("curl %s: %v, status %s, %d bytes (want 200, %d bytes)", url, err, code, len(got), len(data))
			}
		}

		// Expired: 403 AccessDenied.
		url = strings.TrimSpace(aws.run(t, "s3", "presign", obj, "--expires-in", "1").stdout)
		time.Sleep(2200 * time.Millisecond)
		if st, body := httpGet(t, url); st != 403 || !strings.Contains(string(body), "<Code>AccessDenied</Code>") {
			t.Errorf("GET expired %s: status %d (want 403 AccessDenied)\n%s", url, st, trim(body))
		}
	})

	t.Run("s3cmd signature_v2", func(t *testing.T) {
		bin := tool(t, "s3cmd")
		home := t.TempDir()
		host := strings.TrimPrefix(e.srv.S3URL, "http://")
		cfg := filepath.Join(home, "s3cfg")
		writeFile(t, cfg, []byte("[default]\naccess_key = "+e.accessKey+"\nsecret_key = "+e.secretKey+"\n"+
			"host_base = "+host+"\nhost_bucket = "+host+"\nuse_https = False\nsignature_v2 = True\n"+
			"bucket_location = us-east-1\ncheck_ssl_certificate = False\nproxy_host = \nproxy_port = 0\n"+
			"progress_meter = False\nmultipart_chunk_size_mb = 5\n"))
		sc := &runner{
			e: e, name: "s3cmd", bin: bin, dir: home, bucket: b + "-s3cmd", timeout: 4 * time.Minute,
			pre: []string{"-c", cfg, "--no-progress"},
			env: childEnv(map[string]string{"HOME": home}),
		}
		s3 := "s3://" + b + "-s3cmd"
		work := t.TempDir()
		small := filepath.Join(work, "small ü.txt")
		writeFile(t, small, []byte("signed with SigV2\n"))
		big := filepath.Join(work, "big.bin")
		writeRandom(t, big, 12<<20, 11) // multipart at 5 MiB
		sc.run(t, "mb", s3)
		sc.run(t, "put", small, s3+"/dir/small ü.txt")
		sc.run(t, "put", big, s3+"/dir/big.bin")
		ls := sc.run(t, "ls", "--recursive", s3)
		if !strings.Contains(ls.stdout, "dir/small ü.txt") || !strings.Contains(ls.stdout, "dir/big.bin") {
			t.Errorf("s3cmd ls: want both keys\n%s", ls)
		}
		for _, name := range []string{"small ü.txt", "big.bin"} {
			dst := filepath.Join(work, "down-"+name)
			sc.run(t, "get", s3+"/dir/"+name, dst)
			if got, want := fileSHA(t, dst), fileSHA(t, filepath.Join(work, name)); got != want {
				t.Errorf("s3cmd get %s: sha256 %s, uploaded %s", name, got, want)
			}
		}
		sc.run(t, "del", "--recursive", "--force", s3)
		sc.run(t, "rb", s3)
	})
}

// defaultAWSRunner is an aws cli runner with a config holding only the
// region: no signature_version, no addressing style (path-style is chosen
// for an IP endpoint), as a new user has it.
func (e *env) defaultAWSRunner(t *testing.T, bucket string) *runner {
	aws := tool(t, "aws")
	home := t.TempDir()
	cfg := filepath.Join(home, "aws-config")
	writeFile(t, cfg, []byte("[default]\nregion = us-east-1\noutput = json\n"))
	creds := filepath.Join(home, "aws-credentials")
	writeFile(t, creds, nil)
	return &runner{
		e: e, name: "aws", bin: aws, dir: home, bucket: bucket, timeout: 4 * time.Minute,
		pre: []string{"--endpoint-url", e.srv.S3URL},
		env: childEnv(map[string]string{
			"HOME":                        home,
			"AWS_ACCESS_KEY_ID":           e.accessKey,
			"AWS_SECRET_ACCESS_KEY":       e.secretKey,
			"AWS_DEFAULT_REGION":          "us-east-1",
			"AWS_CONFIG_FILE":             cfg,
			"AWS_SHARED_CREDENTIALS_FILE": creds,
			"AWS_PAGER":                   "",
			"AWS_MAX_ATTEMPTS":            "3",
		}),
	}
}

// isV2URL reports whether raw is a SigV2 presigned URL.
func isV2URL(t *testing.T, raw string) bool {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	q := u.Query()
	return q.Has("AWSAccessKeyId") && q.Has("Signature") && q.Has("Expires") && !q.Has("X-Amz-Signature")
}
