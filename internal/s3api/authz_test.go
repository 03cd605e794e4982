package s3api

import (
	"net/http/httptest"
	"testing"
)

// TestDescribe: the request's action and condition keys, as policies see
// them.
func TestDescribe(t *testing.T) {
	api := &API{}
	for _, c := range []struct{ method, target, op, want string }{
		{"GET", "/b/k", "GetObject", "s3:GetObject"},
		{"GET", "/b/k?versionId=abc", "GetObject", "s3:GetObjectVersion"},
		{"HEAD", "/b/k", "HeadObject", "s3:GetObject"},
		{"GET", "/b?list-type=2&prefix=p/", "ListObjectsV2", "s3:ListBucket"},
		{"PUT", "/b/k?partNumber=1&uploadId=u", "UploadPart", "s3:PutObject"},
		{"DELETE", "/b/k?versionId=v", "DeleteObject", "s3:DeleteObjectVersion"},
		{"GET", "/b?versioning", "GetBucketVersioning", "s3:GetBucketVersioning"},
		{"PUT", "/b?encryption", "PutBucketEncryption", "s3:PutEncryptionConfiguration"},
	} {
		r := httptest.NewRequest(c.method, c.target, nil)
		r.RemoteAddr = "192.0.2.7:5555"
		r.Header.Set("User-Agent", "ua/1")
		r.Header.Set("X-Amz-Acl", "public-read")
		r.Header.Set("X-Amz-Tagging", "Color=red")
		q := &request{Request: r}
		api.describe(q, c.op)
		if q.actor.Op != c.want {
			t.Errorf("%s %s: action %q, want %q", c.method, c.target, q.actor.Op, c.want)
		}
		ctx := q.actor.Describe()
		if ctx["aws:sourceip"][0] != "192.0.2.7" || ctx["aws:securetransport"][0] != "false" || ctx["aws:useragent"][0] != "ua/1" ||
			ctx["s3:x-amz-acl"][0] != "public-read" || ctx["s3:requestobjecttag/color"][0] != "red" || ctx["aws:principaltype"][0] != "Anonymous" {
			t.Errorf("%s %s: context %v", c.method, c.target, ctx)
		}
		if c.op == "ListObjectsV2" && ctx["s3:prefix"][0] != "p/" {
			t.Errorf("s3:prefix = %v", ctx["s3:prefix"])
		}
	}
}
