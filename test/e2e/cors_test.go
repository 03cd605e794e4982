package e2e

import (
	"bytes"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/coffer-storage/coffer/test/testenv"
)

// TestS3CORS drives CORS against the binary (both shapes) with
// aws-sdk-go-v2 and plain HTTP, as a browser would send it: the
// configuration round trip, preflights (allowed, refused, without
// configuration), the headers on presigned, anonymous and error answers,
// and the removal, which the next request sees at once (the bucket record
// is cached and invalidated).
func TestS3CORS(t *testing.T) {
	srv := testenv.Start(t)
	cl, _ := s3Client(t, srv)
	ctx := t.Context()
	hc := srv.HTTPClient()
	bucket := "cors-" + strings.ToLower(hex.EncodeToString(randBytes(t, 4)))
	if _, err := cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	const app = "http://app.example"
	send := func(method, url string, body []byte, hdr ...string) *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	preflight := func(origin, method, headers string) *http.Response {
		t.Helper()
		return send("OPTIONS", srv.S3URL+"/"+bucket+"/photo.jpg", nil, "Origin", origin, "Access-Control-Request-Method", method,
			"Access-Control-Request-Headers", headers)
	}
	if r := preflight(app, "PUT", "content-type"); r.StatusCode != 403 {
		t.Errorf("preflight before any configuration: %d, want 403", r.StatusCode)
	}
	_, err := cl.GetBucketCors(ctx, &s3.GetBucketCorsInput{Bucket: aws.String(bucket)})
	if st, _ := httpError(t, err, "GetBucketCors without a configuration"); st != 404 {
		t.Errorf("GetBucketCors without a configuration: %d", st)
	}
	rules := []types.CORSRule{{
		ID: aws.String("app"), AllowedOrigins: []string{app, "https://*.app.example"}, AllowedMethods: []string{"GET", "PUT", "HEAD"},
		AllowedHeaders: []string{"content-type", "x-amz-*"}, ExposeHeaders: []string{"ETag", "x-amz-version-id"}, MaxAgeSeconds: aws.Int32(300),
	}}
	if _, err := cl.PutBucketCors(ctx, &s3.PutBucketCorsInput{Bucket: aws.String(bucket),
		CORSConfiguration: &types.CORSConfiguration{CORSRules: rules}}); err != nil {
		t.Fatal(err)
	}
	got, err := cl.GetBucketCors(ctx, &s3.GetBucketCorsInput{Bucket: aws.String(bucket)})
	if err != nil || len(got.CORSRules) != 1 || aws.ToString(got.CORSRules[0].ID) != "app" ||
		strings.Join(got.CORSRules[0].AllowedOrigins, " ") != app+" https://*.app.example" || aws.ToInt32(got.CORSRules[0].MaxAgeSeconds) != 300 {
		t.Fatalf("GetBucketCors = %+v, %v", got, err)
	}
	_, err = cl.PutBucketCors(ctx, &s3.PutBucketCorsInput{Bucket: aws.String(bucket), CORSConfiguration: &types.CORSConfiguration{
		CORSRules: []types.CORSRule{{AllowedOrigins: []string{"*"}, AllowedMethods: []string{"PATCH"}}}}})
	if st, _ := httpError(t, err, "PutBucketCors with PATCH"); st != 400 {
		t.Errorf("PutBucketCors with PATCH: %d", st)
	}

	// Preflights.
	r := preflight("https://eu.app.example", "PUT", "Content-Type,X-Amz-Meta-Owner")
	if h := r.Header; r.StatusCode != 200 || h.Get("Access-Control-Allow-Origin") != "https://eu.app.example" ||
		h.Get("Access-Control-Allow-Methods") != "GET, PUT, HEAD" || h.Get("Access-Control-Allow-Headers") != "content-type, x-amz-meta-owner" ||
		h.Get("Access-Control-Max-Age") != "300" || h.Get("Access-Control-Expose-Headers") != "ETag, x-amz-version-id" ||
		!strings.Contains(h.Get("Vary"), "Origin") {
		t.Errorf("allowed preflight: %d %v", r.StatusCode, h)
	}
	for _, tc := range [][3]string{{"http://evil.example", "PUT", ""}, {app, "DELETE", ""}, {app, "PUT", "authorization"}} {
		if r := preflight(tc[0], tc[1], tc[2]); r.StatusCode != 403 || r.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("preflight %v: %d %v, want 403 without CORS headers", tc, r.StatusCode, r.Header)
		}
	}
	if r := send("OPTIONS", srv.S3URL+"/"+bucket+"/k", nil, "Access-Control-Request-Method", "GET"); r.StatusCode != 400 {
		t.Errorf("preflight without Origin: %d, want 400", r.StatusCode)
	}

	// Actual requests: a presigned PUT and GET, a missing key, an
	// anonymous read of a private bucket, all with the rule's headers.
	ps := s3.NewPresignClient(cl)
	put, err := ps.PresignPutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("photo.jpg")}, s3.WithPresignExpires(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	get, err := ps.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("photo.jpg")}, s3.WithPresignExpires(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	corsOK := func(what string, r *http.Response, status int) {
		t.Helper()
		if h := r.Header; r.StatusCode != status || h.Get("Access-Control-Allow-Origin") != app || h.Get("Access-Control-Allow-Credentials") != "true" ||
			h.Get("Access-Control-Expose-Headers") != "ETag, x-amz-version-id" || !strings.Contains(h.Get("Vary"), "Origin") {
			t.Errorf("%s: %d %v, want %d with the rule's CORS headers", what, r.StatusCode, h, status)
		}
	}
	corsOK("presigned PUT", send("PUT", put.URL, []byte("jpeg bytes"), "Origin", app), 200)
	corsOK("presigned GET", send("GET", get.URL, nil, "Origin", app), 200)
	corsOK("anonymous GET of a private bucket", send("GET", srv.S3URL+"/"+bucket+"/photo.jpg", nil, "Origin", app), 403)
	corsOK("tampered presigned URL", send("GET", strings.Replace(get.URL, "photo.jpg", "nothing.jpg", 1), nil, "Origin", app), 403)
	missing, err := ps.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("nothing.jpg")})
	if err != nil {
		t.Fatal(err)
	}
	corsOK("missing key", send("GET", missing.URL, nil, "Origin", app), 404)
	if r := send("GET", get.URL, nil, "Origin", "http://evil.example"); r.StatusCode != 200 || r.Header.Get("Access-Control-Allow-Origin") != "" ||
		!strings.Contains(r.Header.Get("Vary"), "Origin") {
		t.Errorf("GET from another origin: %d %v, want 200, Vary and no Allow-Origin", r.StatusCode, r.Header)
	}
	if r := send("GET", get.URL, nil); r.StatusCode != 200 || r.Header.Get("Vary") != "" || r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("GET without Origin: %d %v, want no CORS header", r.StatusCode, r.Header)
	}

	// Removed: the next preflight and request see it.
	if _, err := cl.DeleteBucketCors(ctx, &s3.DeleteBucketCorsInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	if r := preflight(app, "PUT", ""); r.StatusCode != 403 {
		t.Errorf("preflight after DeleteBucketCors: %d, want 403", r.StatusCode)
	}
	if r := send("GET", get.URL, nil, "Origin", app); r.StatusCode != 200 || r.Header.Get("Access-Control-Allow-Origin") != "" || r.Header.Get("Vary") != "" {
		t.Errorf("GET after DeleteBucketCors: %d %v", r.StatusCode, r.Header)
	}
	_, err = cl.GetBucketCors(ctx, &s3.GetBucketCorsInput{Bucket: aws.String(bucket)})
	if st, _ := httpError(t, err, "GetBucketCors after DeleteBucketCors"); st != 404 {
		t.Errorf("GetBucketCors after DeleteBucketCors: %d", st)
	}
}
