package e2e

import (
	"archive/zip"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/coffer-storage/coffer/internal/testbackend"
	"github.com/coffer-storage/coffer/test/testenv"
)

// TestGatewayBuckets: an administrator makes two gateway buckets over one
// MinIO bucket (ro over all of it, rw under rw/); objects written to
// MinIO directly, before and during the test, appear through Coffer at
// once, with Range and conditional GETs, a replacement behind Coffer's
// back, a share link and a zip, an S3 client, and MinIO stopped (503 +
// Retry-After) and back without a restart. A restart with --gateway
// records the bucket from the flag.
func TestGatewayBuckets(t *testing.T) {
	m := testbackend.StartMinIO(t)
	bucket := m.CreateBucket(t)
	direct := s3.NewFromConfig(aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider(m.AccessKey, m.SecretKey, "")},
		func(o *s3.Options) { o.BaseEndpoint = aws.String(m.Endpoint()); o.UsePathStyle = true })
	putDirect := func(key, data string) string {
		t.Helper()
		out, err := direct.PutObject(t.Context(), &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: strings.NewReader(data)})
		if err != nil {
			t.Fatalf("direct put %s: %v", key, err)
		}
		return aws.ToString(out.ETag)
	}
	etagA := putDirect("docs/a.txt", "0123456789")
	putDirect("docs/sub/b.txt", "bee")

	creds := filepath.Join(t.TempDir(), "minio.creds")
	if err := os.WriteFile(creds, []byte("access_key="+m.AccessKey+"\nsecret_key="+m.SecretKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := testenv.Start(t)
	admin := newAdmin(t, srv)
	u := srv.NewUser(t)
	base := "s3://" + bucket
	q := "?endpoint=" + m.Endpoint() + "&region=us-east-1&credentials_file=" + creds
	ro, rw := "gwro-"+strings.ToLower(testbackend.RandomHex(4)), "gwrw-"+strings.ToLower(testbackend.RandomHex(4))
	for _, g := range []map[string]any{
		{"name": ro, "url": base + q + "&mode=ro", "owner": u.Email},
		{"name": rw, "url": base + "/rw" + q + "&mode=rw", "owner": u.Email},
	} {
		if st := admin.JSON(t, "POST", "/api/v1/admin/gateways", g, nil); st != 201 {
			t.Fatalf("create gateway %v: %d", g["name"], st)
		}
	}
	if st := u.JSON(t, "POST", "/api/v1/admin/gateways", map[string]any{"name": "gwx-nope", "url": base + q + "&mode=ro", "owner": u.Email}, nil); st != 403 {
		t.Errorf("a non-admin creates a gateway: %d, want 403", st)
	}
	var list struct {
		Gateways []struct {
			Name, URL string
		} `json:"gateways"`
	}
	if st := admin.JSON(t, "GET", "/api/v1/admin/gateways", nil, &list); st != 200 || len(list.Gateways) != 2 || strings.Contains(list.Gateways[0].URL, m.SecretKey) {
		t.Errorf("list gateways: %d %+v", st, list)
	}
	var mine struct {
		Buckets []struct {
			Name    string
			Gateway bool
		} `json:"buckets"`
	}
	u.JSON(t, "GET", "/api/v1/buckets", nil, &mine)
	gws := 0
	for _, b := range mine.Buckets {
		if b.Gateway {
			gws++
		}
	}
	if gws != 2 {
		t.Errorf("the owner's buckets: %+v; want two gateway buckets", mine.Buckets)
	}
	// A secret in the URL is refused.
	if st := admin.JSON(t, "POST", "/api/v1/admin/gateways", map[string]any{"name": "gwx-secret", "url": base + q + "&mode=ro&secret_key=x", "owner": u.Email}, nil); st != 400 {
		t.Errorf("a gateway URL with a secret: %d, want 400", st)
	}

	get := func(c *testenv.Client, bkt, key string, hdr ...string) (int, string, *httpHeader) {
		t.Helper()
		resp := c.Do(t, "GET", testenv.FileURL(bkt, key), nil, hdr...)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), &httpHeader{resp.Header.Get("ETag"), resp.Header.Get("Retry-After"), resp.Header.Get("Content-Range")}
	}
	t.Run("reads, ranges, conditionals", func(t *testing.T) {
		st, body, h := get(u, ro, "docs/a.txt")
		if st != 200 || body != "0123456789" || h.etag != etagA {
			t.Fatalf("GET: %d %q %s; want the backend's bytes and ETag %s", st, body, h.etag, etagA)
		}
		for rng, want := range map[string]string{"bytes=0-0": "0", "bytes=9-9": "9", "bytes=-3": "789", "bytes=4-": "456789"} {
			if st, body, _ := get(u, ro, "docs/a.txt", "Range", rng); st != 206 || body != want {
				t.Errorf("Range %s: %d %q, want 206 %q", rng, st, body, want)
			}
		}
		if st, _, _ := get(u, ro, "docs/a.txt", "If-None-Match", etagA); st != 304 {
			t.Errorf("If-None-Match current ETag: %d, want 304", st)
		}
		lm := u.Do(t, "HEAD", testenv.FileURL(ro, "docs/a.txt"), nil)
		lm.Body.Close()
		if st, _, _ := get(u, ro, "docs/a.txt", "If-Modified-Since", lm.Header.Get("Last-Modified")); lm.Header.Get("Last-Modified") == "" || st != 304 {
			t.Errorf("If-Modified-Since Last-Modified (%q): %d, want 304", lm.Header.Get("Last-Modified"), st)
		}
		if st, _, _ := get(u, ro, "docs/a.txt", "If-Match", `"stale"`); st != 412 {
			t.Errorf("If-Match stale: %d, want 412", st)
		}
		putDirect("docs/new.txt", "appeared")
		if st, body, _ := get(u, ro, "docs/new.txt"); st != 200 || body != "appeared" {
			t.Errorf("object written during the test: %d %q", st, body)
		}
		etag2 := putDirect("docs/a.txt", "replaced behind the back")
		if st, body, h := get(u, ro, "docs/a.txt"); st != 200 || body != "replaced behind the back" || h.etag != etag2 {
			t.Errorf("after replacement: %d %q %s; want the new bytes, ETag %s", st, body, h.etag, etag2)
		}
		if st, _, _ := get(u, ro, "docs/a.txt", "If-None-Match", etagA); st != 200 {
			t.Errorf("If-None-Match with the old ETag after replacement: %d, want 200", st)
		}
		// --cache auto on the embedded shape caches gateway reads: the
		// reads above hit it (docs/gateway.md).
		if v, err := strconv.ParseFloat(metric(t, srv, "coffer_blob_cache_hits_total"), 64); err != nil || v < 1 {
			t.Errorf("coffer_blob_cache_hits_total = %v (%v), want ≥ 1", v, err)
		}
		other := srv.NewUser(t)
		if st, _, _ := get(other, ro, "docs/a.txt"); st != 403 {
			t.Errorf("another user's GET: %d, want 403", st)
		}
	})
	t.Run("writes", func(t *testing.T) {
		resp := u.Do(t, "PUT", testenv.FileURL(ro, "docs/x.txt"), strings.NewReader("no"))
		resp.Body.Close()
		if resp.StatusCode != 403 {
			t.Errorf("PUT to the ro gateway: %d, want 403", resp.StatusCode)
		}
		resp = u.Do(t, "PUT", testenv.FileURL(rw, "up.txt"), strings.NewReader("through coffer"))
		resp.Body.Close()
		if resp.StatusCode != 201 {
			t.Fatalf("PUT to the rw gateway: %d", resp.StatusCode)
		}
		out, err := direct.GetObject(t.Context(), &s3.GetObjectInput{Bucket: &bucket, Key: aws.String("rw/up.txt")})
		if err != nil {
			t.Fatalf("the backend has no rw/up.txt: %v", err)
		}
		b, _ := io.ReadAll(out.Body)
		out.Body.Close()
		if string(b) != "through coffer" {
			t.Errorf("backend bytes: %q", b)
		}
		// Visible through the ro gateway too (same backend bucket).
		if st, body, _ := get(u, ro, "rw/up.txt"); st != 200 || body != "through coffer" {
			t.Errorf("through the ro gateway: %d %q", st, body)
		}
		resp = u.Do(t, "DELETE", testenv.FileURL(rw, "up.txt"), nil)
		resp.Body.Close()
		if resp.StatusCode != 204 {
			t.Errorf("DELETE: %d", resp.StatusCode)
		}
		if st, _, _ := get(u, rw, "up.txt"); st != 404 {
			t.Errorf("GET after DELETE: %d, want 404", st)
		}
	})
	t.Run("share link and zip", func(t *testing.T) {
		var sh struct {
			URL string `json:"url"`
		}
		if st := u.JSON(t, "POST", "/api/v1/shares", map[string]any{"bucket": ro, "prefix": "docs/"}, &sh); st != 201 {
			t.Fatalf("create share: %d", st)
		}
		anon := testenv.NewClient(srv.URL)
		resp := anon.Do(t, "GET", sh.URL+"/sub/b.txt", nil)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != "bee" {
			t.Errorf("GET through the share: %d %q", resp.StatusCode, b)
		}
		resp = anon.Do(t, "GET", sh.URL+"?zip=1", nil)
		b, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("zip: %d %s", resp.StatusCode, b)
		}
		zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, f := range zr.File {
			rc, _ := f.Open()
			d, _ := io.ReadAll(rc)
			rc.Close()
			got[f.Name] = string(d)
		}
		if got["sub/b.txt"] != "bee" || got["a.txt"] != "replaced behind the back" || got["new.txt"] != "appeared" {
			t.Errorf("zip entries: %v", got)
		}
	})
	t.Run("listings carry no content type", func(t *testing.T) {
		// The backend's listing has no content type; a GET answers the
		// backend's. Listings omit the field rather than show a wrong
		// empty one (docs/gateway.md).
		key := "typed/report.bin"
		if _, err := direct.PutObject(t.Context(), &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: strings.NewReader("typed"),
			ContentType: aws.String("text/x-coffer-test")}); err != nil {
			t.Fatal(err)
		}
		resp := u.Do(t, "GET", testenv.FileURL(ro, key), nil)
		resp.Body.Close()
		if got := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || got != "text/x-coffer-test" {
			t.Errorf("GET: %d, Content-Type %q; want the backend's", resp.StatusCode, got)
		}
		var list struct {
			Files []map[string]any `json:"files"`
		}
		if st := u.JSON(t, "GET", "/api/v1/buckets/"+ro+"/files?prefix=typed/", nil, &list); st != 200 || len(list.Files) != 1 {
			t.Fatalf("listing: %d %v", st, list.Files)
		}
		if ct, ok := list.Files[0]["content_type"]; ok {
			t.Errorf("the gateway listing shows content_type %q; the backend's listing has none", ct)
		}
		var sh struct {
			URL string `json:"url"`
		}
		if st := u.JSON(t, "POST", "/api/v1/shares", map[string]any{"bucket": ro, "prefix": "typed/"}, &sh); st != 201 {
			t.Fatalf("create share: %d", st)
		}
		list.Files = nil
		if st := testenv.NewClient(srv.URL).JSON(t, "GET", sh.URL, nil, &list); st != 200 || len(list.Files) != 1 {
			t.Fatalf("share listing: %d %v", st, list.Files)
		}
		if ct, ok := list.Files[0]["content_type"]; ok {
			t.Errorf("the gateway share listing shows content_type %q", ct)
		}
		// Native buckets list theirs.
		if resp := u.Do(t, "PUT", testenv.FileURL(u.Bucket, "typed.txt"), strings.NewReader("native")); resp.Body.Close() != nil || resp.StatusCode != 201 {
			t.Fatalf("native PUT: %d", resp.StatusCode)
		}
		list.Files = nil
		if st := u.JSON(t, "GET", "/api/v1/buckets/"+u.Bucket+"/files", nil, &list); st != 200 || len(list.Files) != 1 || list.Files[0]["content_type"] != "text/plain; charset=utf-8" {
			t.Errorf("native listing: %d %v; want content_type text/plain", st, list.Files)
		}
	})
	t.Run("S3 client", func(t *testing.T) {
		var k struct {
			ID     string `json:"access_key_id"`
			Secret string `json:"secret_access_key"`
		}
		if st := u.JSON(t, "POST", "/api/v1/keys", map[string]string{"name": "gw"}, &k); st != 201 {
			t.Fatalf("create key: %d", st)
		}
		cl := s3.NewFromConfig(aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider(k.ID, k.Secret, "")},
			func(o *s3.Options) { o.BaseEndpoint = aws.String(srv.S3URL); o.UsePathStyle = true })
		var keys, prefixes []string
		in := &s3.ListObjectsV2Input{Bucket: aws.String(ro), Prefix: aws.String("docs/"), Delimiter: aws.String("/"), MaxKeys: aws.Int32(1)}
		for range 10 {
			out, err := cl.ListObjectsV2(t.Context(), in)
			if err != nil {
				t.Fatalf("ListObjectsV2: %v", err)
			}
			for _, o := range out.Contents {
				keys = append(keys, aws.ToString(o.Key))
			}
			for _, p := range out.CommonPrefixes {
				prefixes = append(prefixes, aws.ToString(p.Prefix))
			}
			if !aws.ToBool(out.IsTruncated) {
				break
			}
			in.ContinuationToken = out.NextContinuationToken
		}
		if got, want := strings.Join(keys, ",")+"|"+strings.Join(prefixes, ","), "docs/a.txt,docs/new.txt|docs/sub/"; got != want {
			t.Errorf("S3 listing: got %s, want %s", got, want)
		}
		out, err := cl.GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String(ro), Key: aws.String("docs/sub/b.txt"), Range: aws.String("bytes=1-")})
		if err != nil {
			t.Fatalf("GetObject: %v", err)
		}
		b, _ := io.ReadAll(out.Body)
		out.Body.Close()
		if string(b) != "ee" {
			t.Errorf("S3 ranged GET: %q", b)
		}
		_, err = cl.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String(ro), Key: aws.String("nope"), Body: strings.NewReader("x")})
		if err == nil || !strings.Contains(err.Error(), "AccessDenied") {
			t.Errorf("S3 PutObject to the ro gateway: %v; want AccessDenied", err)
		}
		_, err = cl.CreateMultipartUpload(t.Context(), &s3.CreateMultipartUploadInput{Bucket: aws.String(rw), Key: aws.String("mp")})
		if err == nil || !strings.Contains(err.Error(), "NotImplemented") {
			t.Errorf("S3 CreateMultipartUpload in the rw gateway: %v; want NotImplemented", err)
		}
		// Bucket documents are the backend's: CORS too.
		_, err = cl.PutBucketCors(t.Context(), &s3.PutBucketCorsInput{Bucket: aws.String(rw), CORSConfiguration: &types.CORSConfiguration{
			CORSRules: []types.CORSRule{{AllowedOrigins: []string{"*"}, AllowedMethods: []string{"GET"}}}}})
		if err == nil || !strings.Contains(err.Error(), "NotImplemented") {
			t.Errorf("S3 PutBucketCors on the rw gateway: %v; want NotImplemented", err)
		}
		if _, err := cl.GetBucketCors(t.Context(), &s3.GetBucketCorsInput{Bucket: aws.String(rw)}); err == nil || !strings.Contains(err.Error(), "NotImplemented") {
			t.Errorf("S3 GetBucketCors on the rw gateway: %v; want NotImplemented", err)
		}
		if _, err := cl.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String(rw), Key: aws.String("s3put"), Body: strings.NewReader("via s3")}); err != nil {
			t.Errorf("S3 PutObject to the rw gateway: %v", err)
		}
		lb, err := cl.ListBuckets(t.Context(), &s3.ListBucketsInput{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, b := range lb.Buckets {
			names = append(names, aws.ToString(b.Name))
		}
		if !slices.Contains(names, ro) || !slices.Contains(names, rw) {
			t.Errorf("ListBuckets: %v; want the gateway buckets", names)
		}
	})
	t.Run("no versions in the file API", func(t *testing.T) {
		// The backend's versions are its own: the file API's version
		// routes answer 501, and change nothing.
		for _, c := range []struct {
			method, path string
			body         any
		}{
			{"PATCH", "/api/v1/buckets/" + rw, map[string]any{"versioning": "Enabled"}},
			{"GET", "/api/v1/buckets/" + ro + "/versions/docs/a.txt", nil},
			{"POST", "/api/v1/buckets/" + rw + "/restore", map[string]any{"key": "rw/x.txt", "version_id": "null"}},
			{"GET", "/api/v1/buckets/" + ro + "/trash", nil},
			{"POST", "/api/v1/buckets/" + rw + "/undelete", map[string]any{"key": "rw/x.txt"}},
			{"GET", testenv.FileURL(ro, "docs/a.txt") + "?version_id=" + strings.Repeat("a", 32), nil},
			{"DELETE", testenv.FileURL(rw, "x.txt") + "?version_id=" + strings.Repeat("a", 32), nil},
		} {
			var p testenv.Problem
			if st := u.JSON(t, c.method, c.path, c.body, &p); st != 501 || p.Code != "not_implemented" {
				t.Errorf("%s %s: %d %s, want 501", c.method, c.path, st, p.Code)
			}
		}
		resp := u.Do(t, "GET", testenv.FileURL(ro, "docs/a.txt"), nil)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("after the refusals: %d", resp.StatusCode)
		}
	})
	t.Run("backend down and back", func(t *testing.T) {
		m.Stop()
		st, _, h := get(u, ro, "docs/sub/b.txt")
		if st != 503 || h.retryAfter == "" {
			t.Errorf("GET with MinIO stopped: %d, Retry-After %q; want 503 with Retry-After", st, h.retryAfter)
		}
		if err := m.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			st, body, _ := get(u, ro, "docs/sub/b.txt")
			if st == 200 && body == "bee" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after MinIO came back: %d %q", st, body)
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
	t.Run("delete", func(t *testing.T) {
		name := "gwdel-" + strings.ToLower(testbackend.RandomHex(4))
		if st := admin.JSON(t, "POST", "/api/v1/admin/gateways", map[string]any{"name": name, "url": base + q + "&mode=rw", "owner": u.Email}, nil); st != 201 {
			t.Fatalf("create: %d", st)
		}
		resp := u.Do(t, "DELETE", "/api/v1/buckets/"+name, nil)
		resp.Body.Close()
		if resp.StatusCode != 403 {
			t.Errorf("the owner deletes the gateway bucket: %d, want 403", resp.StatusCode)
		}
		if st := admin.JSON(t, "DELETE", "/api/v1/admin/gateways/"+name, nil, nil); st != 204 {
			t.Errorf("admin delete: %d", st)
		}
		if st := admin.JSON(t, "DELETE", "/api/v1/admin/gateways/"+u.Bucket, nil, nil); st != 404 {
			t.Errorf("admin delete of a native bucket: %d, want 404", st)
		}
		if _, err := direct.HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: &bucket, Key: aws.String("docs/sub/b.txt")}); err != nil {
			t.Errorf("the backend's objects after the gateway went: %v", err)
		}
	})
	t.Run("--gateway flag", func(t *testing.T) {
		flagName := "gwflag-" + strings.ToLower(testbackend.RandomHex(4))
		srv.Args = append(srv.Args, "--gateway", flagName+"="+base+"/docs"+q+"&mode=ro&public=true&owner="+u.Email)
		srv.Restart()
		u.Login(t, "correct horse battery")
		anon := testenv.NewClient(srv.URL)
		resp := anon.Do(t, "GET", testenv.FileURL(flagName, "sub/b.txt"), nil)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != "bee" {
			t.Errorf("anonymous GET from the public --gateway bucket: %d %q", resp.StatusCode, b)
		}
	})
}

type httpHeader struct{ etag, retryAfter, contentRange string }
