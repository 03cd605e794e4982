package s3compat

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/test/testenv"
)

// TestCaptureRequests records real clients' S3 requests as test vectors
// for internal/s3api/sigv4 (TestCapturedRequests). It runs only with
// COFFER_CAPTURE_DIR set:
//
//	COFFER_CAPTURE_DIR=internal/s3api/sigv4/testdata/captured go test -run TestCaptureRequests ./test/s3compat/
//
// A recording proxy sits between the clients and Coffer; every request
// (headers, raw body as sent, arrival time) is saved as one JSON file.
func TestCaptureRequests(t *testing.T) {
	dir := os.Getenv("COFFER_CAPTURE_DIR")
	if dir == "" {
		t.Skip("set COFFER_CAPTURE_DIR to record client requests")
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(moduleRoot(), dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	srv := testenv.Start(t)
	user := srv.NewUser(t)
	var key struct {
		ID     string `json:"access_key_id"`
		Secret string `json:"secret_access_key"`
	}
	if st := user.JSON(t, "POST", "/api/v1/keys", map[string]string{"name": "capture"}, &key); st != 201 {
		t.Fatalf("create key: %d", st)
	}
	e := &env{srv: srv, user: user, accessKey: key.ID, secretKey: key.Secret, prefix: "capture"}
	target, _ := url.Parse(e.srv.S3URL)
	proxy := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(target)
		pr.Out.Host = pr.In.Host // the clients signed the proxy's host
	}}
	var mu sync.Mutex
	client := ""
	seen := map[string]int{}
	rec := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		now := time.Now().UTC()
		op := r.Method + strings.ReplaceAll(strings.SplitN(r.URL.RawQuery, "=", 2)[0], "&", "")
		mu.Lock()
		name := fmt.Sprintf("%s-%s", client, strings.ToLower(op))
		seen[name]++
		n := seen[name]
		mu.Unlock()
		if n <= 2 && len(body) <= 256<<10 {
			hdr := map[string]any{"Host": r.Host}
			for k, v := range r.Header {
				if len(v) == 1 {
					hdr[k] = v[0]
				} else {
					hdr[k] = v
				}
			}
			if r.ContentLength >= 0 && len(r.TransferEncoding) == 0 {
				hdr["Content-Length"] = fmt.Sprint(r.ContentLength)
			}
			if len(r.TransferEncoding) > 0 {
				hdr["Transfer-Encoding"] = strings.Join(r.TransferEncoding, ",")
			}
			out := map[string]any{
				"name": fmt.Sprintf("%s %s %s", client, r.Method, r.URL.RequestURI()), "client": r.Header.Get("User-Agent"),
				"method": r.Method, "url": r.URL.RequestURI(), "headers": hdr,
				"secret": e.secretKey, "region": "us-east-1", "now": now.Format(time.RFC3339Nano), "want_error": "",
			}
			if len(body) > 0 {
				out["body"] = base64.StdEncoding.EncodeToString(body)
			}
			b, _ := json.MarshalIndent(out, "", "  ")
			os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%d.json", name, n)), append(b, '\n'), 0o644)
		}
		proxy.ServeHTTP(w, r)
	}))
	defer rec.Close()
	endpoint := rec.URL
	home := t.TempDir()
	small := filepath.Join(home, "hello world+é.txt")
	writeFile(t, small, []byte("hello, captured world\n"))
	set := func(c string) { mu.Lock(); client = c; mu.Unlock() }

	set("boto3")
	py := python(t)
	script := `
import boto3, sys
from botocore.config import Config
s3 = boto3.client("s3", endpoint_url=sys.argv[1], aws_access_key_id=sys.argv[2], aws_secret_access_key=sys.argv[3],
                  region_name="us-east-1", config=Config(s3={"addressing_style": "path"}))
s3.create_bucket(Bucket="capture-boto3")
s3.put_object(Bucket="capture-boto3", Key="dir/key with space+é.txt", Body=b"hello boto3", Metadata={"color": "blue"})
s3.put_object(Bucket="capture-boto3", Key="crc32c", Body=b"x" * 70000, ChecksumAlgorithm="SHA256")
s3.get_object(Bucket="capture-boto3", Key="dir/key with space+é.txt", Range="bytes=0-4")
s3.head_object(Bucket="capture-boto3", Key="crc32c", ChecksumMode="ENABLED")
s3.list_objects_v2(Bucket="capture-boto3", Prefix="dir/", Delimiter="/")
mp = s3.create_multipart_upload(Bucket="capture-boto3", Key="mp", ChecksumAlgorithm="CRC32")
p = s3.upload_part(Bucket="capture-boto3", Key="mp", UploadId=mp["UploadId"], PartNumber=1, Body=b"part", ChecksumAlgorithm="CRC32")
s3.complete_multipart_upload(Bucket="capture-boto3", Key="mp", UploadId=mp["UploadId"],
    MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": p["ETag"], "ChecksumCRC32": p["ChecksumCRC32"]}]})
s3.delete_objects(Bucket="capture-boto3", Delete={"Objects": [{"Key": "mp"}]})
`
	cmd := exec.Command(py, "-c", script, endpoint, e.accessKey, e.secretKey)
	cmd.Env = childEnv(map[string]string{"HOME": home})
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("boto3: %v\n%s", err, out)
	}

	set("awscli")
	aws := tool(t, "aws")
	awsEnv := childEnv(map[string]string{"HOME": home, "AWS_ACCESS_KEY_ID": e.accessKey, "AWS_SECRET_ACCESS_KEY": e.secretKey, "AWS_DEFAULT_REGION": "us-east-1"})
	for _, args := range [][]string{
		{"s3", "mb", "s3://capture-awscli"},
		{"s3", "cp", small, "s3://capture-awscli/dir/"},
		{"s3", "ls", "s3://capture-awscli", "--recursive"},
		{"s3api", "head-object", "--bucket", "capture-awscli", "--key", "dir/hello world+é.txt"},
		{"s3", "cp", "s3://capture-awscli/dir/hello world+é.txt", filepath.Join(home, "down.txt")},
	} {
		cmd := exec.Command(aws, append([]string{"--endpoint-url", endpoint}, args...)...)
		cmd.Env = awsEnv
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("aws %v: %v\n%s", args, err, out)
		}
	}

	set("rclone")
	rclone := tool(t, "rclone")
	cfg := filepath.Join(home, "rclone.conf")
	writeFile(t, cfg, []byte("[c]\ntype = s3\nprovider = Other\nenv_auth = false\naccess_key_id = "+e.accessKey+
		"\nsecret_access_key = "+e.secretKey+"\nendpoint = "+endpoint+"\nregion = us-east-1\nforce_path_style = true\n"))
	for _, args := range [][]string{
		{"mkdir", "c:capture-rclone"},
		{"copy", small, "c:capture-rclone/dir"},
		{"ls", "c:capture-rclone"},
		{"cat", "c:capture-rclone/dir/hello world+é.txt"},
	} {
		cmd := exec.Command(rclone, append([]string{"--config", cfg}, args...)...)
		cmd.Env = childEnv(map[string]string{"HOME": home})
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("rclone %v: %v\n%s", args, err, out)
		}
	}
	entries, _ := os.ReadDir(dir)
	t.Logf("%d captured requests in %s", len(entries), dir)
}
