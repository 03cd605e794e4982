package e2e

import (
	"bytes"
	"crypto/hmac"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/s3api/sigv4"
	"github.com/coffer-storage/coffer/test/testenv"
)

// chunkedReq sends body as STREAMING-AWS4-HMAC-SHA256-PAYLOAD (aws-chunked)
// in the given chunks, with the signature of chunk bad (-1: none; the final
// empty chunk is len(chunks)) replaced by zeros.
func chunkedReq(t *testing.T, u *s3User, method, path string, chunks [][]byte, bad int, hdr ...string) s3Resp {
	t.Helper()
	total := 0
	for _, c := range chunks {
		total += len(c)
	}
	now := time.Now().UTC()
	req, _ := http.NewRequest(method, u.srv.S3URL+path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	req.Header.Set("X-Amz-Decoded-Content-Length", fmt.Sprint(total))
	req.Header.Set("Content-Encoding", "aws-chunked")
	if err := sigv4.SignRequest(req, u.id, u.secret, "us-east-1", sigv4.StreamingPayload, now); err != nil {
		t.Fatal(err)
	}
	authz := req.Header.Get("Authorization")
	prev := authz[strings.LastIndex(authz, "Signature=")+len("Signature="):]
	date, amzDate := now.Format("20060102"), now.Format("20060102T150405Z")
	scope := sigv4.Scope(date, "us-east-1", "s3")
	key := sigv4.SigningKey(u.secret, date, "us-east-1", "s3")
	var body bytes.Buffer
	for i, c := range append(chunks, nil) {
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte("AWS4-HMAC-SHA256-PAYLOAD\n" + amzDate + "\n" + scope + "\n" + prev + "\n" + sigv4.EmptySHA256 + "\n" + hexSHA(c)))
		sig := hex.EncodeToString(mac.Sum(nil))
		prev = sig
		if i == bad {
			sig = strings.Repeat("0", 64)
		}
		fmt.Fprintf(&body, "%x;chunk-signature=%s\r\n", len(c), sig)
		body.Write(c)
		body.WriteString("\r\n")
	}
	req.Body = io.NopCloser(bytes.NewReader(body.Bytes()))
	req.ContentLength = int64(body.Len())
	return doS3(t, req)
}

func md5b64(b []byte) string { s := md5.Sum(b); return base64.StdEncoding.EncodeToString(s[:]) }

// sameLength returns s with old replaced by new, which must keep its
// length (a tampered body of the signed body's length).
func sameLength(t *testing.T, s, old, new string) []byte {
	t.Helper()
	out := strings.Replace(s, old, new, 1)
	if len(out) != len(s) || out == s {
		t.Fatalf("tampering %q → %q does not keep the length or changes nothing", old, new)
	}
	return []byte(out)
}

// bodyCase is one way of sending a body the signature (or a digest) does
// not cover.
type bodyCase struct {
	name string
	send func(t *testing.T) s3Resp
	code string
}

func runBodyCases(t *testing.T, cases []bodyCase, unchanged func(t *testing.T)) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.send(t)
			if r.status < 400 || r.code != tc.code {
				t.Errorf("got %d %s, want %s (%s)", r.status, r.code, tc.code, r.body)
			}
			unchanged(t)
		})
	}
}

