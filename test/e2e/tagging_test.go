package e2e

import (
	"encoding/hex"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/coffer-storage/coffer/test/testenv"
)

// tagList writes an SDK tag set as k=v strings, in order.
func tagList(ts []types.Tag) []string {
	out := []string{}
	for _, t := range ts {
		out = append(out, aws.ToString(t.Key)+"="+aws.ToString(t.Value))
	}
	return out
}

// TestS3Tagging drives tagging with aws-sdk-go-v2 against the binary
// (both shapes): x-amz-tagging on PutObject and on a multipart upload,
// object tags per version (and the tagging count on GET/HEAD), the copy
// directive, delete markers, bad tag sets, bucket tagging, and another
// user.
func TestS3Tagging(t *testing.T) {
	srv := testenv.Start(t)
	cl, _ := s3Client(t, srv)
	other, _ := s3Client(t, srv)
	ctx := t.Context()
	bucket := "tag-" + strings.ToLower(hex.EncodeToString(randBytes(t, 4)))
	if _, err := cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(bucket),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	tagsOf := func(key, version string) []string {
		t.Helper()
		in := &s3.GetObjectTaggingInput{Bucket: aws.String(bucket), Key: aws.String(key)}
		if version != "" {
			in.VersionId = aws.String(version)
		}
		out, err := cl.GetObjectTagging(ctx, in)
		if err != nil {
			t.Fatalf("GetObjectTagging %s %s: %v", key, version, err)
		}
		if version != "" && aws.ToString(out.VersionId) != version {
			t.Errorf("GetObjectTagging %s %s answered version %q", key, version, aws.ToString(out.VersionId))
		}
		return tagList(out.TagSet)
	}
	wantTags := func(key, version string, want ...string) {
		t.Helper()
		if got := tagsOf(key, version); !slices.Equal(got, want) {
			t.Errorf("tags of %s %s = %q, want %q", key, version, got, want)
		}
	}

	// x-amz-tagging on PutObject; the count on GET and HEAD.
	v1, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("k"), Body: strings.NewReader("one"),
		Tagging: aws.String("project=coffer&team=storage%20ops")})
	if err != nil {
		t.Fatal(err)
	}
	wantTags("k", "", "project=coffer", "team=storage ops")
	head, err := cl.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("k")})
	if err != nil || aws.ToInt32(head.TagCount) != 2 {
		t.Errorf("HeadObject tag count %d, %v; want 2", aws.ToInt32(head.TagCount), err)
	}
	get, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("k")})
	if err != nil {
		t.Fatal(err)
	}
	get.Body.Close()
	if aws.ToInt32(get.TagCount) != 2 {
		t.Errorf("GetObject tag count %d, want 2", aws.ToInt32(get.TagCount))
	}

	// Tags belong to a version: a new version has its own.
	v2, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("k"), Body: strings.NewReader("two")})
	if err != nil {
		t.Fatal(err)
	}
	wantTags("k", "")
	wantTags("k", aws.ToString(v1.VersionId), "project=coffer", "team=storage ops")
	pt, err := cl.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: aws.String(bucket), Key: aws.String("k"),
		VersionId: v1.VersionId, Tagging: &types.Tagging{TagSet: []types.Tag{{Key: aws.String("old"), Value: aws.String("yes")}}}})
	if err != nil || aws.ToString(pt.VersionId) != aws.ToString(v1.VersionId) {
		t.Fatalf("PutObjectTagging of version 1: %v, version %q", err, aws.ToString(pt.VersionId))
	}
	wantTags("k", aws.ToString(v1.VersionId), "old=yes")
	wantTags("k", aws.ToString(v2.VersionId))
	pt, err = cl.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: aws.String(bucket), Key: aws.String("k"),
		Tagging: &types.Tagging{TagSet: []types.Tag{{Key: aws.String("new"), Value: aws.String("1")}}}})
	if err != nil || aws.ToString(pt.VersionId) != aws.ToString(v2.VersionId) {
		t.Fatalf("PutObjectTagging of the latest: %v, version %q", err, aws.ToString(pt.VersionId))
	}
	wantTags("k", "", "new=1")
	if _, err := cl.DeleteObjectTagging(ctx, &s3.DeleteObjectTaggingInput{Bucket: aws.String(bucket), Key: aws.String("k"),
		VersionId: v1.VersionId}); err != nil {
		t.Fatal(err)
	}
	wantTags("k", aws.ToString(v1.VersionId))
	wantTags("k", "", "new=1")
	if vs := versionList(t, cl, bucket); len(vs) != 2 {
		t.Errorf("tagging added versions: %q", vs)
	}

	// Bad tag sets: InvalidTag, nothing changes.
	for name, ts := range map[string][]types.Tag{
		"a duplicate key": {{Key: aws.String("a"), Value: aws.String("1")}, {Key: aws.String("a"), Value: aws.String("2")}},
		"an aws: key":     {{Key: aws.String("aws:x"), Value: aws.String("1")}},
		"a long key":      {{Key: aws.String(strings.Repeat("k", 129)), Value: aws.String("1")}},
	} {
		_, err := cl.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: aws.String(bucket), Key: aws.String("k"), Tagging: &types.Tagging{TagSet: ts}})
		if st, _ := httpError(t, err, "PutObjectTagging with "+name); st != 400 || !strings.Contains(err.Error(), "InvalidTag") {
			t.Errorf("PutObjectTagging with %s: %v", name, err)
		}
	}
	eleven := make([]string, 11)
	for i := range eleven {
		eleven[i] = "k" + strings.Repeat("x", i) + "=v"
	}
	_, err = cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("k"), Body: strings.NewReader("x"),
		Tagging: aws.String(strings.Join(eleven, "&"))})
	if st, _ := httpError(t, err, "PutObject with 11 tags"); st != 400 {
		t.Errorf("PutObject with 11 tags: %v", err)
	}
	wantTags("k", "", "new=1")

	// Copies: COPY (the default) takes the source version's tags,
	// REPLACE the request's.
	src := aws.String(bucket + "/k?versionId=" + aws.ToString(v2.VersionId))
	if _, err := cl.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(bucket), Key: aws.String("copy"), CopySource: src}); err != nil {
		t.Fatal(err)
	}
	wantTags("copy", "", "new=1")
	if _, err := cl.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(bucket), Key: aws.String("replaced"), CopySource: src,
		TaggingDirective: types.TaggingDirectiveReplace, Tagging: aws.String("copied=by%20replace")}); err != nil {
		t.Fatal(err)
	}
	wantTags("replaced", "", "copied=by replace")
	_, err = cl.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(bucket), Key: aws.String("bad"), CopySource: src,
		TaggingDirective: "MERGE"})
	if st, _ := httpError(t, err, "CopyObject with an unknown directive"); st != 400 {
		t.Errorf("CopyObject with an unknown directive: %v", err)
	}

	// Multipart: the upload's tags are the object's on completion.
	mu, err := cl.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String("mp"),
		Tagging: aws.String("via=multipart")})
	if err != nil {
		t.Fatal(err)
	}
	part, err := cl.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(bucket), Key: aws.String("mp"), UploadId: mu.UploadId,
		PartNumber: aws.Int32(1), Body: strings.NewReader("part")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String("mp"),
		UploadId: mu.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: part.ETag}}}}); err != nil {
		t.Fatal(err)
	}
	wantTags("mp", "", "via=multipart")

	// Delete markers have no tags.
	del, err := cl.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String("k")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = cl.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: aws.String(bucket), Key: aws.String("k")})
	if st, _ := httpError(t, err, "GetObjectTagging of a deleted key"); st != 404 {
		t.Errorf("GetObjectTagging of a deleted key: %v", err)
	}
	_, err = cl.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: aws.String(bucket), Key: aws.String("k"), VersionId: del.VersionId,
		Tagging: &types.Tagging{TagSet: []types.Tag{{Key: aws.String("a"), Value: aws.String("b")}}}})
	if st, _ := httpError(t, err, "PutObjectTagging of a delete marker"); st != 405 {
		t.Errorf("PutObjectTagging of a delete marker: %v", err)
	}
	wantTags("k", aws.ToString(v2.VersionId), "new=1")

	// Bucket tagging.
	_, err = cl.GetBucketTagging(ctx, &s3.GetBucketTaggingInput{Bucket: aws.String(bucket)})
	if st, _ := httpError(t, err, "GetBucketTagging of an untagged bucket"); st != 404 || !strings.Contains(err.Error(), "NoSuchTagSet") {
		t.Errorf("GetBucketTagging of an untagged bucket: %v", err)
	}
	if _, err := cl.PutBucketTagging(ctx, &s3.PutBucketTaggingInput{Bucket: aws.String(bucket), Tagging: &types.Tagging{TagSet: []types.Tag{
		{Key: aws.String("cost-center"), Value: aws.String("42")}, {Key: aws.String("env"), Value: aws.String("test")}}}}); err != nil {
		t.Fatal(err)
	}
	bt, err := cl.GetBucketTagging(ctx, &s3.GetBucketTaggingInput{Bucket: aws.String(bucket)})
	if err != nil || !slices.Equal(tagList(bt.TagSet), []string{"cost-center=42", "env=test"}) {
		t.Errorf("GetBucketTagging = %q, %v", tagList(bt.TagSet), err)
	}

	// Another user sees and changes nothing.
	_, err = other.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: aws.String(bucket), Key: aws.String("copy")})
	if st, _ := httpError(t, err, "another user's GetObjectTagging"); st != 403 {
		t.Errorf("another user's GetObjectTagging: %v", err)
	}
	_, err = other.PutBucketTagging(ctx, &s3.PutBucketTaggingInput{Bucket: aws.String(bucket), Tagging: &types.Tagging{TagSet: []types.Tag{}}})
	if st, _ := httpError(t, err, "another user's PutBucketTagging"); st != 403 {
		t.Errorf("another user's PutBucketTagging: %v", err)
	}
	if _, err := cl.DeleteBucketTagging(ctx, &s3.DeleteBucketTaggingInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.GetBucketTagging(ctx, &s3.GetBucketTaggingInput{Bucket: aws.String(bucket)}); err == nil {
		t.Error("GetBucketTagging after DeleteBucketTagging answered tags")
	}
}
