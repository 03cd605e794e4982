// Package cors_test proves CORS in a real Chromium (Debian's chromium,
// through Playwright from PyPI) against the real binary: a page served
// from another loopback origin uploads with a presigned PUT and with the
// file API's presigned multipart flow (--cors-origins), reads both back
// with presigned GETs, and reads a file through a share link; a page of
// an origin the rules do not allow is blocked by the browser, while the
// same requests without CORS (from this test) succeed. testdata/app.html
// is the page, cors_flow.py drives it.
//
// It needs COFFER_CHROMIUM and COFFER_PLAYWRIGHT_PYTHON (scripts/test.sh
// sets them); without them it skips, or fails with
// COFFER_REQUIRE_CLIENTS=1.
package cors_test

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/coffer-storage/coffer/test/testenv"
)

//go:embed testdata/app.html
var appPage []byte

// pageConfig is what window.run of app.html gets.
type pageConfig struct {
	Page     string `json:"page"`
	PutURL   string `json:"put_url"`
	GetURL   string `json:"get_url"`
	Text     string `json:"text"`
	API      string `json:"api,omitempty"`
	Token    string `json:"token,omitempty"`
	Bucket   string `json:"bucket,omitempty"`
	Key      string `json:"key,omitempty"`
	Size     int    `json:"size,omitempty"`
	PartSize int    `json:"part_size,omitempty"`
	MultiGet string `json:"multi_get_url,omitempty"`
	ShareURL string `json:"share_url"`
}

// step is one step's outcome in the page.
type step struct {
	OK    bool            `json:"ok"`
	Error string          `json:"error"`
	Value json.RawMessage `json:"value"`
}

type pageResult struct {
	Put, Get, Share, Direct *step
	Console                 []string
}

