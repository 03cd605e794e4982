package e2e

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/coffer-storage/coffer/test/testenv"
)

// scopedClient creates an S3 key for owner with scope and expiry (seconds;
// 0: never) and returns its aws-sdk-go-v2 client and its ID.
func scopedClient(t *testing.T, srv *testenv.Server, owner *testenv.Client, scope map[string]any, expiresIn int) (*s3.Client, string) {
	t.Helper()
	body := map[string]any{"name": "scoped", "scope": scope}
	if expiresIn > 0 {
		body["expires_in"] = expiresIn
	}
	var k struct {
		ID     string `json:"access_key_id"`
		Secret string `json:"secret_access_key"`
	}
	if st := owner.JSON(t, "POST", "/api/v1/keys", body, &k); st != 201 {
		t.Fatalf("create scoped key %v: %d", scope, st)
	}
	cl := s3.NewFromConfig(aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider(k.ID, k.Secret, ""),
		HTTPClient: srv.HTTPClient(), RetryMaxAttempts: 1},
		func(o *s3.Options) { o.BaseEndpoint = aws.String(srv.S3URL); o.UsePathStyle = true })
	return cl, k.ID
}

// wantCode fails unless err is the S3 error code (nil: success).
func wantS3Code(t *testing.T, err error, code, what string) {
	t.Helper()
	if code == "" {
		if err != nil {
			t.Errorf("%s: %v, want success", what, err)
		}
		return
	}
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != code {
		t.Errorf("%s: %v, want %s", what, err, code)
	}
}

