package sigv2

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// The credentials of the AWS documentation's examples.
const (
	docKeyID  = "AKIAIOSFODNN7EXAMPLE"
	docSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
)

func lookupOf(id, secret string) Lookup {
	return func(got string) (string, error) {
		if got != id {
			return "", errcode.New(errcode.NotFound, "no such key")
		}
		return secret, nil
	}
}

func at(t time.Time) Options { return Options{Now: func() time.Time { return t }} }

// vector is a request as a server receives it, and what it must sign.
type vector struct {
	name        string
	method      string
	target      string // request-target, as sent
	host        string
	vhostBucket string
	header      [][2]string // in order; repeated names allowed
	now         time.Time
	// sts is the documented StringToSign, reported on a mismatch ("" when
	// the documented string is one of the accepted variants, see Delete).
	sts string
}

func (v vector) request() *http.Request {
	r := httptest.NewRequest(v.method, v.target, nil)
	r.Host = v.host
	for _, h := range v.header {
		r.Header.Add(h[0], h[1])
	}
	return r
}

func date(s string) time.Time {
	for _, layout := range []string{time.RFC1123Z, http.TimeFormat} {
		if t, err := time.Parse(layout, s); err == nil {
			return t
		}
	}
	panic(s)
}

// docVectors are the examples of "Signing and authenticating REST requests
// (AWS signature version 2)" in the Amazon S3 API reference, with the
// signatures the current page publishes (bucket awsexamplebucket1). The
// query-string example's published signature (NpgCjnDzrM+WFzoENXmpNDUsSn8=)
// was computed for the page's older bucket name, johnsmith, which is used
// here.
var docVectors = []vector{
	{
		name: "object GET", method: "GET", target: "/photos/puppy.jpg",
		host: "awsexamplebucket1.us-west-1.s3.amazonaws.com", vhostBucket: "awsexamplebucket1",
		header: [][2]string{
			{"Date", "Tue, 27 Mar 2007 19:36:42 +0000"},
			{"Authorization", "AWS AKIAIOSFODNN7EXAMPLE:qgk2+6Sv9/oM7G3qLEjTH1a1l1g="},
		},
		now: date("Tue, 27 Mar 2007 19:36:42 +0000"),
		sts: "GET\n\n\nTue, 27 Mar 2007 19:36:42 +0000\n/awsexamplebucket1/photos/puppy.jpg",
	},
	{
		name: "object PUT", method: "PUT", target: "/photos/puppy.jpg",
		host: "awsexamplebucket1.s3.us-west-1.amazonaws.com", vhostBucket: "awsexamplebucket1",
		header: [][2]string{
			{"Content-Type", "image/jpeg"},
			{"Content-Length", "94328"},
			{"Date", "Tue, 27 Mar 2007 21:15:45 +0000"},
			{"Authorization", "AWS AKIAIOSFODNN7EXAMPLE:iqRzw+ileNPu1fhspnRs8nOjjIA="},
		},
		now: date("Tue, 27 Mar 2007 21:15:45 +0000"),
		sts: "PUT\n\nimage/jpeg\nTue, 27 Mar 2007 21:15:45 +0000\n/awsexamplebucket1/photos/puppy.jpg",
	},
	{
		name: "list", method: "GET", target: "/?prefix=photos&max-keys=50&marker=puppy",
		host: "awsexamplebucket1.s3.us-west-1.amazonaws.com", vhostBucket: "awsexamplebucket1",
		header: [][2]string{
			{"User-Agent", "Mozilla/5.0"},
			{"Date", "Tue, 27 Mar 2007 19:42:41 +0000"},
			{"Authorization", "AWS AKIAIOSFODNN7EXAMPLE:m0WP8eCtspQl5Ahe6L1SozdX9YA="},
		},
		now: date("Tue, 27 Mar 2007 19:42:41 +0000"),
		sts: "GET\n\n\nTue, 27 Mar 2007 19:42:41 +0000\n/awsexamplebucket1/",
	},
	{
		name: "fetch acl", method: "GET", target: "/?acl",
		host: "awsexamplebucket1.s3.us-west-1.amazonaws.com", vhostBucket: "awsexamplebucket1",
		header: [][2]string{
			{"Date", "Tue, 27 Mar 2007 19:44:46 +0000"},
			{"Authorization", "AWS AKIAIOSFODNN7EXAMPLE:82ZHiFIjc+WbcwFKGUVEQspPn+0="},
		},
		now: date("Tue, 27 Mar 2007 19:44:46 +0000"),
		sts: "GET\n\n\nTue, 27 Mar 2007 19:44:46 +0000\n/awsexamplebucket1/?acl",
	},
	{
		// Path style, with x-amz-date signed in the Date line (one of the
		// accepted variants; the documented rule leaves it empty).
		name: "delete", method: "DELETE", target: "/awsexamplebucket1/photos/puppy.jpg",
		host: "s3.us-west-1.amazonaws.com",
		header: [][2]string{
			{"User-Agent", "dotnet"},
			{"Date", "Tue, 27 Mar 2007 21:20:27 +0000"},
			{"x-amz-date", "Tue, 27 Mar 2007 21:20:26 +0000"},
			{"Authorization", "AWS AKIAIOSFODNN7EXAMPLE:XbyTlbQdu9Xw5o8P4iMwPktxQd8="},
		},
		now: date("Tue, 27 Mar 2007 21:20:27 +0000"),
	},
	{
		name: "upload to a CNAME bucket with metadata", method: "PUT", target: "/db-backup.dat.gz",
		host: "static.awsexamplebucket1.net:8080", vhostBucket: "static.awsexamplebucket1.net",
		header: [][2]string{
			{"User-Agent", "curl/7.15.5"},
			{"Date", "Tue, 27 Mar 2007 21:06:08 +0000"},
			{"x-amz-acl", "public-read"},
			{"content-type", "application/x-download"},
			{"Content-MD5", "4gJE4saaMU4BqNR0kLY+lw=="},
			{"X-Amz-Meta-ReviewedBy", "joe@awsexamplebucket1.net"},
			{"X-Amz-Meta-ReviewedBy", "jane@awsexamplebucket1.net"},
			{"X-Amz-Meta-FileChecksum", "0x02661779"},
			{"X-Amz-Meta-ChecksumAlgorithm", "crc32"},
			{"Content-Disposition", "attachment; filename=database.dat"},
			{"Content-Encoding", "gzip"},
			{"Content-Length", "5913339"},
			{"Authorization", "AWS AKIAIOSFODNN7EXAMPLE:dKZcB+bz2EPXgSdXZp9ozGeOM4I="},
		},
		now: date("Tue, 27 Mar 2007 21:06:08 +0000"),
		sts: "PUT\n4gJE4saaMU4BqNR0kLY+lw==\napplication/x-download\nTue, 27 Mar 2007 21:06:08 +0000\n" +
			"x-amz-acl:public-read\nx-amz-meta-checksumalgorithm:crc32\nx-amz-meta-filechecksum:0x02661779\n" +
			"x-amz-meta-reviewedby:joe@awsexamplebucket1.net,jane@awsexamplebucket1.net\n" +
			"/static.awsexamplebucket1.net/db-backup.dat.gz",
	},
	{
		name: "list all my buckets", method: "GET", target: "/", host: "s3.us-west-1.amazonaws.com",
		header: [][2]string{
			{"Date", "Wed, 28 Mar 2007 01:29:59 +0000"},
			{"Authorization", "AWS AKIAIOSFODNN7EXAMPLE:qGdzdERIC03wnaRNKh6OqZehG9s="},
		},
		now: date("Wed, 28 Mar 2007 01:29:59 +0000"),
		sts: "GET\n\n\nWed, 28 Mar 2007 01:29:59 +0000\n/",
	},
	{
		// The path is signed as sent, escapes and their case included.
		name: "unicode keys", method: "GET", target: "/dictionary/fran%C3%A7ais/pr%c3%a9f%c3%a8re",
		host: "s3.us-west-1.amazonaws.com",
		header: [][2]string{
			{"Date", "Wed, 28 Mar 2007 01:49:49 +0000"},
			{"Authorization", "AWS AKIAIOSFODNN7EXAMPLE:DNEZGsoieTZ92F3bUfSPQcbGmlM="},
		},
		now: date("Wed, 28 Mar 2007 01:49:49 +0000"),
		sts: "GET\n\n\nWed, 28 Mar 2007 01:49:49 +0000\n/dictionary/fran%C3%A7ais/pr%c3%a9f%c3%a8re",
	},
	{
		name: "query string authentication", method: "GET",
		target: "/photos/puppy.jpg?AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE&Signature=NpgCjnDzrM%2BWFzoENXmpNDUsSn8%3D&Expires=1175139620",
		host:   "johnsmith.s3.amazonaws.com", vhostBucket: "johnsmith",
		now: time.Unix(1175139620, 0).Add(-time.Hour),
		sts: "GET\n\n\n1175139620\n/johnsmith/photos/puppy.jpg",
	},
}