func TestCORSInChromium(t *testing.T) {
	chromium, python := os.Getenv("COFFER_CHROMIUM"), os.Getenv("COFFER_PLAYWRIGHT_PYTHON")
	if chromium == "" || python == "" {
		if os.Getenv("COFFER_REQUIRE_CLIENTS") == "1" {
			t.Fatal("COFFER_CHROMIUM and COFFER_PLAYWRIGHT_PYTHON are required (scripts/test.sh sets them)")
		}
		t.Skip("set COFFER_CHROMIUM and COFFER_PLAYWRIGHT_PYTHON to run the browser test")
	}
	// Two origins serve the same page: the app's, which Coffer allows,
	// and another, which it does not.
	serve := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(appPage)
	})
	app, other := httptest.NewServer(serve), httptest.NewServer(serve)
	t.Cleanup(app.Close)
	t.Cleanup(other.Close)
	srv := testenv.Start(t, "--cors-origins", app.URL)

	c := srv.NewUser(t)
	var k struct {
		ID     string `json:"access_key_id"`
		Secret string `json:"secret_access_key"`
	}
	if st := c.JSON(t, "POST", "/api/v1/keys", map[string]string{"name": "cors"}, &k); st != 201 {
		t.Fatalf("create key: %d", st)
	}
	ctx := t.Context()
	cl := s3.NewFromConfig(aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider(k.ID, k.Secret, ""),
		HTTPClient: srv.HTTPClient()}, func(o *s3.Options) { o.BaseEndpoint = aws.String(srv.S3URL); o.UsePathStyle = true })
	if _, err := cl.PutBucketCors(ctx, &s3.PutBucketCorsInput{Bucket: aws.String(c.Bucket), CORSConfiguration: &types.CORSConfiguration{
		CORSRules: []types.CORSRule{{AllowedOrigins: []string{app.URL}, AllowedMethods: []string{"GET", "PUT", "HEAD"},
			AllowedHeaders: []string{"*"}, ExposeHeaders: []string{"ETag"}, MaxAgeSeconds: aws.Int32(60)}}}}); err != nil {
		t.Fatal(err)
	}
	ps := s3.NewPresignClient(cl)
	presign := func(method, key string) string {
		t.Helper()
		var (
			r   *v4.PresignedHTTPRequest
			err error
		)
		if method == "PUT" {
			r, err = ps.PresignPutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(c.Bucket), Key: aws.String(key)}, s3.WithPresignExpires(time.Hour))
		} else {
			r, err = ps.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(c.Bucket), Key: aws.String(key)}, s3.WithPresignExpires(time.Hour))
		}
		if err != nil {
			t.Fatal(err)
		}
		return r.URL
	}
	// A share link to a file the test puts.
	if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(c.Bucket), Key: aws.String("shared.txt"),
		Body: strings.NewReader("shared across origins")}); err != nil {
		t.Fatal(err)
	}
	var share struct{ URL string }
	if st := c.JSON(t, "POST", "/api/v1/shares", map[string]string{"bucket": c.Bucket, "key": "shared.txt"}, &share); st != 201 {
		t.Fatalf("create share: %d", st)
	}
	shareURL := share.URL
	if !strings.HasPrefix(shareURL, "http") {
		shareURL = srv.URL + shareURL
	}
	const size, partSize = 6 << 20, 5 << 20 // two parts: 5 MiB and 1 MiB
	cfg := map[string]pageConfig{
		"allowed": {Page: app.URL, PutURL: presign("PUT", "hello.txt"), GetURL: presign("GET", "hello.txt"), Text: "hello from another origin",
			API: srv.URL, Token: c.Token, Bucket: c.Bucket, Key: "multi.bin", Size: size, PartSize: partSize, MultiGet: presign("GET", "multi.bin"), ShareURL: shareURL},
		"blocked": {Page: other.URL, PutURL: presign("PUT", "blocked.txt"), GetURL: presign("GET", "hello.txt"), Text: "must not arrive",
			API: srv.URL, Token: c.Token, Bucket: c.Bucket, Key: "blocked.bin", Size: size, PartSize: partSize, MultiGet: presign("GET", "multi.bin"), ShareURL: shareURL},
	}
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "config.json")
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, "cors_flow.py")
	cmd.Env = append(os.Environ(), "CORS_CONFIG="+cfgFile, "CORS_CHROMIUM="+chromium)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	out, err := cmd.Output()
	t.Logf("cors_flow.py (%s):\n%s\n%s", time.Since(start).Round(time.Second), out, stderr.String())
	if err != nil {
		t.Fatalf("cors_flow.py: %v\nserver log:\n%s", err, srv.Stderr())
	}
	var res map[string]pageResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("cors_flow.py's output: %v", err)
	}

	// The allowed origin: every step worked, the ETags were readable, and
	// the bytes read back are those sent.
	a := res["allowed"]
	for name, s := range map[string]*step{"presigned PUT": a.Put, "presigned GET": a.Get, "share link": a.Share, "direct multipart upload": a.Direct} {
		if s == nil || !s.OK {
			t.Errorf("allowed origin, %s: %+v", name, s)
		}
	}
	var (
		put    struct{ ETag string }
		get    struct{ Body string }
		shared struct{ Body string }
		direct struct {
			Parts int
			ETags []string
		}
	)
	for _, v := range []struct {
		s   *step
		out any
	}{{a.Put, &put}, {a.Get, &get}, {a.Share, &shared}, {a.Direct, &direct}} {
		if v.s != nil && v.s.OK {
			if err := json.Unmarshal(v.s.Value, v.out); err != nil {
				t.Errorf("step value %s: %v", v.s.Value, err)
			}
		}
	}
	if !strings.HasPrefix(put.ETag, `"`) {
		t.Errorf("allowed origin, presigned PUT: ETag %q not readable (ExposeHeader)", put.ETag)
	}
	if get.Body != "hello from another origin" {
		t.Errorf("allowed origin, presigned GET read %q", get.Body)
	}
	if shared.Body != "shared across origins" {
		t.Errorf("allowed origin, share link read %q", shared.Body)
	}
	if direct.Parts != 2 || len(direct.ETags) != 2 {
		t.Errorf("allowed origin, direct upload: %+v", direct)
	}
	head, err := cl.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(c.Bucket), Key: aws.String("multi.bin")})
	if err != nil || aws.ToInt64(head.ContentLength) != size || !strings.HasSuffix(aws.ToString(head.ETag), `-2"`) {
		t.Errorf("multi.bin after the page's upload: %+v, %v", head, err)
	}

	// The other origin: the browser refused every step (fetch rejects);
	// nothing it tried to write arrived.
	o := res["blocked"]
	for name, s := range map[string]*step{"presigned PUT": o.Put, "presigned GET": o.Get, "share link": o.Share, "direct multipart upload": o.Direct} {
		if s == nil || s.OK || !strings.Contains(s.Error, "TypeError") {
			t.Errorf("other origin, %s: %+v, want a fetch the browser blocks (TypeError)", name, s)
		}
	}
	for _, key := range []string{"blocked.txt", "blocked.bin"} {
		if _, err := cl.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(c.Bucket), Key: aws.String(key)}); err == nil {
			t.Errorf("%s exists: the blocked page's upload arrived", key)
		}
	}
	// The same requests without a browser (no CORS) succeed.
	resp, err := srv.HTTPClient().Get(cfg["blocked"].GetURL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "hello from another origin" {
		t.Errorf("the blocked page's presigned GET, sent by the test: %d %q", resp.StatusCode, body)
	}
	if resp, err := srv.HTTPClient().Get(shareURL); err != nil || resp.StatusCode != 200 {
		t.Errorf("the share link, read by the test: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	req, err := http.NewRequest("PUT", cfg["blocked"].PutURL, strings.NewReader("sent without a browser"))
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := srv.HTTPClient().Do(req); err != nil || resp.StatusCode != 200 {
		t.Errorf("the blocked page's presigned PUT, sent by the test: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	var up struct {
		ID string `json:"upload_id"`
	}
	if st := c.JSON(t, "POST", "/api/v1/uploads", map[string]any{"bucket": c.Bucket, "key": "blocked.bin", "size": size, "part_size": partSize}, &up); st != 201 {
		t.Errorf("the blocked page's direct upload, created by the test: %d", st)
	} else if st := c.JSON(t, "DELETE", "/api/v1/uploads/"+up.ID, nil, nil); st != 204 {
		t.Errorf("abort: %d", st)
	}
}