// TestScopedKeysSDK: with aws-sdk-go-v2, a key limited to bucket B,
// prefix P, read-only, for 30 days reads under P and lists with prefix P,
// and cannot read outside P, write, delete, create buckets, list all
// buckets or touch another bucket; a write-only key writes under P (PUT
// and multipart) and can do nothing else; a key with an inline policy
// does what its Allow statements say minus its Deny; an expired key is
// ExpiredToken;
// a deleted key is InvalidAccessKeyId on the next request.
func TestScopedKeysSDK(t *testing.T) {
	srv := testenv.Start(t)
	owner := srv.NewUser(t)
	bkt, other := owner.Bucket, "other-"+strings.ToLower(owner.Bucket)
	if st := owner.JSON(t, "POST", "/api/v1/buckets", map[string]any{"name": other}, nil); st != 201 {
		t.Fatal("setup bucket")
	}
	for _, bk := range []string{bkt + "/P/a.txt", bkt + "/P/sub/b.txt", bkt + "/out.txt", other + "/P/a.txt"} {
		b, k, _ := strings.Cut(bk, "/")
		if st, _, _ := put(t, owner, b, k, []byte("content of "+bk)); st != 201 {
			t.Fatal("setup put " + bk)
		}
	}
	ctx := context.Background()
	putIn := func(cl *s3.Client, b, k string) error {
		_, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(k), Body: bytes.NewReader([]byte("written by a scoped key"))})
		return err
	}
	getOf := func(cl *s3.Client, b, k string) error {
		out, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String(k)})
		if err == nil {
			io.Copy(io.Discard, out.Body)
			out.Body.Close()
		}
		return err
	}
	listOf := func(cl *s3.Client, b, prefix string) ([]string, error) {
		in := &s3.ListObjectsV2Input{Bucket: aws.String(b)}
		if prefix != "" {
			in.Prefix = aws.String(prefix)
		}
		out, err := cl.ListObjectsV2(ctx, in)
		if err != nil {
			return nil, err
		}
		var keys []string
		for _, o := range out.Contents {
			keys = append(keys, *o.Key)
		}
		return keys, nil
	}
	deleteOf := func(cl *s3.Client, b, k string) error {
		_, err := cl.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String(k)})
		return err
	}
	// What no key of bucket B, prefix P, may do.
	never := func(t *testing.T, cl *s3.Client, who string) {
		t.Helper()
		wantS3Code(t, getOf(cl, bkt, "out.txt"), "AccessDenied", who+": GET outside P")
		wantS3Code(t, putIn(cl, bkt, "out.txt"), "AccessDenied", who+": PUT outside P")
		wantS3Code(t, deleteOf(cl, bkt, "out.txt"), "AccessDenied", who+": DELETE outside P")
		_, err := listOf(cl, bkt, "")
		wantS3Code(t, err, "AccessDenied", who+": list the whole bucket")
		wantS3Code(t, getOf(cl, other, "P/a.txt"), "AccessDenied", who+": GET in another bucket")
		wantS3Code(t, putIn(cl, other, "P/x.txt"), "AccessDenied", who+": PUT in another bucket")
		_, err = listOf(cl, other, "P/")
		wantS3Code(t, err, "AccessDenied", who+": list another bucket")
		_, err = cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("made-by-" + strings.ToLower(bkt))})
		wantS3Code(t, err, "AccessDenied", who+": CreateBucket")
		_, err = cl.ListBuckets(ctx, &s3.ListBucketsInput{})
		wantS3Code(t, err, "AccessDenied", who+": ListBuckets")
		_, err = cl.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(other)})
		wantS3Code(t, err, "AccessDenied", who+": DeleteBucket")
		_, err = cl.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(bkt),
			VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}})
		wantS3Code(t, err, "AccessDenied", who+": PutBucketVersioning")
	}

	t.Run("read-only", func(t *testing.T) {
		ro, _ := scopedClient(t, srv, owner, map[string]any{"bucket": bkt, "prefix": "P/", "access": "read"}, 30*24*3600)
		wantS3Code(t, getOf(ro, bkt, "P/a.txt"), "", "GET under P")
		_, err := ro.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bkt), Key: aws.String("P/sub/b.txt")})
		wantS3Code(t, err, "", "HEAD under P")
		keys, err := listOf(ro, bkt, "P/")
		if err != nil || strings.Join(keys, ",") != "P/a.txt,P/sub/b.txt" {
			t.Errorf("list with prefix P: %v, %v", keys, err)
		}
		wantS3Code(t, putIn(ro, bkt, "P/new.txt"), "AccessDenied", "PUT under P")
		wantS3Code(t, deleteOf(ro, bkt, "P/a.txt"), "AccessDenied", "DELETE under P")
		_, err = ro.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(bkt), Key: aws.String("P/copy.txt"), CopySource: aws.String(bkt + "/P/a.txt")})
		wantS3Code(t, err, "AccessDenied", "copy within P")
		never(t, ro, "read-only")
	})

	t.Run("write-only", func(t *testing.T) {
		wo, _ := scopedClient(t, srv, owner, map[string]any{"bucket": bkt, "prefix": "P/", "access": "write"}, 30*24*3600)
		wantS3Code(t, putIn(wo, bkt, "P/up.txt"), "", "PUT under P")
		mp, err := wo.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bkt), Key: aws.String("P/mp.bin")})
		if err != nil {
			t.Fatalf("CreateMultipartUpload under P: %v", err)
		}
		part, err := wo.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(bkt), Key: aws.String("P/mp.bin"), UploadId: mp.UploadId,
			PartNumber: aws.Int32(1), Body: bytes.NewReader([]byte("one part"))})
		if err != nil {
			t.Fatalf("UploadPart: %v", err)
		}
		_, err = wo.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(bkt), Key: aws.String("P/mp.bin"), UploadId: mp.UploadId,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: part.ETag}}}})
		wantS3Code(t, err, "", "CompleteMultipartUpload")
		_, err = wo.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bkt), Key: aws.String("out.bin")})
		wantS3Code(t, err, "AccessDenied", "CreateMultipartUpload outside P")
		wantS3Code(t, getOf(wo, bkt, "P/up.txt"), "AccessDenied", "GET of its own upload")
		wantS3Code(t, deleteOf(wo, bkt, "P/up.txt"), "AccessDenied", "DELETE under P")
		_, err = listOf(wo, bkt, "P/")
		wantS3Code(t, err, "AccessDenied", "list with prefix P")
		never(t, wo, "write-only")
		if resp, body := get(t, owner, bkt, "P/mp.bin"); resp.StatusCode != 200 || string(body) != "one part" {
			t.Errorf("the multipart upload: %d %q", resp.StatusCode, body)
		}
	})

	t.Run("inline policy", func(t *testing.T) {
		// Read under P/ and list with a prefix under P/, except P/sub/,
		// which an explicit Deny closes.
		doc := `{"Version":"2012-10-17","Statement":[
			{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::` + bkt + `/P/*"},
			{"Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::` + bkt + `","Condition":{"StringLike":{"s3:prefix":"P/*"}}},
			{"Effect":"Deny","Action":"s3:*","Resource":"arn:aws:s3:::` + bkt + `/P/sub/*"}]}`
		cl, _ := scopedClient(t, srv, owner, map[string]any{"policy": doc}, 0)
		wantS3Code(t, getOf(cl, bkt, "P/a.txt"), "", "GET under P")
		wantS3Code(t, getOf(cl, bkt, "P/sub/b.txt"), "AccessDenied", "GET under the denied P/sub/")
		keys, err := listOf(cl, bkt, "P/")
		if err != nil || len(keys) == 0 || keys[0] != "P/a.txt" {
			t.Errorf("list with prefix P: %v, %v", keys, err)
		}
		wantS3Code(t, putIn(cl, bkt, "P/new.txt"), "AccessDenied", "PUT under P")
		never(t, cl, "inline policy")
		var bad struct{ Code, Detail string }
		if st := owner.JSON(t, "POST", "/api/v1/keys", map[string]any{"scope": map[string]any{"policy": `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:Fly","Resource":"*"}]}`}}, &bad); st != 400 || bad.Code != "invalid_argument" {
			t.Errorf("a key with a policy naming an unknown action: %d %+v", st, bad)
		}
	})

	t.Run("expired", func(t *testing.T) {
		cl, _ := scopedClient(t, srv, owner, map[string]any{"bucket": bkt, "prefix": "P/", "access": "read"}, 1)
		time.Sleep(1500 * time.Millisecond) // past the expiry (a clock, not a latency)
		wantS3Code(t, getOf(cl, bkt, "P/a.txt"), "ExpiredToken", "GET with an expired key")
		_, err := listOf(cl, bkt, "P/")
		wantS3Code(t, err, "ExpiredToken", "list with an expired key")
	})

	t.Run("revoked", func(t *testing.T) {
		cl, id := scopedClient(t, srv, owner, map[string]any{"bucket": bkt, "access": "read-write"}, 0)
		wantS3Code(t, getOf(cl, bkt, "P/a.txt"), "", "GET before the revocation")
		if st := owner.JSON(t, "DELETE", "/api/v1/keys/"+id, nil, nil); st != 204 {
			t.Fatalf("revoke: %d", st)
		}
		wantS3Code(t, getOf(cl, bkt, "P/a.txt"), "InvalidAccessKeyId", "GET after the revocation")
	})

	// Everything outside P as it was.
	var l struct{ Buckets []struct{ Name string } }
	owner.JSON(t, "GET", "/api/v1/buckets", nil, &l)
	if len(l.Buckets) != 2 {
		t.Errorf("the owner's buckets: %+v", l.Buckets)
	}
	for _, bk := range []string{bkt + "/out.txt", other + "/P/a.txt"} {
		b, k, _ := strings.Cut(bk, "/")
		if resp, body := get(t, owner, b, k); resp.StatusCode != 200 || string(body) != "content of "+bk {
			t.Errorf("%s: %d %q", bk, resp.StatusCode, body)
		}
	}
	if got := strings.Join(keysOf(list(t, owner, other, "")), ","); got != "P/a.txt" {
		t.Errorf("another bucket holds %s", got)
	}
}
