package s3api

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"strings"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/crypt"
	"github.com/coffer-storage/coffer/internal/httpx"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/ratelimit"
	"github.com/coffer-storage/coffer/internal/s3api/s3err"
	"github.com/coffer-storage/coffer/internal/s3api/sigv2"
	"github.com/coffer-storage/coffer/internal/s3api/sigv4"
)

// postField is one field of a test form (in order); file names the file
// part's filename.
type postField struct{ name, value string }

// postBody is a multipart/form-data body of fields, then the file part
// (filename name, content data), then after (ignored by S3).
func postBody(t *testing.T, fields []postField, filename string, data []byte, after ...postField) ([]byte, string) {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for _, f := range fields {
		if err := w.WriteField(f.name, f.value); err != nil {
			t.Fatal(err)
		}
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="file"; filename="`+filename+`"`)
	h.Set("Content-Type", "application/octet-stream")
	fw, err := w.CreatePart(h)
	if err != nil {
		t.Fatal(err)
	}
	fw.Write(data)
	for _, f := range after {
		w.WriteField(f.name, f.value)
	}
	w.Close()
	return buf.Bytes(), w.FormDataContentType()
}

// policyB64 is a policy document expiring at exp with conditions.
func policyB64(t *testing.T, exp time.Time, conditions ...any) string {
	t.Helper()
	doc, err := json.Marshal(map[string]any{"expiration": exp.UTC().Format(time.RFC3339), "conditions": conditions})
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(doc)
}

// v4Fields are the SigV4 fields of a form signed by key (secret) with
// policy, at testNow.
func v4Fields(key, secret, policy string) []postField {
	date := testNow.Format("20060102")
	cred := key + "/" + date + "/us-east-1/s3/aws4_request"
	return []postField{
		{"x-amz-algorithm", "AWS4-HMAC-SHA256"}, {"x-amz-credential", cred},
		{"x-amz-date", testNow.Format("20060102T150405Z")}, {"policy", policy},
		{"x-amz-signature", sigv4.SignPost(secret, date, "us-east-1", policy)},
	}
}

// v4Conditions covers the SigV4 fields of a form signed by alice.
func v4Conditions(key string) []any {
	return []any{
		map[string]string{"x-amz-algorithm": "AWS4-HMAC-SHA256"},
		map[string]string{"x-amz-credential": key + "/" + testNow.Format("20060102") + "/us-east-1/s3/aws4_request"},
		map[string]string{"x-amz-date": testNow.Format("20060102T150405Z")},
	}
}

// post sends a form to target (path style) and returns the result.
func (e *s3Env) post(target string, body []byte, contentType string) s3Result {
	e.t.Helper()
	return e.do(req{method: "POST", target: target, body: body, hdr: []string{"Content-Type", contentType}})
}

// TestPostObject: browser form uploads, SigV4 and SigV2, with the policy's
// conditions and S3's answers to every broken form. Refusals store
// nothing.
func TestPostObject(t *testing.T) {
	future := testNow.Add(time.Hour)
	base := func(extra ...any) []any {
		return append(append(v4Conditions(aliceKey), map[string]string{"bucket": "b"},
			[]any{"starts-with", "$key", "up/"}), extra...)
	}
	// signed is a SigV4 form by alice with policy conditions, then the
	// object fields.
	signed := func(conds []any, fields ...postField) []postField {
		p := policyB64(t, future, conds...)
		return append(append([]postField{{"key", "up/a.txt"}}, v4Fields(aliceKey, aliceSecret, p)...), fields...)
	}
	data := []byte("hello, form")
	type tc struct {
		name    string
		fields  []postField
		file    []byte
		status  int
		code    string
		message string // a substring of the error message
	}
	tooBig := base([]any{"content-length-range", 0, 5})
	for _, c := range []tc{
		{"expired", func() []postField {
			p := policyB64(t, testNow.Add(-time.Minute), base()...)
			return append([]postField{{"key", "up/a.txt"}}, v4Fields(aliceKey, aliceSecret, p)...)
		}(), data, 403, s3err.AccessDenied, "Invalid according to Policy: Policy expired."},
		{"extra field", signed(base(), postField{"x-amz-meta-color", "red"}), data, 403, s3err.AccessDenied,
			"Invalid according to Policy: Extra input fields: x-amz-meta-color"},
		{"no bucket condition", signed(append(v4Conditions(aliceKey), []any{"starts-with", "$key", ""})), data, 403, s3err.AccessDenied,
			"Extra input fields: bucket"},
		{"condition failed", signed(base([]any{"eq", "$Content-Type", "image/png"}), postField{"Content-Type", "text/plain"}), data,
			403, s3err.AccessDenied, `Invalid according to Policy: Policy Condition failed: ["eq","$Content-Type","image/png"]`},
		{"key outside the prefix", append([]postField{{"key", "other/a.txt"}}, signed(base())[1:]...), data, 403, s3err.AccessDenied,
			`Policy Condition failed: ["starts-with","$key","up/"]`},
		{"wrong signature", func() []postField {
			f := signed(base())
			f[len(f)-1].value = strings.Repeat("0", 64)
			return f
		}(), data, 403, s3err.SignatureDoesNotMatch, ""},
		{"unknown key", func() []postField {
			p := policyB64(t, future, base()...)
			return append([]postField{{"key", "up/a.txt"}}, v4Fields("NOSUCHKEY", "x", p)...)
		}(), data, 403, s3err.InvalidAccessKeyID, ""},
		{"wrong region", func() []postField {
			f := signed(base())
			f[2].value = strings.Replace(f[2].value, "us-east-1", "eu-west-1", 1)
			return f
		}(), data, 400, s3err.InvalidArgument, `the region "eu-west-1" is wrong; expecting "us-east-1"`},
		{"bad algorithm", func() []postField {
			f := signed(base())
			f[1].value = "AWS4-HMAC-SHA1"
			return f
		}(), data, 400, s3err.InvalidArgument, "Only AWS4-HMAC-SHA256 is supported"},
		{"missing date", func() []postField {
			f := signed(base())
			return append(f[:3], f[4:]...)
		}(), data, 400, s3err.InvalidArgument, "Bucket POST must contain a field named 'x-amz-date'."},
		{"missing key", signed(base())[1:], data, 400, s3err.InvalidArgument, "Bucket POST must contain a field named 'key'."},
		{"too large", signed(tooBig), []byte("0123456789"), 400, s3err.EntityTooLarge, ""},
		{"too small", signed(base([]any{"content-length-range", 100, 1000})), data, 400, s3err.EntityTooSmall, ""},
		{"bad range", signed(base([]any{"content-length-range", -1, 0})), data, 400, s3err.InvalidPolicyDocument, "content-length-range"},
		{"no expiration", func() []postField {
			p := base64.StdEncoding.EncodeToString([]byte(`{"conditions": []}`))
			return append([]postField{{"key", "up/a.txt"}}, v4Fields(aliceKey, aliceSecret, p)...)
		}(), data, 400, s3err.InvalidPolicyDocument, "Invalid Policy: Policy missing expiration."},
		{"not base64", func() []postField {
			return append([]postField{{"key", "up/a.txt"}}, v4Fields(aliceKey, aliceSecret, "%%%")...)
		}(), data, 400, s3err.InvalidPolicyDocument, "Invalid Policy: invalid Base64 encoding."},
		{"anonymous into a private bucket", []postField{{"key", "up/a.txt"}}, data, 403, s3err.AccessDenied, ""},
		{"another user's bucket", func() []postField {
			p := policyB64(t, future, append(v4Conditions(bobKey), map[string]string{"bucket": "b"}, []any{"starts-with", "$key", ""})...)
			return append([]postField{{"key", "up/a.txt"}}, v4Fields(bobKey, bobSecret, p)...)
		}(), data, 403, s3err.AccessDenied, ""},
		{"unknown canned ACL", signed(base(map[string]string{"acl": "everyone-may"}), postField{"acl", "everyone-may"}), data,
			400, s3err.InvalidArgument, ""},
		{"bad tagging", signed(base([]any{"starts-with", "$tagging", ""}), postField{"tagging", "color=red"}), data,
			400, s3err.MalformedXML, ""},
		{"bad checksum", signed(base(), postField{"x-amz-checksum-crc32", crc32B64([]byte("other"))}), data,
			400, s3err.BadDigest, ""},
		{"bad Content-MD5", signed(base([]any{"starts-with", "$Content-MD5", ""}), postField{"Content-MD5", md5B64([]byte("other"))}), data,
			400, s3err.BadDigest, ""},
		{"session token", signed(base([]any{"starts-with", "$x-amz-security-token", ""}), postField{"x-amz-security-token", "t"}), data,
			400, s3err.InvalidRequest, "Session tokens"},
		{"duplicate field", signed(base([]any{"starts-with", "$x-amz-meta-a", ""}), postField{"x-amz-meta-a", "1"}, postField{"X-Amz-Meta-A", "2"}), data,
			400, s3err.InvalidArgument, "more than once"},
		{"fields too large", signed(base([]any{"starts-with", "$x-amz-meta-a", ""}), postField{"x-amz-meta-a", strings.Repeat("a", 21<<10)}), data,
			400, s3err.MaxPostPreDataLengthExceeded, ""},
		{"sigv2 wrong signature", []postField{{"key", "up/a.txt"}, {"AWSAccessKeyId", aliceKey},
			{"policy", policyB64(t, future, base()...)}, {"signature", "AAAA"}}, data, 403, s3err.SignatureDoesNotMatch, ""},
		{"sigv2 no signature", []postField{{"key", "up/a.txt"}, {"AWSAccessKeyId", aliceKey},
			{"policy", policyB64(t, future, base()...)}}, data, 400, s3err.InvalidArgument, "named 'Signature'"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newS3Env(t)
			body, ct := postBody(t, c.fields, "a.txt", c.file)
			r := e.post("/b", body, ct)
			r.want(t, c.status, c.code)
			if !strings.Contains(r.message, c.message) {
				t.Errorf("message %q, want it to contain %q", r.message, c.message)
			}
			e.noWrites(t)
		})
	}

	t.Run("not a form", func(t *testing.T) {
		e := newS3Env(t)
		r := e.post("/b", []byte("{}"), "application/json")
		r.want(t, 412, s3err.PreconditionFailed)
		if !strings.Contains(r.Body.String(), "<Condition>Bucket POST must be of the enclosure-type multipart/form-data</Condition>") {
			t.Errorf("body %s names no Condition", r.Body)
		}
	})
	t.Run("no boundary", func(t *testing.T) {
		newS3Env(t).post("/b", []byte("x"), "multipart/form-data").want(t, 400, s3err.MalformedPOSTRequest)
	})
	t.Run("no file", func(t *testing.T) {
		var buf bytes.Buffer
		w := multipart.NewWriter(&buf)
		w.WriteField("key", "k")
		w.Close()
		e := newS3Env(t)
		e.post("/b", buf.Bytes(), w.FormDataContentType()).want(t, 400, s3err.IncorrectNumberOfFiles)
		e.noWrites(t)
	})
	t.Run("too large names the sizes", func(t *testing.T) {
		e := newS3Env(t)
		body, ct := postBody(t, signed(tooBig), "a.txt", []byte("0123456789"))
		r := e.post("/b", body, ct)
		for _, want := range []string{"<MaxSizeAllowed>5</MaxSizeAllowed>", "<ProposedSize>10</ProposedSize>"} {
			if !strings.Contains(r.Body.String(), want) {
				t.Errorf("body %s lacks %s", r.Body, want)
			}
		}
	})

	t.Run("stored", func(t *testing.T) {
		e := newS3Env(t)
		conds := base(map[string]string{"Content-Type": "text/plain"}, []any{"starts-with", "$x-amz-meta-color", ""}, []any{"starts-with", "$Cache-Control", ""},
			[]any{"content-length-range", 1, 100}, map[string]string{"acl": "public-read"},
			[]any{"starts-with", "$tagging", ""}, []any{"eq", "$success_action_status", "201"})
		tagging := "<Tagging><TagSet><Tag><Key>k1</Key><Value>v 1</Value></Tag></TagSet></Tagging>"
		fields := signed(conds, postField{"Content-Type", "text/plain"}, postField{"x-amz-meta-color", "red"}, postField{"Cache-Control", "no-cache"},
			postField{"acl", "public-read"}, postField{"tagging", tagging}, postField{"success_action_status", "201"},
			postField{"x-ignore-me", "1"}, postField{"x-amz-checksum-crc32", crc32B64(data)})
		fields[0].value = "up/${filename}"
		body, ct := postBody(t, fields, "photo.txt", data, postField{"after", "the file: ignored"})
		r := e.post("/b", body, ct)
		r.want(t, 201, "")
		o, ok := e.store.Objects["b/up/photo.txt"]
		if !ok {
			t.Fatalf("no object stored; writes %v, body %s", e.store.Writes, r.Body)
		}
		if !bytes.Equal(o.Data, data) || o.ContentType != "text/plain" || o.Metadata["color"] != "red" {
			t.Errorf("stored %q %q %v", o.Data, o.ContentType, o.Metadata)
		}
		if got := e.store.LastPut.Tags; len(got) != 1 || got[0] != (meta.Tag{Key: "k1", Value: "v 1"}) {
			t.Errorf("tags %v", got)
		}
		if got := e.store.LastPut.ACL; got == nil || got.Canned != "public-read" {
			t.Errorf("the form's acl reached the service as %+v", got)
		}
		var resp struct{ Location, Bucket, Key, ETag string }
		if err := xmlUnmarshal(r.Body.Bytes(), &resp); err != nil {
			t.Fatal(err)
		}
		if resp.Bucket != "b" || resp.Key != "up/photo.txt" || resp.ETag != etagOf(data) || resp.Location != "http://s3.test/b/up/photo.txt" {
			t.Errorf("PostResponse %+v", resp)
		}
		if got := r.Header().Get("ETag"); got != etagOf(data) {
			t.Errorf("ETag %q", got)
		}
		if got := r.Header().Get("x-amz-checksum-crc32"); got != crc32B64(data) {
			t.Errorf("x-amz-checksum-crc32 %q", got)
		}
	})
	t.Run("default 204, 200", func(t *testing.T) {
		for status, want := range map[string]int{"": 204, "200": 200, "404": 204} {
			e := newS3Env(t)
			f := signed(base([]any{"starts-with", "$success_action_status", ""}), postField{"success_action_status", status})
			body, ct := postBody(t, f, "a.txt", data)
			r := e.post("/b", body, ct)
			r.want(t, want, "")
			if r.Body.Len() != 0 || r.Header().Get("Location") != "http://s3.test/b/up/a.txt" {
				t.Errorf("%q: body %q, Location %q", status, r.Body, r.Header().Get("Location"))
			}
		}
	})
	t.Run("redirect", func(t *testing.T) {
		e := newS3Env(t)
		f := signed(base([]any{"starts-with", "$success_action_redirect", "https://app.test/"}),
			postField{"success_action_redirect", "https://app.test/done?x=1"})
		body, ct := postBody(t, f, "a.txt", data)
		r := e.post("/b", body, ct)
		r.want(t, 303, "")
		want := "https://app.test/done?x=1&bucket=b&key=up%2Fa.txt&etag=%22" + strings.Trim(etagOf(data), `"`) + "%22"
		if got := r.Header().Get("Location"); got != want {
			t.Errorf("Location %q, want %q", got, want)
		}
	})
	t.Run("SSE and lock fields as PutObject's headers", func(t *testing.T) {
		e := newS3Env(t)
		f := signed(base(map[string]string{"x-amz-server-side-encryption": "aws:kms"},
			map[string]string{"x-amz-server-side-encryption-aws-kms-key-id": "alias/k1"}),
			postField{"x-amz-server-side-encryption", "aws:kms"}, postField{"x-amz-server-side-encryption-aws-kms-key-id", "alias/k1"})
		body, ct := postBody(t, f, "a.txt", data)
		e.post("/b", body, ct).want(t, 204, "")
		if got := e.store.LastPut.SSE; got.Mode != crypt.ModeKMSKey || got.KMSKeyID != "alias/k1" {
			t.Errorf("SSE %+v", got)
		}
		e = newS3Env(t)
		f = signed(base(map[string]string{"x-amz-object-lock-mode": "GOVERNANCE"}), postField{"x-amz-object-lock-mode", "GOVERNANCE"})
		body, ct = postBody(t, f, "a.txt", data)
		e.post("/b", body, ct).want(t, 400, s3err.InvalidArgument) // a mode without a date, as PutObject answers
		e.noWrites(t)
	})
	t.Run("sigv2", func(t *testing.T) {
		e := newS3Env(t)
		p := policyB64(t, future, map[string]string{"bucket": "b"}, []any{"starts-with", "$key", ""})
		f := []postField{{"key", "v2.txt"}, {"AWSAccessKeyId", aliceKey}, {"policy", p}, {"signature", sigv2.Sign(aliceSecret, []byte(p))}}
		body, ct := postBody(t, f, "a.txt", data)
		e.post("/b", body, ct).want(t, 204, "")
		if _, ok := e.store.Objects["b/v2.txt"]; !ok {
			t.Errorf("not stored: %v", e.store.Writes)
		}
	})
	t.Run("case-insensitive names", func(t *testing.T) {
		e := newS3Env(t)
		conds := append(v4Conditions(aliceKey), map[string]string{"bUcKeT": "b"}, []any{"StArTs-WiTh", "$KeY", "up/"})
		f := signed(conds)
		f[0].name = "kEy"
		for i := range f {
			if f[i].name == "policy" {
				f[i].name = "pOLICy"
			}
		}
		body, ct := postBody(t, f, "a.txt", data)
		e.post("/b", body, ct).want(t, 204, "")
	})
	t.Run("virtual host", func(t *testing.T) {
		f := newFakeStore()
		api := New(Services{Buckets: f, Objects: f, Uploads: f, Keys: f}, testConfig(func(c *Config) {
			c.Now, c.Domain = func() time.Time { return testNow }, "s3.test"
		}), nil)
		body, ct := postBody(t, signed(base()), "a.txt", data)
		hr := httptest.NewRequest("POST", "http://b.s3.test/", bytes.NewReader(body))
		hr.Header.Set("Content-Type", ct)
		w := httptest.NewRecorder()
		httpx.RequestIDMiddleware(api.Handler()).ServeHTTP(w, hr)
		if w.Code != http.StatusNoContent || w.Header().Get("Location") != "http://b.s3.test/up/a.txt" {
			t.Errorf("%d %q %s", w.Code, w.Header().Get("Location"), w.Body)
		}
		if _, ok := f.Objects["b/up/a.txt"]; !ok {
			t.Errorf("not stored: %v", f.Writes)
		}
	})
}