// clientVectors were signed by real clients (botocore 1.44.5 HmacV1Auth and
// HmacV1QueryAuth: boto3 with signature_version "s3", boto3's default
// generate_presigned_url, aws-cli 1.46.3's default `s3 presign`) against
// http://127.0.0.1:9000 with the key AKID / SECRET.
var clientVectors = []vector{
	{
		name: "boto3 put_object", method: "PUT", target: "/b/dir/a%20b%2Bc.txt", host: "127.0.0.1:9000",
		header: [][2]string{
			{"Content-Type", "text/plain"},
			{"x-amz-meta-Color", "red"},
			{"Expect", "100-continue"},
			{"x-amz-checksum-crc32", "NhCmhg=="},
			{"x-amz-sdk-checksum-algorithm", "CRC32"},
			{"Date", "Mon, 23 Nov 2026 09:51:03 GMT"},
			{"Authorization", "AWS AKID:SbIv9HolmV1FJWhSicfyUWuoWq8="},
			{"amz-sdk-request", "attempt=1; max=3"},
			{"Content-Length", "5"},
		},
		now: date("Mon, 23 Nov 2026 09:51:03 GMT"),
		sts: "PUT\n\ntext/plain\nMon, 23 Nov 2026 09:51:03 GMT\nx-amz-checksum-crc32:NhCmhg==\nx-amz-meta-color:red\nx-amz-sdk-checksum-algorithm:CRC32\n/b/dir/a%20b%2Bc.txt",
	},
	{
		name: "boto3 get_object", method: "GET", target: "/b/k", host: "127.0.0.1:9000",
		header: [][2]string{
			{"Range", "bytes=0-1"},
			{"x-amz-checksum-mode", "ENABLED"},
			{"Date", "Mon, 23 Nov 2026 09:51:03 GMT"},
			{"Authorization", "AWS AKID:ND1ktSP/PciTS5tg+cjcF9ufEeE="},
		},
		now: date("Mon, 23 Nov 2026 09:51:03 GMT"),
	},
	{
		name: "boto3 list_objects_v2", method: "GET", target: "/b?list-type=2&prefix=p%2F&encoding-type=url", host: "127.0.0.1:9000",
		header: [][2]string{
			{"Date", "Mon, 23 Nov 2026 09:51:03 GMT"},
			{"Authorization", "AWS AKID:tz6ESkbVRbsBsOIAdNar+C2qu9s="},
		},
		now: date("Mon, 23 Nov 2026 09:51:03 GMT"),
		sts: "GET\n\n\nMon, 23 Nov 2026 09:51:03 GMT\n/b",
	},
	{
		name: "boto3 create_multipart_upload", method: "POST", target: "/b/k?uploads", host: "127.0.0.1:9000",
		header: [][2]string{
			{"Date", "Mon, 23 Nov 2026 09:51:03 GMT"},
			{"Authorization", "AWS AKID:q7m8aWjyV6O09mGPPF7Lja95haU="},
			{"Content-Length", "0"},
		},
		now: date("Mon, 23 Nov 2026 09:51:03 GMT"),
		sts: "POST\n\n\nMon, 23 Nov 2026 09:51:03 GMT\n/b/k?uploads",
	},
	{
		name: "boto3 upload_part", method: "PUT", target: "/b/k?uploadId=u1&partNumber=3", host: "127.0.0.1:9000",
		header: [][2]string{
			{"Expect", "100-continue"},
			{"x-amz-checksum-crc32", "jNwWgw=="},
			{"x-amz-sdk-checksum-algorithm", "CRC32"},
			{"Date", "Mon, 23 Nov 2026 09:51:03 GMT"},
			{"Authorization", "AWS AKID:du/vS1QIKYHrX/+LKjo+VpsYDTc="},
			{"Content-Length", "1"},
		},
		now: date("Mon, 23 Nov 2026 09:51:03 GMT"),
		sts: "PUT\n\n\nMon, 23 Nov 2026 09:51:03 GMT\nx-amz-checksum-crc32:jNwWgw==\nx-amz-sdk-checksum-algorithm:CRC32\n/b/k?partNumber=3&uploadId=u1",
	},
	{
		name: "boto3 delete_objects", method: "POST", target: "/b?delete", host: "127.0.0.1:9000",
		header: [][2]string{
			{"x-amz-checksum-crc32", "CEaAGw=="},
			{"x-amz-sdk-checksum-algorithm", "CRC32"},
			{"Date", "Mon, 23 Nov 2026 09:51:03 GMT"},
			{"Authorization", "AWS AKID:HFHcXj0wlxSojAVK96MIXv9RDVc="},
			{"Content-Length", "94"},
		},
		now: date("Mon, 23 Nov 2026 09:51:03 GMT"),
	},
	{
		name: "boto3 presigned get_object", method: "GET",
		target: "/b/a%20b/c%2Bd~e%21?AWSAccessKeyId=AKID&Signature=ffNyUEyNc7YM15gmG%2FVwGZ26WPM%3D&Expires=1795430702",
		host:   "127.0.0.1:9000", now: time.Unix(1795430702-3600, 0),
		sts: "GET\n\n\n1795430702\n/b/a%20b/c%2Bd~e%21",
	},
	{
		name: "boto3 presigned put_object", method: "PUT",
		target: "/b/k?AWSAccessKeyId=AKID&Signature=KTpZ%2B9lTj83tfZAocSpnOugcxoc%3D&Expires=1795430702",
		host:   "127.0.0.1:9000", now: time.Unix(1795430702-3600, 0),
	},
	{
		// botocore moves Content-Type and x-amz-* into the query.
		name: "boto3 presigned put_object with ContentType and Metadata", method: "PUT",
		target: "/b/k?AWSAccessKeyId=AKID&Signature=%2FD16FYwqDUthkoNe04CChN9C4qc%3D&content-type=text%2Fplain&x-amz-meta-x=y&Expires=1795430708",
		host:   "127.0.0.1:9000", now: time.Unix(1795430708-3600, 0),
		sts: "PUT\n\ntext/plain\n1795430708\nx-amz-meta-x:y\n/b/k",
	},
	{
		name: "boto3 presigned get_object with overrides", method: "GET",
		target: "/b/k?response-content-type=text%2Fx%3B%20a%3Db&versionId=v1&AWSAccessKeyId=AKID&Signature=khM7QpmIEpt3p8wsrWmObfAz4BE%3D&Expires=1795430708",
		host:   "127.0.0.1:9000", now: time.Unix(1795430708-3600, 0),
		sts: "GET\n\n\n1795430708\n/b/k?response-content-type=text/x; a=b&versionId=v1",
	},
	{
		name: "aws cli s3 presign", method: "GET",
		target: "/b/some/key.txt?AWSAccessKeyId=AKID&Signature=qF29q%2ByEAuc1fXAbHq1cPl2dBJw%3D&Expires=1795430703",
		host:   "127.0.0.1:9000", now: time.Unix(1795430703-3600, 0),
	},
}