// TestS3SignedBodyIntegrity: for every operation that takes a body, a
// body that is not the signed (or digested) one is refused with S3's error
// and changes nothing: tampered at the same length, the signed body with
// bytes after its root element, and aws-chunked with a bad chunk
// signature.
func TestS3SignedBodyIntegrity(t *testing.T) {
	srv := testenv.Start(t)
	u := newS3User(t, srv)
	bucket := "integrity-" + strings.ToLower(hex.EncodeToString(randBytes(t, 3)))
	u.mustBucket(t, bucket)
	b := "/" + bucket

	t.Run("CompleteMultipartUpload", func(t *testing.T) {
		uploadID := u.createUpload(t, b+"/mp.bin")
		up := "uploadId=" + url.QueryEscape(uploadID)
		etag := map[int]string{}
		for n, data := range map[int]string{1: "part one data", 2: "part two data"} {
			r := u.s3(t, "PUT", fmt.Sprintf("%s/mp.bin?partNumber=%d&%s", b, n, up), []byte(data), "")
			if r.status != 200 {
				t.Fatalf("part %d: %d %s", n, r.status, r.body)
			}
			etag[n] = r.header.Get("ETag")
		}
		complete := func(n int) string {
			return fmt.Sprintf(`<CompleteMultipartUpload><Part><PartNumber>%d</PartNumber><ETag>%s</ETag></Part></CompleteMultipartUpload>`, n, etag[n])
		}
		signed := complete(1)
		other := string(sameLength(t, signed, "<PartNumber>1</PartNumber><ETag>"+etag[1], "<PartNumber>2</PartNumber><ETag>"+etag[2]))
		path := b + "/mp.bin?" + up
		runBodyCases(t, []bodyCase{
			{"tampered, same length", func(t *testing.T) s3Resp {
				return u.s3(t, "POST", path, []byte(other), hexSHA([]byte(signed)))
			}, "XAmzContentSHA256Mismatch"},
			{"signed body then another root", func(t *testing.T) s3Resp {
				return u.s3(t, "POST", path, []byte(signed+other), hexSHA([]byte(signed)))
			}, "XAmzContentSHA256Mismatch"},
			{"signed body then garbage", func(t *testing.T) s3Resp {
				return u.s3(t, "POST", path, []byte(signed+"garbage"), hexSHA([]byte(signed)))
			}, "XAmzContentSHA256Mismatch"},
			{"unsigned payload, another root after", func(t *testing.T) s3Resp {
				return u.s3(t, "POST", path, []byte(signed+other), "UNSIGNED-PAYLOAD")
			}, "MalformedXML"},
			{"content-md5 of another body", func(t *testing.T) s3Resp {
				return u.s3(t, "POST", path, []byte(other), "UNSIGNED-PAYLOAD", "Content-MD5", md5b64([]byte(signed)))
			}, "BadDigest"},
			{"aws-chunked, bad chunk signature", func(t *testing.T) s3Resp {
				return chunkedReq(t, u, "POST", path, [][]byte{[]byte(other)}, 0)
			}, "SignatureDoesNotMatch"},
			{"aws-chunked, bad final chunk signature", func(t *testing.T) s3Resp {
				return chunkedReq(t, u, "POST", path, [][]byte{[]byte(other[:20]), []byte(other[20:])}, 2)
			}, "SignatureDoesNotMatch"},
		}, func(t *testing.T) {
			lp := u.s3(t, "GET", path, nil, "")
			if lp.status != 200 || strings.Count(string(lp.body), "<Part>") != 2 {
				t.Errorf("upload no longer open with both parts: %d %s", lp.status, lp.body)
			}
			if r := u.s3(t, "HEAD", b+"/mp.bin", nil, ""); r.status != 404 {
				t.Errorf("object completed by a refused request: HEAD %d", r.status)
			}
		})
		// The signed body still completes, with the signed part.
		if r := chunkedReq(t, u, "POST", path, [][]byte{[]byte(signed[:30]), []byte(signed[30:])}, -1); r.status != 200 {
			t.Fatalf("complete with the signed body: %d %s", r.status, r.body)
		}
		if r := u.s3(t, "GET", b+"/mp.bin", nil, ""); r.status != 200 || string(r.body) != "part one data" {
			t.Errorf("completed object: %d %q, want part one", r.status, r.body)
		}
	})

	t.Run("CreateBucket", func(t *testing.T) {
		name := "created-" + strings.ToLower(hex.EncodeToString(randBytes(t, 3)))
		signed := `<CreateBucketConfiguration><LocationConstraint>us-east-1</LocationConstraint></CreateBucketConfiguration>`
		other := string(sameLength(t, signed, "<LocationConstraint>us-east-1</LocationConstraint>", "<LocationConstraint></LocationConstraint>         "))
		runBodyCases(t, []bodyCase{
			{"tampered, same length", func(t *testing.T) s3Resp {
				return u.s3(t, "PUT", "/"+name, []byte(other), hexSHA([]byte(signed)))
			}, "XAmzContentSHA256Mismatch"},
			{"signed body then garbage", func(t *testing.T) s3Resp {
				return u.s3(t, "PUT", "/"+name, []byte(signed+"<x/>"), hexSHA([]byte(signed)))
			}, "XAmzContentSHA256Mismatch"},
			{"empty body, signed hash of another", func(t *testing.T) s3Resp {
				return u.s3(t, "PUT", "/"+name, nil, hexSHA([]byte(signed)))
			}, "XAmzContentSHA256Mismatch"},
			{"unsigned payload, garbage after the root", func(t *testing.T) s3Resp {
				return u.s3(t, "PUT", "/"+name, []byte(signed+"<x/>"), "UNSIGNED-PAYLOAD")
			}, "MalformedXML"},
			{"aws-chunked, bad chunk signature", func(t *testing.T) s3Resp {
				return chunkedReq(t, u, "PUT", "/"+name, [][]byte{[]byte(other)}, 0)
			}, "SignatureDoesNotMatch"},
		}, func(t *testing.T) { u.absent(t, "/"+name) })
		if r := u.s3(t, "PUT", "/"+name, []byte(signed), ""); r.status != 200 {
			t.Errorf("create with the signed body: %d %s", r.status, r.body)
		}
	})

	t.Run("DeleteObjects", func(t *testing.T) {
		for _, k := range []string{"keep-a", "keep-b"} {
			if r := u.s3(t, "PUT", b+"/"+k, []byte(k), ""); r.status != 200 {
				t.Fatalf("put %s: %d", k, r.status)
			}
		}
		signed := `<Delete><Object><Key>keep-a</Key></Object></Delete>`
		other := string(sameLength(t, signed, "keep-a", "keep-b"))
		runBodyCases(t, []bodyCase{
			{"tampered, same length", func(t *testing.T) s3Resp {
				return u.s3(t, "POST", b+"?delete", []byte(other), hexSHA([]byte(signed)))
			}, "XAmzContentSHA256Mismatch"},
			{"signed body then another root", func(t *testing.T) s3Resp {
				return u.s3(t, "POST", b+"?delete", []byte(signed+other), hexSHA([]byte(signed)))
			}, "XAmzContentSHA256Mismatch"},
			{"unsigned payload, another root after", func(t *testing.T) s3Resp {
				return u.s3(t, "POST", b+"?delete", []byte(signed+other), "UNSIGNED-PAYLOAD", "Content-MD5", md5b64([]byte(signed+other)))
			}, "MalformedXML"},
			{"content-md5 of another body", func(t *testing.T) s3Resp {
				return u.s3(t, "POST", b+"?delete", []byte(other), "UNSIGNED-PAYLOAD", "Content-MD5", md5b64([]byte(signed)))
			}, "BadDigest"},
			{"aws-chunked, bad chunk signature", func(t *testing.T) s3Resp {
				return chunkedReq(t, u, "POST", b+"?delete", [][]byte{[]byte(other)}, 0)
			}, "SignatureDoesNotMatch"},
		}, func(t *testing.T) {
			for _, k := range []string{"keep-a", "keep-b"} {
				if r := u.s3(t, "HEAD", b+"/"+k, nil, ""); r.status != 200 {
					t.Errorf("%s deleted by a refused request: HEAD %d", k, r.status)
				}
			}
		})
		if r := u.s3(t, "POST", b+"?delete", []byte(signed), ""); r.status != 400 || !strings.Contains(string(r.body), "<Code>InvalidRequest</Code>") {
			t.Errorf("DeleteObjects without Content-MD5 or a checksum: %d %s, want 400 InvalidRequest", r.status, r.body)
		}
		if r := u.s3(t, "POST", b+"?delete", []byte(signed), "", "Content-MD5", md5b64([]byte(signed))); r.status != 200 {
			t.Fatalf("delete with the signed body: %d %s", r.status, r.body)
		}
		u.absent(t, b+"/keep-a")
		if r := u.s3(t, "HEAD", b+"/keep-b", nil, ""); r.status != 200 {
			t.Errorf("keep-b: HEAD %d", r.status)
		}
	})

	t.Run("PutObject", func(t *testing.T) {
		orig := []byte("original content")
		if r := u.s3(t, "PUT", b+"/obj", orig, ""); r.status != 200 {
			t.Fatalf("put: %d", r.status)
		}
		signed := []byte("replacement text")
		other := sameLength(t, string(signed), "text", "TEXT")
		runBodyCases(t, []bodyCase{
			{"tampered, same length", func(t *testing.T) s3Resp {
				return u.s3(t, "PUT", b+"/obj", other, hexSHA(signed))
			}, "XAmzContentSHA256Mismatch"},
			{"signed body then more", func(t *testing.T) s3Resp {
				return u.s3(t, "PUT", b+"/obj", append(slices.Clone(signed), "more"...), hexSHA(signed))
			}, "XAmzContentSHA256Mismatch"},
			{"aws-chunked, bad chunk signature", func(t *testing.T) s3Resp {
				return chunkedReq(t, u, "PUT", b+"/obj", [][]byte{other}, 0)
			}, "SignatureDoesNotMatch"},
		}, func(t *testing.T) {
			if r := u.s3(t, "GET", b+"/obj", nil, ""); r.status != 200 || !bytes.Equal(r.body, orig) {
				t.Errorf("object changed by a refused request: %d %q", r.status, r.body)
			}
		})
	})

	t.Run("UploadPart", func(t *testing.T) {
		uploadID := u.createUpload(t, b+"/parts.bin")
		path := b + "/parts.bin?partNumber=1&uploadId=" + url.QueryEscape(uploadID)
		signed := []byte("the signed part")
		other := sameLength(t, string(signed), "signed", "SIGNED")
		runBodyCases(t, []bodyCase{
			{"tampered, same length", func(t *testing.T) s3Resp {
				return u.s3(t, "PUT", path, other, hexSHA(signed))
			}, "XAmzContentSHA256Mismatch"},
			{"signed body then more", func(t *testing.T) s3Resp {
				return u.s3(t, "PUT", path, append(slices.Clone(signed), "more"...), hexSHA(signed))
			}, "XAmzContentSHA256Mismatch"},
			{"aws-chunked, bad chunk signature", func(t *testing.T) s3Resp {
				return chunkedReq(t, u, "PUT", path, [][]byte{other}, 0)
			}, "SignatureDoesNotMatch"},
		}, func(t *testing.T) {
			lp := u.s3(t, "GET", b+"/parts.bin?uploadId="+url.QueryEscape(uploadID), nil, "")
			if lp.status != 200 || strings.Contains(string(lp.body), "<Part>") {
				t.Errorf("a refused part was stored: %d %s", lp.status, lp.body)
			}
		})
	})
}

