package s3compat

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// testRestic: restic (Debian's package) backs up a tree into a versioned
// bucket with object lock and a default retention of one day GOVERNANCE
// (how backup tools are set up against ransomware), and restores it
// byte-exact. Then, through S3 with the same key, as `restic prune` or an
// attacker would: deleting a pack file's version is refused (alone and in
// DeleteObjects), an overwrite only adds a version and leaves the locked
// one intact, and the backup still restores from the locked versions.
func (e *env) testRestic(t *testing.T) {
	bin := tool(t, "restic")
	b := e.bucket("restic")
	ctx := t.Context()
	cl := s3.NewFromConfig(aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider(e.accessKey, e.secretKey, "")},
		func(o *s3.Options) {
			o.BaseEndpoint = aws.String(e.srv.S3URL)
			o.UsePathStyle = true
		})
	if _, err := cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &b, ObjectLockEnabledForBucket: aws.Bool(true)}); err != nil {
		t.Fatalf("CreateBucket with object lock: %v", err)
	}
	if _, err := cl.PutObjectLockConfiguration(ctx, &s3.PutObjectLockConfigurationInput{Bucket: &b,
		ObjectLockConfiguration: &types.ObjectLockConfiguration{ObjectLockEnabled: types.ObjectLockEnabledEnabled,
			Rule: &types.ObjectLockRule{DefaultRetention: &types.DefaultRetention{Mode: types.ObjectLockRetentionModeGovernance, Days: aws.Int32(1)}}}}); err != nil {
		t.Fatalf("PutObjectLockConfiguration: %v", err)
	}

	home := t.TempDir()
	rc := &runner{
		e: e, name: "restic", bin: bin, dir: home, bucket: b, timeout: 4 * time.Minute,
		pre: []string{"--no-cache", "--repo", "s3:" + e.srv.S3URL + "/" + b},
		env: childEnv(map[string]string{"HOME": home, "AWS_ACCESS_KEY_ID": e.accessKey, "AWS_SECRET_ACCESS_KEY": e.secretKey,
			"AWS_DEFAULT_REGION": "us-east-1", "RESTIC_PASSWORD": "correct horse battery staple"}),
	}
	src := filepath.Join(t.TempDir(), "src")
	files := makeTree(t, src, 40, 23, false)
	writeRandom(t, filepath.Join(src, "big", "blob.bin"), 12<<20, 5)
	big, err := os.ReadFile(filepath.Join(src, "big", "blob.bin"))
	if err != nil {
		t.Fatal(err)
	}
	files["big/blob.bin"] = big

	rc.run(t, "init")
	rc.run(t, "backup", src)
	rc.run(t, "check", "--read-data")
	// restic restores a snapshot's absolute paths under the target.
	dst := t.TempDir()
	rc.run(t, "restore", "latest", "--target", dst)
	compareTree(t, "restic restore", files, filepath.Join(dst, src))

	// Every pack file is locked: its version carries the default retention.
	var packs []types.ObjectVersion
	out, err := cl.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: &b, Prefix: aws.String("data/")})
	if err != nil {
		t.Fatal(err)
	}
	packs = out.Versions
	if len(packs) == 0 {
		t.Fatal("restic wrote no pack files under data/")
	}
	for _, p := range packs {
		r, err := cl.GetObjectRetention(ctx, &s3.GetObjectRetentionInput{Bucket: &b, Key: p.Key, VersionId: p.VersionId})
		if err != nil || r.Retention.Mode != types.ObjectLockRetentionModeGovernance || !r.Retention.RetainUntilDate.After(time.Now().Add(23*time.Hour)) {
			t.Fatalf("pack %s: retention %+v, %v; want the bucket's default, GOVERNANCE for a day", aws.ToString(p.Key), r, err)
		}
	}
	pack := packs[0]
	orig := getVersion(t, cl, b, pack)

	// Deleting a locked version is refused, alone and in DeleteObjects.
	_, err = cl.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b, Key: pack.Key, VersionId: pack.VersionId})
	wantAccessDenied(t, err, "DeleteObject of a pack file's version")
	ids := make([]types.ObjectIdentifier, len(packs))
	for i, p := range packs {
		ids[i] = types.ObjectIdentifier{Key: p.Key, VersionId: p.VersionId}
	}
	del, err := cl.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: &b, Delete: &types.Delete{Objects: ids}})
	if err != nil || len(del.Errors) != len(packs) || len(del.Deleted) != 0 {
		t.Fatalf("DeleteObjects of every pack file's version: %v, %d deleted, %d refused; want all %d refused", err, len(del.Deleted), len(del.Errors), len(packs))
	}
	for _, de := range del.Errors {
		if aws.ToString(de.Code) != "AccessDenied" {
			t.Errorf("DeleteObjects of %s: %s %s, want AccessDenied", aws.ToString(de.Key), aws.ToString(de.Code), aws.ToString(de.Message))
		}
	}
	// Overwriting adds a version; the locked one keeps its bytes.
	junk := []byte("ransomware was here")
	sum := md5.Sum(junk)
	if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: pack.Key, Body: bytes.NewReader(junk),
		ContentMD5: aws.String(base64.StdEncoding.EncodeToString(sum[:]))}); err != nil {
		t.Fatalf("PutObject over a pack file: %v", err)
	}
	if got := getVersion(t, cl, b, pack); !bytes.Equal(got, orig) {
		t.Errorf("the locked version of %s changed after an overwrite: %d bytes, want %d", aws.ToString(pack.Key), len(got), len(orig))
	}
	_, err = cl.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b, Key: pack.Key, VersionId: pack.VersionId})
	wantAccessDenied(t, err, "DeleteObject of a pack file's version after an overwrite")
	// Every locked version is still there, byte for byte: the backup can be
	// recovered from them.
	for _, p := range packs {
		if got := getVersion(t, cl, b, p); int64(len(got)) != aws.ToInt64(p.Size) {
			t.Errorf("pack %s version %s: %d bytes, want %d", aws.ToString(p.Key), aws.ToString(p.VersionId), len(got), aws.ToInt64(p.Size))
		}
	}
}

// getVersion reads one version of an object.
func getVersion(t *testing.T, cl *s3.Client, bucket string, v types.ObjectVersion) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	out, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: v.Key, VersionId: v.VersionId})
	if err != nil {
		t.Fatalf("GetObject %s version %s: %v", aws.ToString(v.Key), aws.ToString(v.VersionId), err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// wantAccessDenied fails unless err is S3's AccessDenied of a locked version.
func wantAccessDenied(t *testing.T, err error, what string) {
	t.Helper()
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "AccessDenied" || !strings.Contains(ae.ErrorMessage(), "object lock") {
		t.Errorf("%s: %v, want AccessDenied (object lock)", what, err)
	}
}
