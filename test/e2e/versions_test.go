package e2e

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/coffer-storage/coffer/test/testenv"
)

// s3Client is an aws-sdk-go-v2 client of a fresh user of srv (with an
// S3 key), and that user's default bucket.
func s3Client(t *testing.T, srv *testenv.Server) (*s3.Client, string) {
	t.Helper()
	u := newS3User(t, srv)
	cl := s3.NewFromConfig(aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider(u.id, u.secret, ""),
		HTTPClient: srv.HTTPClient()},
		func(o *s3.Options) { o.BaseEndpoint = aws.String(srv.S3URL); o.UsePathStyle = true })
	return cl, u.Bucket
}

// httpError returns the HTTP status and headers of a failed call.
func httpError(t *testing.T, err error, what string) (int, map[string]string) {
	t.Helper()
	var re *awshttp.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("%s: %v, want an HTTP error", what, err)
	}
	h := map[string]string{}
	for _, k := range []string{"X-Amz-Delete-Marker", "X-Amz-Version-Id"} {
		h[k] = re.Response.Header.Get(k)
	}
	return re.HTTPStatusCode(), h
}

// versionList describes a bucket's versions: key@version, "*" for the
// latest, "!" for a delete marker, in listing order.
func versionList(t *testing.T, cl *s3.Client, bucket string) []string {
	t.Helper()
	var out []string
	in := &s3.ListObjectVersionsInput{Bucket: aws.String(bucket), MaxKeys: aws.Int32(2)}
	for range 50 {
		page, err := cl.ListObjectVersions(t.Context(), in)
		if err != nil {
			t.Fatalf("ListObjectVersions: %v", err)
		}
		// The SDK splits versions and markers: merge them back by key
		// and, within a key, newest first (the IDs sort so).
		var entries []string
		for _, v := range page.Versions {
			entries = append(entries, entry(aws.ToString(v.Key), aws.ToString(v.VersionId), aws.ToBool(v.IsLatest), ""))
		}
		for _, m := range page.DeleteMarkers {
			entries = append(entries, entry(aws.ToString(m.Key), aws.ToString(m.VersionId), aws.ToBool(m.IsLatest), "!"))
		}
		out = append(out, entries...)
		if !aws.ToBool(page.IsTruncated) {
			return out
		}
		in.KeyMarker, in.VersionIdMarker = page.NextKeyMarker, page.NextVersionIdMarker
	}
	t.Fatal("ListObjectVersions does not end")
	return nil
}

func entry(key, id string, latest bool, marker string) string {
	s := key + "@" + id + marker
	if latest {
		s += "*"
	}
	return s
}