// TestS3StrictXMLBodies (issue 18): a well-formed body that does not
// follow S3's schema — an unknown element, 200,000 nested unknown
// elements, a DeleteObjects naming no object — is 400 MalformedXML for
// every operation whose body Coffer parses, and changes nothing.
func TestS3StrictXMLBodies(t *testing.T) {
	srv := testenv.Start(t)
	u := newS3User(t, srv)
	bucket := "strict-" + strings.ToLower(hex.EncodeToString(randBytes(t, 3)))
	u.mustBucket(t, bucket)
	b := "/" + bucket
	if r := u.s3(t, "PUT", b+"/keep", []byte("keep"), ""); r.status != 200 {
		t.Fatalf("put: %d", r.status)
	}
	uploadID := u.createUpload(t, b+"/mp.bin")
	up := b + "/mp.bin?uploadId=" + url.QueryEscape(uploadID)
	part := u.s3(t, "PUT", b+"/mp.bin?partNumber=1&uploadId="+url.QueryEscape(uploadID), []byte("part"), "")
	if part.status != 200 {
		t.Fatalf("part: %d", part.status)
	}
	etag := part.header.Get("ETag")
	nested := strings.Repeat("<a>", 200_000) + strings.Repeat("</a>", 200_000)
	created := "strict-new-" + strings.ToLower(hex.EncodeToString(randBytes(t, 3)))
	for _, tc := range []struct {
		name, method, path, body string
	}{
		{"DeleteObjects, 200,000 nested unknown elements", "POST", b + "?delete", "<Delete>" + nested + "</Delete>"},
		{"DeleteObjects, nested unknown elements beside an object", "POST", b + "?delete", "<Delete><Object><Key>keep</Key></Object>" + nested + "</Delete>"},
		{"DeleteObjects, unknown element in Object", "POST", b + "?delete", "<Delete><Object><Key>keep</Key><Bypass>true</Bypass></Object></Delete>"},
		{"DeleteObjects, no object", "POST", b + "?delete", "<Delete><Quiet>true</Quiet></Delete>"},
		{"CompleteMultipartUpload, unknown element", "POST", up, "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>" + etag + "</ETag></Part><Extra/></CompleteMultipartUpload>"},
		{"CreateBucket, unknown element", "PUT", "/" + created, "<CreateBucketConfiguration><LocationConstraint>us-east-1</LocationConstraint><ObjectLockEnabled>true</ObjectLockEnabled></CreateBucketConfiguration>"},
		{"PutBucketEncryption, unknown element", "PUT", b + "?encryption", "<ServerSideEncryptionConfiguration><Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>AES256</SSEAlgorithm></ApplyServerSideEncryptionByDefault></Rule><Rule2/></ServerSideEncryptionConfiguration>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := u.s3(t, tc.method, tc.path, []byte(tc.body), "", "Content-MD5", md5b64([]byte(tc.body)))
			if r.status != 400 || r.code != "MalformedXML" {
				t.Errorf("got %d %s, want 400 MalformedXML (%.200s)", r.status, r.code, r.body)
			}
		})
	}
	// Nothing changed.
	if r := u.s3(t, "HEAD", b+"/keep", nil, ""); r.status != 200 {
		t.Errorf("keep deleted by a refused request: HEAD %d", r.status)
	}
	u.absent(t, b+"/mp.bin")
	if lp := u.s3(t, "GET", up, nil, ""); lp.status != 200 {
		t.Errorf("upload no longer open: %d", lp.status)
	}
	u.absent(t, "/"+created)
	if r := u.s3(t, "GET", b+"?encryption", nil, ""); r.status != 404 {
		t.Errorf("bucket encryption set by a refused request: GET %d %s", r.status, r.body)
	}
	// The same bodies without the violations work.
	if r := u.s3(t, "POST", up, []byte("<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>"+etag+"</ETag></Part></CompleteMultipartUpload>"), ""); r.status != 200 {
		t.Errorf("complete: %d %s", r.status, r.body)
	}
	del := "<Delete><Object><Key>keep</Key></Object></Delete>"
	if r := u.s3(t, "POST", b+"?delete", []byte(del), "", "Content-MD5", md5b64([]byte(del))); r.status != 200 || !strings.Contains(string(r.body), "<Deleted>") {
		t.Errorf("delete: %d %s", r.status, r.body)
	}
}