func TestVectors(t *testing.T) {
	run := func(t *testing.T, vs []vector, id, secret string) {
		for _, v := range vs {
			t.Run(v.name, func(t *testing.T) {
				res, err := Verify(v.request(), v.vhostBucket, lookupOf(id, secret), at(v.now))
				if err != nil {
					t.Fatalf("Verify: %v (string to sign %q)", err, errcode.As(err).Detail["string_to_sign"])
				}
				if got, want := res.AccessKeyID, id; got != want {
					t.Errorf("AccessKeyID = %q, want %q", got, want)
				}
				// With another secret: SignatureDoesNotMatch, reporting the
				// documented string to sign.
				_, err = Verify(v.request(), v.vhostBucket, lookupOf(id, secret+"x"), at(v.now))
				if !errors.Is(err, ErrSignatureDoesNotMatch) || S3Code(err) != "SignatureDoesNotMatch" {
					t.Fatalf("wrong secret: err = %v, want SignatureDoesNotMatch", err)
				}
				if v.sts != "" {
					if got := errcode.As(err).Detail["string_to_sign"]; got != v.sts {
						t.Errorf("string to sign\n got %q\nwant %q", got, v.sts)
					}
				}
			})
		}
	}
	t.Run("aws docs", func(t *testing.T) { run(t, docVectors, docKeyID, docSecret) })
	t.Run("clients", func(t *testing.T) { run(t, clientVectors, "AKID", "SECRET") })
}