// FuzzPostForm: any multipart body posted to a bucket is answered without
// a panic, and a refused one stores nothing.
func FuzzPostForm(f *testing.F) {
	const boundary = "fuzzboundary"
	f.Add([]byte("--fuzzboundary\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\nk\r\n--fuzzboundary\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\ndata\r\n--fuzzboundary--\r\n"))
	f.Add([]byte("--fuzzboundary\r\nContent-Disposition: form-data; name=\"policy\"\r\n\r\neyJ9\r\n--fuzzboundary--"))
	f.Add([]byte("--fuzzboundary\r\n\r\n\r\n--fuzzboundary--"))
	f.Fuzz(func(t *testing.T, body []byte) {
		e := newS3Env(t)
		r := e.post("/b", body, "multipart/form-data; boundary="+boundary)
		if r.Code >= 300 && len(e.store.Writes) > 0 {
			t.Fatalf("%d %s, yet wrote %v", r.Code, r.code, e.store.Writes)
		}
	})
}

// TestClassifyPostObject: the guards treat a form upload as PutObject (a
// streaming write, exempt from the request timeout), and as anonymous
// until the API has verified the form's signature.
func TestClassifyPostObject(t *testing.T) {
	api := New(Services{}, testConfig(nil), nil)
	k := api.Classify(httptest.NewRequest("POST", "/b", nil))
	if k.Route != "PostObject" || !k.Streams || k.Class != ratelimit.Write || k.Credentials {
		t.Errorf("%+v", k)
	}
	if k := api.Classify(httptest.NewRequest("POST", "/b?delete", nil)); k.Streams {
		t.Errorf("DeleteObjects: %+v", k)
	}
}

// TestClassifyCompleteFinishes: CompleteMultipartUpload is marked as
// finishing admitted work (not shed by the adaptive limit); UploadPart
// and CreateMultipartUpload are not.
func TestClassifyCompleteFinishes(t *testing.T) {
	api := New(Services{}, testConfig(nil), nil)
	for _, tc := range []struct {
		method, target, op string
		finishes           bool
	}{
		{"POST", "/b/k?uploadId=u1", "CompleteMultipartUpload", true},
		{"POST", "/b/k?uploads", "CreateMultipartUpload", false},
		{"PUT", "/b/k?uploadId=u1&partNumber=1", "UploadPart", false},
		{"PUT", "/b/k", "PutObject", false},
	} {
		if k := api.Classify(httptest.NewRequest(tc.method, tc.target, nil)); k.Route != tc.op || k.Finishes != tc.finishes {
			t.Errorf("%s %s: %+v, want %s finishing %v", tc.method, tc.target, k, tc.op, tc.finishes)
		}
	}
}