// TestS3RefusedHeaders: the binary applies docs/s3.md's "Refused headers
// and parameters" (a few rows of each kind; internal/s3api's
// TestRefusedHeaders runs every row in-process) and the refusals that need
// the real services answer their error and change nothing; what clients
// send by default still works.
func TestS3RefusedHeaders(t *testing.T) {
	srv := testenv.Start(t)
	u := newS3User(t, srv)
	bucket := "refused-" + strings.ToLower(hex.EncodeToString(randBytes(t, 3)))
	u.mustBucket(t, bucket)
	b := "/" + bucket
	orig := []byte("original")
	for _, k := range []string{"k", "src"} {
		if r := u.s3(t, "PUT", b+"/"+k, orig, ""); r.status != 200 {
			t.Fatalf("put %s: %d", k, r.status)
		}
	}
	uploadID := u.createUpload(t, b+"/mp")
	up := "uploadId=" + url.QueryEscape(uploadID)
	pr := u.s3(t, "PUT", b+"/mp?partNumber=1&"+up, []byte("part"), "")
	complete := []byte(`<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>` + pr.header.Get("ETag") + `</ETag></Part></CompleteMultipartUpload>`)
	var lb struct {
		Owner struct {
			ID string `xml:"ID"`
		} `xml:"Owner"`
	}
	if r := u.s3(t, "GET", "/", nil, ""); r.status != 200 || xml.Unmarshal(r.body, &lb) != nil || lb.Owner.ID == "" {
		t.Fatalf("ListBuckets: %d %s", r.status, r.body)
	}
	newBucket := "/never-" + strings.ToLower(hex.EncodeToString(randBytes(t, 3)))

	kUnchanged := func(t *testing.T) {
		if r := u.s3(t, "GET", b+"/k", nil, ""); r.status != 200 || !bytes.Equal(r.body, orig) {
			t.Errorf("object changed: %d %q", r.status, r.body)
		}
	}
	noUpload := func(t *testing.T) {
		r := u.s3(t, "GET", b+"?uploads&prefix=new-mp", nil, "")
		if r.status != 200 || strings.Contains(string(r.body), "<Upload>") {
			t.Errorf("an upload was created: %d %s", r.status, r.body)
		}
	}
	uploadOpen := func(t *testing.T) {
		if r := u.s3(t, "GET", b+"/mp?"+up, nil, ""); r.status != 200 || strings.Count(string(r.body), "<Part>") != 1 {
			t.Errorf("upload changed: %d %s", r.status, r.body)
		}
	}
	noBucket := func(t *testing.T) { u.absent(t, newBucket) }
	nothing := func(*testing.T) {}

	const ni, ia, ad, ireq, kn = "NotImplemented", "InvalidArgument", "AccessDenied", "InvalidRequest", "KMS.NotFoundException"
	type row struct {
		method, path string
		body         []byte
		hdr          []string
		code         string
		unchanged    func(*testing.T)
	}
	put := func(hdr ...string) row { return row{"PUT", b + "/k", []byte("changed"), hdr, ni, kUnchanged} }
	cp := func(hdr ...string) row {
		return row{"PUT", b + "/k", nil, append([]string{"X-Amz-Copy-Source", b + "/src", "X-Amz-Metadata-Directive", "REPLACE"}, hdr...), ni, kUnchanged}
	}
	mpu := func(hdr ...string) row { return row{"POST", b + "/new-mp?uploads", nil, hdr, ni, noUpload} }
	mk := func(hdr ...string) row { return row{"PUT", newBucket, nil, hdr, ni, noBucket} }
	ssec := []string{"X-Amz-Server-Side-Encryption-Customer-Algorithm", "AES256",
		"X-Amz-Server-Side-Encryption-Customer-Key", base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("k"), 32)),
		"X-Amz-Server-Side-Encryption-Customer-Key-Md5", md5b64(bytes.Repeat([]byte("k"), 32))}
	withCode := func(r row, code string) row { r.code = code; return r }
	// A scale-out node without --kms has no key provider (it never makes
	// a key of its own): SSE is NotImplemented there.
	kmsCode := kn
	if testenv.ScaleOut() {
		kmsCode = ni
	}

	rows := map[string]row{
		// The rows the handler decides from the request alone run in-process
		// (internal/s3api: TestRefusedHeaders, TestSSE); these prove the table
		// is applied in the binary, and the rows that need the real services
		// (a key service, an upload's and an object's stored encryption, real
		// owner IDs) run here.
		"PutObject DSSE":                           put("X-Amz-Server-Side-Encryption", "aws:kms:dsse"),
		"PutObject SSE-KMS unknown key":            withCode(put("X-Amz-Server-Side-Encryption", "aws:kms", "X-Amz-Server-Side-Encryption-Aws-Kms-Key-Id", "k"), kmsCode),
		"UploadPart SSE-C of a plain upload":       {"PUT", b + "/mp?partNumber=2&" + up, []byte("p2"), ssec, ireq, uploadOpen},
		"CompleteMultipartUpload SSE-C of a plain": {"POST", b + "/mp?" + up, complete, ssec, ireq, uploadOpen},
		"GetObject SSE-C of a plain object":        {"GET", b + "/k", nil, ssec, ireq, nothing},
		"HeadObject SSE-C of a plain object":       {"HEAD", b + "/k", nil, ssec, ireq, nothing},
		"CreateBucket grant to an unknown ID":      withCode(mk("X-Amz-Grant-Read", "id=no-such-user"), ia),
		"CreateBucket public ACL, owner enforced":  withCode(mk("X-Amz-Acl", "public-read", "X-Amz-Object-Ownership", "BucketOwnerEnforced"), "InvalidBucketAclWithObjectOwnership"),
		"PutObject bad tagging":                    withCode(put("X-Amz-Tagging", "aws%3Ax=1"), "InvalidTag"),
		"CreateMultipartUpload storage":            mpu("X-Amz-Storage-Class", "ONEZONE_IA"),
		"Complete whole-object checksum":           {"POST", b + "/mp?" + up, complete, []string{"X-Amz-Checksum-Xxhash64", "AAAAAAAAAAA="}, ni, uploadOpen},
		"HeadObject malformed versionId":           {"HEAD", b + "/k?versionId=3HL4kqtJlcpXroDTDmJ", nil, nil, ia, nothing},
		"DeleteObject malformed versionId":         {"DELETE", b + "/k?versionId=3HL4kqtJlcpXroDTDmJ", nil, nil, ia, kUnchanged},
		"PutObject wrong bucket owner":             withCode(put("X-Amz-Expected-Bucket-Owner", "111122223333"), ad),
		"CopyObject wrong source owner":            withCode(cp("X-Amz-Source-Expected-Bucket-Owner", "111122223333"), ad),
		"DeleteObject mfa":                         {"DELETE", b + "/k", nil, []string{"X-Amz-Mfa", "SERIAL 123456"}, ni, kUnchanged},
	}
	for name, tc := range rows {
		t.Run(name, func(t *testing.T) {
			r := u.s3(t, tc.method, tc.path, tc.body, "", tc.hdr...)
			want := map[string]int{ni: 501, ia: 400, ad: 403, ireq: 400, kn: 400, "InvalidTag": 400, "InvalidBucketAclWithObjectOwnership": 400}
			if tc.method == "HEAD" {
				w := want[tc.code]
				if tc.code == "" {
					w = 501
				}
				if r.status != w {
					t.Errorf("got %d, want %d", r.status, w)
				}
			} else if r.status != want[tc.code] || r.code != tc.code {
				t.Errorf("got %d %s, want %d %s (%s)", r.status, r.code, want[tc.code], tc.code, r.body)
			}
			tc.unchanged(t)
		})
	}

	// What clients send by default, and values Coffer honours, pass.
	accepted := []struct {
		name         string
		method, path string
		body         []byte
		hdr          []string
	}{
		{"PutObject defaults", "PUT", b + "/ok1", []byte("x"), []string{"X-Amz-Storage-Class", "STANDARD", "X-Amz-Acl", "private",
			"X-Amz-Checksum-Crc32", "jNwWgw==", "X-Amz-Sdk-Checksum-Algorithm", "CRC32", "X-Amz-Tagging", ""}},
		{"PutObject bucket-owner-full-control", "PUT", b + "/ok2", []byte("x"), []string{"X-Amz-Acl", "bucket-owner-full-control"}},
		{"PutObject right bucket owner", "PUT", b + "/ok3", []byte("x"), []string{"X-Amz-Expected-Bucket-Owner", lb.Owner.ID}},
		{"CopyObject right owners", "PUT", b + "/ok4", nil, []string{"X-Amz-Copy-Source", b + "/src",
			"X-Amz-Expected-Bucket-Owner", lb.Owner.ID, "X-Amz-Source-Expected-Bucket-Owner", lb.Owner.ID, "X-Amz-Tagging-Directive", "COPY"}},
		{"CreateMultipartUpload defaults", "POST", b + "/ok5?uploads", nil, []string{"X-Amz-Checksum-Algorithm", "CRC32", "X-Amz-Storage-Class", "STANDARD"}},
		{"GetObject versionId=null", "GET", b + "/k?versionId=null", nil, nil},
		{"HeadObject versionId=null", "HEAD", b + "/k?versionId=null", nil, nil},
		{"ListObjectsV2 owner and attributes", "GET", b + "?list-type=2", nil, []string{"X-Amz-Expected-Bucket-Owner", lb.Owner.ID,
			"X-Amz-Optional-Object-Attributes", "RestoreStatus"}},
		{"CreateBucket public-read", "PUT", newBucket + "-ok", nil, []string{"X-Amz-Acl", "public-read",
			"X-Amz-Bucket-Object-Lock-Enabled", "false", "X-Amz-Object-Ownership", "ObjectWriter"}},
	}
	for _, tc := range accepted {
		t.Run("accepted "+tc.name, func(t *testing.T) {
			if r := u.s3(t, tc.method, tc.path, tc.body, "", tc.hdr...); r.status != 200 {
				t.Errorf("got %d %s (%s)", r.status, r.code, r.body)
			}
		})
	}
	// A delete with the accepted headers deletes.
	if r := u.s3(t, "DELETE", b+"/ok1", nil, "", "X-Amz-Bypass-Governance-Retention", "true"); r.status != 204 {
		t.Errorf("DeleteObject with bypass-governance: %d %s", r.status, r.body)
	}
	u.absent(t, b+"/ok1")
	// DeleteObjects evaluates a key's ETag condition and refuses the
	// conditions it does not implement, key by key.
	t.Run("DeleteObjects conditions", func(t *testing.T) {
		etag := fmt.Sprintf(`"%x"`, md5.Sum([]byte("x")))
		del := `<Delete><Object><Key>k</Key><ETag>"0123456789abcdef0123456789abcdef"</ETag></Object>` +
			`<Object><Key>k</Key><Size>8</Size></Object>` +
			`<Object><Key>k</Key><LastModifiedTime>2020-01-01T00:00:00Z</LastModifiedTime></Object>` +
			`<Object><Key>ok2</Key><ETag>` + etag + `</ETag></Object></Delete>`
		r := u.s3(t, "POST", b+"?delete", []byte(del), "", "Content-MD5", md5b64([]byte(del)))
		body := string(r.body)
		if r.status != 200 || strings.Count(body, "<Code>PreconditionFailed</Code>") != 1 || strings.Count(body, "<Code>NotImplemented</Code>") != 2 ||
			!strings.Contains(body, "<Deleted><Key>ok2</Key></Deleted>") {
			t.Errorf("DeleteObjects with conditions: %d %s", r.status, body)
		}
		kUnchanged(t)
		u.absent(t, b+"/ok2")
	})
	// An SSE-C protected GET of an existing object never returns its data.
	if r := u.s3(t, "GET", b+"/k", nil, "", ssec...); r.status == 200 || bytes.Contains(r.body, orig) {
		t.Errorf("GET with SSE-C headers: %d %q", r.status, r.body)
	}
}

