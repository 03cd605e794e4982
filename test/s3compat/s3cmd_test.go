package s3compat

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testS3cmd: mb, put (small, unicode name, and 20 MiB which s3cmd sends
// multipart), ls, get (compared; s3cmd also checks the MD5), del, rb.
func (e *env) testS3cmd(t *testing.T) {
	bin := tool(t, "s3cmd")
	b := e.bucket("s3cmd")
	home := t.TempDir()
	host := strings.TrimPrefix(e.srv.S3URL, "http://")
	cfg := filepath.Join(home, "s3cfg")
	writeFile(t, cfg, []byte("[default]\naccess_key = "+e.accessKey+"\nsecret_key = "+e.secretKey+"\n"+
		"host_base = "+host+"\nhost_bucket = "+host+"\nuse_https = False\nsignature_v2 = False\n"+
		"bucket_location = us-east-1\ncheck_ssl_certificate = False\nproxy_host = \nproxy_port = 0\n"+
		"progress_meter = False\nmultipart_chunk_size_mb = 15\n"))
	sc := &runner{
		e: e, name: "s3cmd", bin: bin, dir: home, bucket: b, timeout: 4 * time.Minute,
		pre: []string{"-c", cfg, "--no-progress"},
		env: childEnv(map[string]string{"HOME": home}),
	}
	s3 := "s3://" + b
	work := t.TempDir()
	small := filepath.Join(work, "small.txt")
	writeRandom(t, small, 100<<10, 4)
	uni := filepath.Join(work, "ünï côdé.bin")
	writeRandom(t, uni, 5000, 5)
	big := filepath.Join(work, "big.bin")
	writeRandom(t, big, 20<<20, 6)

	sc.run(t, "mb", s3)
	sc.run(t, "put", small, s3+"/dir/small.txt")
	sc.run(t, "put", uni, s3+"/dir/ünï côdé.bin")
	sc.run(t, "put", big, s3+"/dir/big.bin")

	ls := sc.run(t, "ls", s3+"/dir/")
	for _, k := range []string{"dir/small.txt", "dir/ünï côdé.bin", "dir/big.bin"} {
		if !strings.Contains(ls.stdout, s3+"/"+k+"\n") {
			t.Errorf("s3cmd ls does not list %s:\n%s", k, ls.stdout)
		}
	}
	if lsb := sc.run(t, "ls"); !strings.Contains(lsb.stdout, s3+"\n") {
		t.Errorf("s3cmd ls (buckets) does not list %s:\n%s", s3, lsb.stdout)
	}

	for src, key := range map[string]string{small: "dir/small.txt", uni: "dir/ünï côdé.bin", big: "dir/big.bin"} {
		out := filepath.Join(work, "got-"+filepath.Base(src))
		sc.run(t, "get", "--force", s3+"/"+key, out)
		if fileSHA(t, out) != fileSHA(t, src) {
			st, _ := os.Stat(out)
			t.Errorf("s3cmd get %s: %d bytes sha256 %s, want sha256 %s", key, st.Size(), fileSHA(t, out), fileSHA(t, src))
		}
	}

	sc.run(t, "del", s3+"/dir/small.txt")
	ls = sc.run(t, "ls", s3+"/dir/")
	if strings.Contains(ls.stdout, "small.txt") || !strings.Contains(ls.stdout, "big.bin") {
		t.Errorf("s3cmd ls after del:\n%s", ls.stdout)
	}
	sc.run(t, "del", "--recursive", "--force", s3+"/dir/")
	if ls := sc.run(t, "ls", "--recursive", s3); strings.TrimSpace(ls.stdout) != "" {
		t.Errorf("s3cmd ls after del --recursive:\n%s", ls.stdout)
	}
	sc.run(t, "rb", s3)
}
