package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/coffer-storage/coffer/test/testenv"
)

// TestCrossUserACL is the cross-user matrix of the ACL paths (issue 21):
// A's objects with a grant to B (by email), AllUsers, AuthenticatedUsers
// or none, read by A, B, a third user C, and anonymous, through the file
// API and the S3 API; the bucket's ACL granting list to
// AuthenticatedUsers; B's own object in A's bucket. Every cell must be
// what the grants say (0 leaks), and the two APIs must agree.
func TestCrossUserACL(t *testing.T) {
	srv := testenv.Start(t)
	a, b, c := srv.NewUser(t), srv.NewUser(t), srv.NewUser(t)
	ka, kb, kc := testenv.NewS3Key(t, a), testenv.NewS3Key(t, b), testenv.NewS3Key(t, c)
	bucket := "/" + a.Bucket
	objects := map[string][]string{ // key -> the PutObject's ACL headers
		"private.txt": nil,
		"granted.txt": {"X-Amz-Grant-Read", `emailAddress="` + b.Email + `"`},
		"public.txt":  {"X-Amz-Acl", "public-read"},
		"authed.txt":  {"X-Amz-Acl", "authenticated-read"},
	}
	for k, hdr := range objects {
		testenv.MustS3(t, ka, srv.S3URL, "PUT", bucket+"/"+k, []byte("content of "+k), 200, hdr...)
	}
	// who may read what: the grants, and nothing else.
	type actor struct {
		name string
		file *testenv.Client // nil: anonymous
		key  *testenv.S3Key  // nil: anonymous
	}
	actors := []actor{{"A", a, &ka}, {"B", b, &kb}, {"C", c, &kc}, {"anonymous", nil, nil}}
	may := map[string]map[string]bool{
		"A":         {"private.txt": true, "granted.txt": true, "public.txt": true, "authed.txt": true},
		"B":         {"granted.txt": true, "public.txt": true, "authed.txt": true},
		"C":         {"public.txt": true, "authed.txt": true},
		"anonymous": {"public.txt": true},
	}
	fileGet := func(ac actor, bkt, k string) (int, []byte) {
		cl := ac.file
		if cl == nil {
			cl = testenv.NewClient(srv.URL)
		}
		resp := cl.Do(t, "GET", testenv.FileURL(bkt, k), nil)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, body
	}
	s3Do := func(ac actor, method, path string, body []byte, hdr ...string) (int, []byte) {
		if ac.key == nil {
			req, _ := http.NewRequest(method, srv.S3URL+path, bytes.NewReader(body))
			for i := 0; i+1 < len(hdr); i += 2 {
				req.Header.Set(hdr[i], hdr[i+1])
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			data, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, data
		}
		r, err := testenv.S3Do(*ac.key, srv.S3URL, method, path, body, hdr...)
		if err != nil {
			t.Fatal(err)
		}
		return r.Status, r.Body
	}
	leaks := 0
	cell := func(what string, allowed bool, st int, body []byte, content string) {
		t.Helper()
		switch {
		case allowed && (st != 200 || string(body) != content):
			t.Errorf("%s: %d, want 200 %q", what, st, content)
		case !allowed && (st < 400 || bytes.Contains(body, []byte(content))):
			leaks++
			t.Errorf("LEAK %s: %d %.80q", what, st, body)
		case !allowed && st != 401 && st != 403 && st != 404:
			t.Errorf("%s: %d %.200s, want a refusal", what, st, body)
		}
	}
	for _, ac := range actors {
		for k := range objects {
			want := may[ac.name][k]
			fst, fbody := fileGet(ac, a.Bucket, k)
			cell(fmt.Sprintf("%s reads %s (file API)", ac.name, k), want, fst, fbody, "content of "+k)
			sst, sbody := s3Do(ac, "GET", bucket+"/"+k, nil)
			cell(fmt.Sprintf("%s reads %s (S3)", ac.name, k), want, sst, sbody, "content of "+k)
			if (fst < 300) != (sst < 300) {
				t.Errorf("%s reads %s: the file API answers %d, S3 %d", ac.name, k, fst, sst)
			}
		}
		if ac.name == "A" {
			continue
		}
		// No grant reaches beyond reading: not the ACL, not a write, not a
		// delete, not a listing; a missing key is refused like a present one.
		for _, k := range []string{"granted.txt", "public.txt"} {
			st, body := s3Do(ac, "GET", bucket+"/"+k+"?acl", nil)
			cell(ac.name+" reads the ACL of "+k, false, st, body, "FULL_CONTROL")
			st, body = s3Do(ac, "PUT", bucket+"/"+k+"?acl", nil, "X-Amz-Acl", "public-read-write")
			cell(ac.name+" rewrites the ACL of "+k, false, st, body, "\x00")
			st, body = s3Do(ac, "PUT", bucket+"/"+k, []byte("overwritten"))
			cell(ac.name+" overwrites "+k, false, st, body, "\x00")
			st, body = s3Do(ac, "DELETE", bucket+"/"+k, nil)
			cell(ac.name+" deletes "+k, false, st, body, "\x00")
		}
		st, body := s3Do(ac, "GET", bucket+"?list-type=2", nil)
		cell(ac.name+" lists A's bucket", false, st, body, "private.txt")
		st, body = s3Do(ac, "GET", bucket+"?acl", nil)
		cell(ac.name+" reads the bucket's ACL", false, st, body, "FULL_CONTROL")
		if x, y := func() int { s, _ := s3Do(ac, "GET", bucket+"/private.txt", nil); return s }(),
			func() int { s, _ := s3Do(ac, "GET", bucket+"/missing.txt", nil); return s }(); x != y {
			t.Errorf("%s: existing key %d vs missing key %d: existence leaks", ac.name, x, y)
		}
	}
	// The bucket's ACL grants list (READ) to AuthenticatedUsers: B and C
	// list (S3 and the file API), anonymous does not; reading objects is
	// still up to their own ACLs.
	testenv.MustS3(t, ka, srv.S3URL, "PUT", bucket+"?acl", nil, 200, "X-Amz-Grant-Read", `uri="http://acs.amazonaws.com/groups/global/AuthenticatedUsers"`)
	for _, ac := range actors[1:] {
		st, body := s3Do(ac, "GET", bucket+"?list-type=2", nil)
		listed := st == 200 && bytes.Contains(body, []byte("private.txt"))
		fst := 0
		if ac.file != nil {
			fst = ac.file.JSON(t, "GET", "/api/v1/buckets/"+a.Bucket+"/files", nil, nil)
		} else {
			fst = testenv.NewClient(srv.URL).JSON(t, "GET", "/api/v1/buckets/"+a.Bucket+"/files", nil, nil)
		}
		want := ac.name != "anonymous"
		if listed != want || (fst == 200) != want {
			if !want {
				leaks++
			}
			t.Errorf("%s lists a bucket granting READ to AuthenticatedUsers: S3 %d, file API %d; want listed=%v", ac.name, st, fst, want)
		}
		fgst, _ := fileGet(ac, a.Bucket, "private.txt")
		sst, sbody := s3Do(ac, "GET", bucket+"/private.txt", nil)
		cell(ac.name+" reads private.txt of a listable bucket", false, sst, sbody, "content of private.txt")
		if fgst < 400 {
			leaks++
			t.Errorf("LEAK %s reads private.txt of a listable bucket through the file API: %d", ac.name, fgst)
		}
	}
	// A grants WRITE to B: B's object is B's; A (the bucket's owner) may
	// delete it but not read it, C may do neither.
	testenv.MustS3(t, ka, srv.S3URL, "PUT", bucket+"?acl", nil, 200, "X-Amz-Grant-Write", `emailAddress="`+b.Email+`"`,
		"X-Amz-Grant-Full-Control", `emailAddress="`+a.Email+`"`)
	testenv.MustS3(t, kb, srv.S3URL, "PUT", bucket+"/from-b.txt", []byte("content of from-b.txt"), 200)
	acl := testenv.MustS3(t, kb, srv.S3URL, "GET", bucket+"/from-b.txt?acl", nil, 200)
	if !bytes.Contains(acl.Body, []byte("FULL_CONTROL")) {
		t.Errorf("B's object's ACL: %s", acl.Body)
	}
	for _, ac := range []actor{actors[0], actors[2], actors[3]} {
		fst, fbody := fileGet(ac, a.Bucket, "from-b.txt")
		cell(ac.name+" reads B's object in A's bucket (file API)", false, fst, fbody, "content of from-b.txt")
		sst, sbody := s3Do(ac, "GET", bucket+"/from-b.txt", nil)
		cell(ac.name+" reads B's object in A's bucket (S3)", false, sst, sbody, "content of from-b.txt")
	}
	if st, body := fileGet(actors[1], a.Bucket, "from-b.txt"); st != 200 || string(body) != "content of from-b.txt" {
		t.Errorf("B reads its own object in A's bucket through the file API: %d", st)
	}
	if st, _ := s3Do(actors[2], "PUT", bucket+"/from-c.txt", []byte("x")); st != 403 {
		leaks++
		t.Errorf("LEAK C writes into A's bucket without a grant: %d", st)
	}
	testenv.MustS3(t, ka, srv.S3URL, "DELETE", bucket+"/from-b.txt", nil, 204)
	t.Logf("ACL matrix: %d leaks", leaks)
}