// TestS3ListObjectVersions: an unversioned bucket lists every object once
// as version "null", page by page, with prefixes and URL encoding; a
// versionId=null delete deletes.
func TestS3ListObjectVersions(t *testing.T) {
	srv := testenv.Start(t)
	u := newS3User(t, srv)
	bucket := "versions-" + strings.ToLower(hex.EncodeToString(randBytes(t, 3)))
	u.mustBucket(t, bucket)
	b := "/" + bucket
	keys := []string{"a.txt", "b c.txt", "d/1", "d/2", "d/3", "e.txt", "f/x", "g.txt"}
	for _, k := range keys {
		if r := u.s3(t, "PUT", b+"/"+testenv.EscapeKey(k), []byte(k), ""); r.status != 200 {
			t.Fatalf("put %s: %d", k, r.status)
		}
	}
	var lb struct {
		Owner struct {
			ID string `xml:"ID"`
		} `xml:"Owner"`
	}
	xml.Unmarshal(u.s3(t, "GET", "/", nil, "").body, &lb)

	type version struct {
		Key          string `xml:"Key"`
		VersionID    string `xml:"VersionId"`
		IsLatest     bool   `xml:"IsLatest"`
		ETag         string `xml:"ETag"`
		Size         int64  `xml:"Size"`
		StorageClass string `xml:"StorageClass"`
		Owner        struct {
			ID string `xml:"ID"`
		} `xml:"Owner"`
	}
	type result struct {
		XMLName             xml.Name   `xml:"ListVersionsResult"`
		Name                string     `xml:"Name"`
		IsTruncated         bool       `xml:"IsTruncated"`
		NextKeyMarker       string     `xml:"NextKeyMarker"`
		NextVersionIDMarker string     `xml:"NextVersionIdMarker"`
		MaxKeys             int        `xml:"MaxKeys"`
		EncodingType        string     `xml:"EncodingType"`
		Versions            []version  `xml:"Version"`
		DeleteMarkers       []struct{} `xml:"DeleteMarker"`
		CommonPrefixes      []struct {
			Prefix string `xml:"Prefix"`
		} `xml:"CommonPrefixes"`
	}
	// walk pages through the listing and returns every version and
	// common prefix, in order.
	walk := func(t *testing.T, query string) (vs []version, cps []string, pages int) {
		t.Helper()
		km, vm := "", ""
		for pages = 1; pages < 20; pages++ {
			q := b + "?versions&max-keys=3" + query
			if km != "" {
				q += "&key-marker=" + url.QueryEscape(km) + "&version-id-marker=" + url.QueryEscape(vm)
			}
			r := u.s3(t, "GET", q, nil, "")
			var res result
			if r.status != 200 || xml.Unmarshal(r.body, &res) != nil {
				t.Fatalf("GET %s: %d %s", q, r.status, r.body)
			}
			if res.Name != bucket || res.MaxKeys != 3 || len(res.DeleteMarkers) != 0 || len(res.Versions)+len(res.CommonPrefixes) > 3 {
				t.Fatalf("page %d: %s", pages, r.body)
			}
			vs = append(vs, res.Versions...)
			for _, cp := range res.CommonPrefixes {
				cps = append(cps, cp.Prefix)
			}
			if !res.IsTruncated {
				return vs, cps, pages
			}
			// (After a common prefix there is no version to name.)
			if res.NextKeyMarker == "" || res.NextVersionIDMarker != "null" && res.NextVersionIDMarker != "" {
				t.Fatalf("truncated page without markers: %s", r.body)
			}
			km, vm = res.NextKeyMarker, res.NextVersionIDMarker
			if res.EncodingType == "url" {
				km, _ = url.QueryUnescape(km)
			}
		}
		t.Fatal("listing does not end")
		return
	}

	t.Run("all objects, paged", func(t *testing.T) {
		vs, cps, pages := walk(t, "")
		var got []string
		for _, v := range vs {
			got = append(got, v.Key)
			if v.VersionID != "null" || !v.IsLatest || v.StorageClass != "STANDARD" || v.Owner.ID != lb.Owner.ID ||
				v.Size != int64(len(v.Key)) || v.ETag != fmt.Sprintf(`"%x"`, md5.Sum([]byte(v.Key))) {
				t.Errorf("version %+v", v)
			}
		}
		if !slices.Equal(got, keys) || len(cps) != 0 || pages != 3 {
			t.Errorf("keys %q (%d pages), want %q", got, pages, keys)
		}
	})
	t.Run("delimiter", func(t *testing.T) {
		vs, cps, _ := walk(t, "&delimiter=/")
		var got []string
		for _, v := range vs {
			got = append(got, v.Key)
		}
		if want := []string{"a.txt", "b c.txt", "e.txt", "g.txt"}; !slices.Equal(got, want) || !slices.Equal(cps, []string{"d/", "f/"}) {
			t.Errorf("keys %q prefixes %q", got, cps)
		}
	})
	t.Run("prefix and url encoding", func(t *testing.T) {
		vs, _, _ := walk(t, "&prefix=b&encoding-type=url")
		if len(vs) != 1 || vs[0].Key != "b%20c.txt" {
			t.Errorf("versions %+v", vs)
		}
	})
	t.Run("bad markers", func(t *testing.T) {
		if r := u.s3(t, "GET", b+"?versions&version-id-marker=null", nil, ""); r.status != 400 || r.code != "InvalidArgument" {
			t.Errorf("version-id-marker without key-marker: %d %s", r.status, r.code)
		}
		if r := u.s3(t, "GET", b+"?versions&key-marker=a.txt&version-id-marker=abc", nil, ""); r.status != 400 || r.code != "InvalidArgument" {
			t.Errorf("unknown version-id-marker: %d %s", r.status, r.code)
		}
	})
	t.Run("other users", func(t *testing.T) {
		other := newS3User(t, srv)
		if r := other.s3(t, "GET", b+"?versions", nil, ""); r.status != 403 || r.code != "AccessDenied" {
			t.Errorf("other user: %d %s", r.status, r.code)
		}
	})
	t.Run("delete versionId=null", func(t *testing.T) {
		r := u.s3(t, "DELETE", b+"/a.txt?versionId=null", nil, "")
		if r.status != 204 || r.header.Get("X-Amz-Version-Id") != "null" {
			t.Errorf("delete null version: %d %q", r.status, r.header.Get("X-Amz-Version-Id"))
		}
		u.absent(t, b+"/a.txt")
		del := `<Delete><Object><Key>e.txt</Key><VersionId>null</VersionId></Object><Object><Key>g.txt</Key><VersionId>abc</VersionId></Object></Delete>`
		r = u.s3(t, "POST", b+"?delete", []byte(del), "", "Content-MD5", md5b64([]byte(del)))
		if r.status != 200 || !strings.Contains(string(r.body), "<Deleted><Key>e.txt</Key><VersionId>null</VersionId><DeleteMarker>false</DeleteMarker></Deleted>") ||
			!strings.Contains(string(r.body), "<Key>g.txt</Key><VersionId>abc</VersionId><Code>InvalidArgument</Code>") {
			t.Errorf("DeleteObjects with versions: %d %s", r.status, r.body)
		}
		u.absent(t, b+"/e.txt")
		if r := u.s3(t, "HEAD", b+"/g.txt", nil, ""); r.status != 200 {
			t.Errorf("g.txt deleted with a malformed version: HEAD %d", r.status)
		}
	})
}