// TestSignMatchesVectors signs the documented requests with SignRequest and
// Presign and gets the published signatures.
func TestSignMatchesVectors(t *testing.T) {
	for _, v := range docVectors {
		t.Run(v.name, func(t *testing.T) {
			r := v.request()
			want := r.Header.Get("Authorization")
			if v.name == "query string authentication" {
				signed, err := Presign(v.method, "http://"+v.host+"/photos/puppy.jpg", v.vhostBucket, nil, docKeyID, docSecret, time.Unix(1175139620, 0))
				if err != nil {
					t.Fatal(err)
				}
				if got, want := signed, "http://johnsmith.s3.amazonaws.com/photos/puppy.jpg?AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE&Signature=NpgCjnDzrM%2BWFzoENXmpNDUsSn8%3D&Expires=1175139620"; got != want {
					t.Errorf("Presign\n got %s\nwant %s", got, want)
				}
				return
			}
			if v.name == "delete" {
				t.Skip("signed with the documentation's x-amz-date variant; SignRequest signs the documented rule")
			}
			if err := SignRequest(r, v.vhostBucket, docKeyID, docSecret, v.now); err != nil {
				t.Fatal(err)
			}
			if got := r.Header.Get("Authorization"); got != want {
				t.Errorf("Authorization = %q, want %q", got, want)
			}
		})
	}
}
