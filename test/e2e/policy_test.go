package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/coffer-storage/coffer/test/testenv"
)

// TestBucketPolicy: a bucket policy decides requests of both APIs alike
// (the binary, real HTTP): anonymous reads allowed by a policy and denied
// without one, aws:SourceIp and aws:SecureTransport conditions (through a
// trusted proxy's X-Forwarded-For / X-Forwarded-Proto), an explicit Deny
// beating the owner for a non-policy action while the owner can still
// delete the policy, and s3:prefix on another user's ListBucket.
func TestBucketPolicy(t *testing.T) {
	srv := testenv.Start(t, "--trusted-proxies", "127.0.0.0/8")
	a, b := srv.NewUser(t), srv.NewUser(t)
	aS3, bS3 := testenv.NewS3Key(t, a), testenv.NewS3Key(t, b)
	bucket := a.Bucket
	for k, v := range map[string]string{"pub/hello.txt": "hello, world", "secret.txt": "a secret"} {
		if st, _, _ := put(t, a, bucket, k, []byte(v)); st != 201 {
			t.Fatalf("setup put %s: %d", k, st)
		}
	}
	policySet := false // a policy-granted read must not be cached publicly
	setPolicy := func(stmts ...string) {
		t.Helper()
		doc := `{"Version":"2012-10-17","Statement":[` + strings.Join(stmts, ",") + `]}`
		testenv.MustS3(t, aS3, srv.S3URL, "PUT", "/"+bucket+"?policy", []byte(doc), 204)
		policySet = true
	}
	anonS3 := func(key string, hdr ...string) int {
		t.Helper()
		req, err := http.NewRequest("GET", srv.S3URL+"/"+bucket+"/"+testenv.EscapeKey(key), nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	anonFile := func(key string, hdr ...string) (int, http.Header) {
		t.Helper()
		resp := testenv.NewClient(srv.URL).Do(t, "GET", testenv.FileURL(bucket, key), nil, hdr...)
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, resp.Header
	}
	// both checks that the S3 API and the file API's download route
	// agree about an anonymous read.
	both := func(what, key string, allowed bool, hdr ...string) {
		t.Helper()
		s3st := anonS3(key, hdr...)
		fst, fh := anonFile(key, hdr...)
		if allowed && (s3st != 200 || fst != 200) || !allowed && (s3st < 400 || fst < 400 || s3st == 404 || fst == 404) {
			t.Errorf("%s: anonymous S3 GET %d, file API GET %d; want allowed %v from both", what, s3st, fst, allowed)
		}
		if policySet && fst == 200 && strings.HasPrefix(fh.Get("Cache-Control"), "public") {
			t.Errorf("%s: a policy-granted read is cached publicly (%q)", what, fh.Get("Cache-Control"))
		}
	}

	both("no policy", "pub/hello.txt", false)
	setPolicy(`{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::` + bucket + `/pub/*"}`)
	both("public prefix", "pub/hello.txt", true)
	both("outside the public prefix", "secret.txt", false)
	if r := testenv.MustS3(t, aS3, srv.S3URL, "GET", "/"+bucket+"?policyStatus", nil, 200); !strings.Contains(string(r.Body), "<IsPublic>true</IsPublic>") {
		t.Errorf("GetBucketPolicyStatus = %s", r.Body)
	}

	// aws:SourceIp, as the trusted proxy forwards it.
	setPolicy(`{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::` + bucket + `/*",
		"Condition":{"IpAddress":{"aws:SourceIp":["10.1.0.0/16","2001:db8::/32"]}}}`)
	both("from an allowed network", "secret.txt", true, "X-Forwarded-For", "10.1.2.3")
	both("from an allowed IPv6 network", "secret.txt", true, "X-Forwarded-For", "2001:db8::7")
	both("from elsewhere", "secret.txt", false, "X-Forwarded-For", "192.0.2.1")
	both("from the proxy itself", "secret.txt", false)

	// aws:SecureTransport: HTTPS only, for everyone, the owner included.
	setPolicy(`{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::`+bucket+`/pub/*"}`,
		`{"Effect":"Deny","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::`+bucket+`/*","Condition":{"Bool":{"aws:SecureTransport":"false"}}}`)
	both("over https", "pub/hello.txt", true, "X-Forwarded-For", "192.0.2.9", "X-Forwarded-Proto", "https")
	both("over http", "pub/hello.txt", false)
	testenv.MustS3(t, aS3, srv.S3URL, "GET", "/"+bucket+"/pub/hello.txt", nil, 403)
	testenv.MustS3(t, aS3, srv.S3URL, "GET", "/"+bucket+"/pub/hello.txt", nil, 200, "X-Forwarded-For", "192.0.2.9", "X-Forwarded-Proto", "https")
	if resp := a.Do(t, "GET", testenv.FileURL(bucket, "pub/hello.txt"), nil); resp.StatusCode != 403 {
		t.Errorf("owner's file API read over http under the Deny: %d", resp.StatusCode)
		resp.Body.Close()
	} else {
		resp.Body.Close()
	}

	// An explicit Deny beats the owner's own rights for a non-policy
	// action, in both APIs; the owner can still delete the policy.
	setPolicy(`{"Effect":"Deny","Principal":"*","Action":["s3:PutObject","s3:DeleteObject"],"Resource":"arn:aws:s3:::` + bucket + `/*"}`)
	testenv.MustS3(t, aS3, srv.S3URL, "PUT", "/"+bucket+"/new.txt", []byte("x"), 403)
	if st, _, _ := put(t, a, bucket, "new.txt", []byte("x")); st != 403 {
		t.Errorf("owner's file API PUT under a Deny: %d, want 403", st)
	}
	if resp := a.Do(t, "DELETE", testenv.FileURL(bucket, "secret.txt"), nil); resp.StatusCode != 403 {
		t.Errorf("owner's file API DELETE under a Deny: %d, want 403", resp.StatusCode)
		resp.Body.Close()
	} else {
		resp.Body.Close()
	}
	testenv.MustS3(t, aS3, srv.S3URL, "GET", "/"+bucket+"/secret.txt", nil, 200) // not denied
	testenv.MustS3(t, aS3, srv.S3URL, "GET", "/"+bucket+"?policy", nil, 200)
	testenv.MustS3(t, aS3, srv.S3URL, "DELETE", "/"+bucket+"?policy", nil, 204)
	policySet = false
	testenv.MustS3(t, aS3, srv.S3URL, "PUT", "/"+bucket+"/new.txt", []byte("x"), 200)
	testenv.MustS3(t, aS3, srv.S3URL, "GET", "/"+bucket+"?policy", nil, 404)

	// A public-read bucket (the file API's visibility) with a policy that
	// denies some readers: the Deny wins over the preset, and what the
	// others read is not cached publicly (a shared cache would serve it
	// to the denied).
	if st := a.JSON(t, "PATCH", "/api/v1/buckets/"+bucket, map[string]any{"visibility": "public-read"}, nil); st != 200 {
		t.Fatalf("patch visibility: %d", st)
	}
	both("public-read, no policy", "secret.txt", true, "X-Forwarded-For", "192.0.2.1")
	if _, h := anonFile("secret.txt"); !strings.HasPrefix(h.Get("Cache-Control"), "public") {
		t.Errorf("public-read without a policy: Cache-Control %q, want public", h.Get("Cache-Control"))
	}
	setPolicy(`{"Effect":"Deny","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::` + bucket + `/*",
		"Condition":{"IpAddress":{"aws:SourceIp":"192.0.2.0/24"}}}`)
	both("public-read, denied network", "secret.txt", false, "X-Forwarded-For", "192.0.2.1")
	both("public-read, other network", "secret.txt", true, "X-Forwarded-For", "198.51.100.1")
	testenv.MustS3(t, aS3, srv.S3URL, "DELETE", "/"+bucket+"?policy", nil, 204)
	if st := a.JSON(t, "PATCH", "/api/v1/buckets/"+bucket, map[string]any{"visibility": "private"}, nil); st != 200 {
		t.Fatalf("patch visibility: %d", st)
	}

	// s3:prefix: b may list a's bucket under pub/ only.
	setPolicy(fmt.Sprintf(`{"Effect":"Allow","Principal":{"AWS":"%s"},"Action":"s3:ListBucket","Resource":"arn:aws:s3:::%s",
		"Condition":{"StringLike":{"s3:prefix":"pub/*"}}}`, bS3.ID, bucket))
	r := testenv.MustS3(t, bS3, srv.S3URL, "GET", "/"+bucket+"?list-type=2&prefix=pub/", nil, 200)
	if !strings.Contains(string(r.Body), "pub/hello.txt") || strings.Contains(string(r.Body), "secret.txt") {
		t.Errorf("b's listing of pub/: %s", r.Body)
	}
	testenv.MustS3(t, bS3, srv.S3URL, "GET", "/"+bucket+"?list-type=2", nil, 403)
	testenv.MustS3(t, bS3, srv.S3URL, "GET", "/"+bucket+"?list-type=2&prefix=sec", nil, 403)
	testenv.MustS3(t, bS3, srv.S3URL, "GET", "/"+bucket+"/pub/hello.txt", nil, 403) // listing is not reading
	// b may not manage a's policy.
	testenv.MustS3(t, bS3, srv.S3URL, "GET", "/"+bucket+"?policy", nil, 403)
	testenv.MustS3(t, bS3, srv.S3URL, "DELETE", "/"+bucket+"?policy", nil, 403)
	// A malformed policy changes nothing.
	r = testenv.MustS3(t, aS3, srv.S3URL, "PUT", "/"+bucket+"?policy", []byte(`{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::other/*"}]}`), 400)
	if !strings.Contains(string(r.Body), "MalformedPolicy") {
		t.Errorf("malformed policy: %s", r.Body)
	}
	testenv.MustS3(t, bS3, srv.S3URL, "GET", "/"+bucket+"?list-type=2&prefix=pub/", nil, 200)
}