// TestS3ActiveContent: S3 downloads carry nosniff, and HTML, SVG and other
// active types (by the type served, override included) the sandboxing
// CSP, for anonymous readers of a public-read bucket too.
func TestS3ActiveContent(t *testing.T) {
	srv := testenv.Start(t)
	u := newS3User(t, srv)
	bucket := "active-" + strings.ToLower(hex.EncodeToString(randBytes(t, 3)))
	if r := u.s3(t, "PUT", "/"+bucket, nil, "", "X-Amz-Acl", "public-read"); r.status != 200 {
		t.Fatalf("create public bucket: %d %s", r.status, r.body)
	}
	b := "/" + bucket
	objects := map[string]string{
		"index.html": "text/html; charset=utf-8",
		"pic.svg":    "image/svg+xml",
		"notes.txt":  "text/plain",
	}
	for k, ct := range objects {
		// A public-read bucket ACL lets anyone list; each object is
		// made readable by its own ACL (docs/acl.md).
		if r := u.s3(t, "PUT", b+"/"+k, []byte(`<script>alert(1)</script>`), "", "Content-Type", ct, "X-Amz-Acl", "public-read"); r.status != 200 {
			t.Fatalf("put %s: %d", k, r.status)
		}
	}
	const csp = "default-src 'none'; sandbox"
	anon := func(method, path string) s3Resp {
		req, _ := http.NewRequest(method, srv.S3URL+path, nil)
		return doS3(t, req)
	}
	tests := []struct {
		name    string
		send    func() s3Resp
		wantCSP string
	}{
		{"anonymous GET html", func() s3Resp { return anon("GET", b+"/index.html") }, csp},
		{"anonymous HEAD html", func() s3Resp { return anon("HEAD", b+"/index.html") }, csp},
		{"anonymous GET svg", func() s3Resp { return anon("GET", b+"/pic.svg") }, csp},
		{"anonymous GET text", func() s3Resp { return anon("GET", b+"/notes.txt") }, ""},
		{"signed GET html", func() s3Resp { return u.s3(t, "GET", b+"/index.html", nil, "") }, csp},
		{"text served as html", func() s3Resp {
			return u.s3(t, "GET", b+"/notes.txt?response-content-type="+url.QueryEscape("text/html"), nil, "")
		}, csp},
		{"text served as svg", func() s3Resp {
			return u.s3(t, "HEAD", b+"/notes.txt?response-content-type="+url.QueryEscape("image/svg+xml"), nil, "")
		}, csp},
		{"html served as text", func() s3Resp {
			return u.s3(t, "GET", b+"/index.html?response-content-type="+url.QueryEscape("text/plain"), nil, "")
		}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.send()
			if r.status != 200 {
				t.Fatalf("status %d %s", r.status, r.body)
			}
			if got, want := r.header.Get("X-Content-Type-Options"), "nosniff"; got != want {
				t.Errorf("X-Content-Type-Options %q, want %q", got, want)
			}
			if got := r.header.Get("Content-Security-Policy"); got != tc.wantCSP {
				t.Errorf("Content-Security-Policy %q, want %q (Content-Type %q)", got, tc.wantCSP, r.header.Get("Content-Type"))
			}
		})
	}
}