func sameSet(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// TestS3Versioning drives versioning with aws-sdk-go-v2 against the
// binary (both shapes): versions, delete markers, the null version of a
// suspended bucket, copies of a version, deletes of versions, paging, and
// another user naming a version.
func TestS3Versioning(t *testing.T) {
	srv := testenv.Start(t)
	cl, plain := s3Client(t, srv)
	other, _ := s3Client(t, srv)
	ctx := t.Context()
	bucket := "ver-" + strings.ToLower(hex.EncodeToString(randBytes(t, 4)))
	if _, err := cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	vc, err := cl.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String(bucket)})
	if err != nil || vc.Status != "" {
		t.Fatalf("GetBucketVersioning of a new bucket: %q, %v", vc.Status, err)
	}
	// Unversioned: no version IDs answered.
	if out, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(plain), Key: aws.String("k"), Body: strings.NewReader("x")}); err != nil || out.VersionId != nil {
		t.Errorf("PutObject into an unversioned bucket: version %v, %v", out.VersionId, err)
	}
	if _, err := cl.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(bucket),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	if vc, err := cl.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String(bucket)}); err != nil || vc.Status != types.BucketVersioningStatusEnabled {
		t.Fatalf("GetBucketVersioning after enabling: %q, %v", vc.Status, err)
	}
	_, err = cl.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(bucket),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled, MFADelete: types.MFADeleteEnabled}})
	if st, _ := httpError(t, err, "PutBucketVersioning with MFA delete"); st != 501 {
		t.Errorf("PutBucketVersioning with MFA delete: %d, want 501", st)
	}

	put := func(key string, data []byte) string {
		t.Helper()
		out, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(data)})
		if err != nil {
			t.Fatalf("PutObject %s: %v", key, err)
		}
		return aws.ToString(out.VersionId)
	}
	get := func(key, version string) ([]byte, error) {
		in := &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}
		if version != "" {
			in.VersionId = aws.String(version)
		}
		out, err := cl.GetObject(ctx, in)
		if err != nil {
			return nil, err
		}
		defer out.Body.Close()
		return io.ReadAll(out.Body)
	}
	one, two := []byte("version one"), randBytes(t, 200<<10) // inline and a blob
	v1, v2 := put("k", one), put("k", two)
	if v1 == "" || v2 == "" || v1 == v2 || v1 == "null" {
		t.Fatalf("version IDs %q, %q", v1, v2)
	}
	if got := versionList(t, cl, bucket); !slices.Equal(got, []string{"k@" + v2 + "*", "k@" + v1}) {
		t.Errorf("versions: %q", got)
	}
	if b, err := get("k", v1); err != nil || !bytes.Equal(b, one) {
		t.Errorf("GetObject of the old version: %q, %v", b, err)
	}
	// Another user names the version: refused, never data.
	_, err = other.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("k"), VersionId: aws.String(v1)})
	if st, _ := httpError(t, err, "another user's GetObject of a version"); st != 403 && st != 404 {
		t.Errorf("another user's GetObject of a version: %d", st)
	}
	_, err = other.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String("k"), VersionId: aws.String(v1)})
	if st, _ := httpError(t, err, "another user's DeleteObject of a version"); st != 403 && st != 404 {
		t.Errorf("another user's DeleteObject of a version: %d", st)
	}
	_, err = other.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(bucket)})
	if st, _ := httpError(t, err, "another user's ListObjectVersions"); st != 403 {
		t.Errorf("another user's ListObjectVersions: %d", st)
	}

	// Delete: a marker; the key reads as missing, with the marker named.
	del, err := cl.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String("k")})
	if err != nil || !aws.ToBool(del.DeleteMarker) || aws.ToString(del.VersionId) == "" {
		t.Fatalf("DeleteObject: %+v, %v", del, err)
	}
	marker := aws.ToString(del.VersionId)
	_, err = get("k", "")
	if st, h := httpError(t, err, "GetObject of a deleted key"); st != 404 || h["X-Amz-Delete-Marker"] != "true" || h["X-Amz-Version-Id"] != marker {
		t.Errorf("GetObject of a deleted key: %d %v", st, h)
	}
	_, err = cl.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("k"), VersionId: aws.String(marker)})
	if st, h := httpError(t, err, "HeadObject of the marker"); st != 405 || h["X-Amz-Delete-Marker"] != "true" {
		t.Errorf("HeadObject of the marker: %d %v", st, h)
	}
	_, err = get("k", "0123456789abcdef0123456789abcdef")
	if st, _ := httpError(t, err, "GetObject of an unknown version"); st != 404 || !strings.Contains(err.Error(), "NoSuchVersion") {
		t.Errorf("GetObject of an unknown version: %d %v", st, err)
	}
	lo, err := cl.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	if err != nil || len(lo.Contents) != 0 {
		t.Errorf("ListObjectsV2 of a bucket whose only key is deleted: %d objects, %v", len(lo.Contents), err)
	}
	// Deleting the marker brings the object back.
	if out, err := cl.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String("k"), VersionId: aws.String(marker)}); err != nil || !aws.ToBool(out.DeleteMarker) {
		t.Fatalf("DeleteObject of the marker: %+v, %v", out, err)
	}
	if b, err := get("k", ""); err != nil || !bytes.Equal(b, two) {
		t.Errorf("GetObject after the marker's deletion: %d bytes, %v", len(b), err)
	}

	// Suspended: writes and deletes are the null version.
	if _, err := cl.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(bucket),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusSuspended}}); err != nil {
		t.Fatal(err)
	}
	// (S3 answers no x-amz-version-id there: the null version.)
	if v := put("k", []byte("null one")); v != "" {
		t.Errorf("PutObject into a suspended bucket: version %q, want none", v)
	}
	if v := put("k", []byte("null two")); v != "" {
		t.Errorf("PutObject into a suspended bucket: version %q, want none", v)
	}
	if got := versionList(t, cl, bucket); !slices.Equal(got, []string{"k@null*", "k@" + v2, "k@" + v1}) {
		t.Errorf("versions after two suspended writes: %q", got)
	}
	if b, err := get("k", "null"); err != nil || string(b) != "null two" {
		t.Errorf("the null version: %q, %v", b, err)
	}
	del, err = cl.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String("k")})
	if err != nil || !aws.ToBool(del.DeleteMarker) || aws.ToString(del.VersionId) != "null" {
		t.Errorf("DeleteObject in a suspended bucket: %+v, %v", del, err)
	}
	if got := versionList(t, cl, bucket); !sameSet(got, []string{"k@null!*", "k@" + v2, "k@" + v1}) {
		t.Errorf("versions after a suspended delete: %q", got)
	}

	// A copy of a version; a multipart upload's version.
	cp, err := cl.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(bucket), Key: aws.String("copy"),
		CopySource: aws.String(bucket + "/k?versionId=" + v1)})
	if err != nil || aws.ToString(cp.CopySourceVersionId) != v1 || aws.ToString(cp.VersionId) != "null" {
		t.Fatalf("CopyObject of a version: %+v, %v", cp, err)
	}
	if b, err := get("copy", ""); err != nil || !bytes.Equal(b, one) {
		t.Errorf("the copy of a version: %q, %v", b, err)
	}
	if _, err := cl.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(bucket),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	mu, err := cl.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String("mp")})
	if err != nil {
		t.Fatal(err)
	}
	part, err := cl.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: aws.String(bucket), Key: aws.String("mp"), UploadId: mu.UploadId,
		PartNumber: aws.Int32(1), CopySource: aws.String(bucket + "/k?versionId=" + v2)})
	if err != nil || aws.ToString(part.CopySourceVersionId) != v2 {
		t.Fatalf("UploadPartCopy of a version: %+v, %v", part, err)
	}
	done, err := cl.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String("mp"), UploadId: mu.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: part.CopyPartResult.ETag}}}})
	if err != nil || aws.ToString(done.VersionId) == "" || aws.ToString(done.VersionId) == "null" {
		t.Fatalf("CompleteMultipartUpload in an enabled bucket: %+v, %v", done, err)
	}
	if b, err := get("mp", aws.ToString(done.VersionId)); err != nil || !bytes.Equal(b, two) {
		t.Errorf("the multipart version: %d bytes, %v", len(b), err)
	}

	// A bucket holding versions is not empty; deleting every version
	// empties it.
	_, err = cl.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)})
	if st, _ := httpError(t, err, "DeleteBucket holding versions"); st != 409 {
		t.Errorf("DeleteBucket holding versions: %d", st)
	}
	var ids []types.ObjectIdentifier
	lv, err := cl.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range lv.Versions {
		ids = append(ids, types.ObjectIdentifier{Key: v.Key, VersionId: v.VersionId})
	}
	for _, m := range lv.DeleteMarkers {
		ids = append(ids, types.ObjectIdentifier{Key: m.Key, VersionId: m.VersionId})
	}
	dd, err := cl.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(bucket), Delete: &types.Delete{Objects: ids}})
	if err != nil || len(dd.Deleted) != len(ids) || len(dd.Errors) != 0 {
		t.Fatalf("DeleteObjects of every version: %+v, %v", dd, err)
	}
	markers := 0
	for _, d := range dd.Deleted {
		if aws.ToBool(d.DeleteMarker) {
			markers++
		}
	}
	if markers != 1 {
		t.Errorf("DeleteObjects reported %d delete markers removed, want 1", markers)
	}
	if got := versionList(t, cl, bucket); len(got) != 0 {
		t.Errorf("versions left: %q", got)
	}
	if _, err := cl.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Errorf("DeleteBucket once every version is gone: %v", err)
	}
}
