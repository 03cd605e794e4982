package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awskms "github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/coffer-storage/coffer/internal/testbackend"
	"github.com/coffer-storage/coffer/test/testenv"
)

// TestKMSOutage: with the key service (AWS KMS, moto) hung, new writes
// and reads that need a key the node has not cached fail with 503 +
// Retry-After and store nothing; when it answers again, everything works
// without restarting Coffer.
func TestKMSOutage(t *testing.T) {
	moto := testbackend.StartMoto(t)
	c := awskms.NewFromConfig(aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("moto", "moto", "")},
		func(o *awskms.Options) { o.BaseEndpoint = aws.String(moto.Endpoint()) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	k, err := c.CreateKey(ctx, &awskms.CreateKeyInput{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateAlias(ctx, &awskms.CreateAliasInput{AliasName: aws.String("alias/coffer-e2e"), TargetKeyId: k.KeyMetadata.KeyId}); err != nil {
		t.Fatal(err)
	}
	b := &testenv.Backends{Env: moto.Env()}
	if testenv.ScaleOut() {
		b = testenv.NewBackends(t) // its AWS credentials (MinIO's) do for moto too
	}
	srv := testenv.StartNode(t, b, "--encryption", "on", "--kms", "awskms://alias/coffer-e2e?region=us-east-1&endpoint="+moto.Endpoint())
	u := newS3User(t, srv)
	bucket := "kms-outage"
	u.mustBucket(t, bucket)
	before := fill("KMS-OUTAGE-", 100_000)
	if r := u.s3(t, "PUT", "/"+bucket+"/before", before, ""); r.status != 200 {
		t.Fatalf("PUT before the outage: %d %s", r.status, r.body)
	}

	moto.Pause()
	defer moto.Resume()
	time.Sleep(6 * time.Second) // the node's intermediate key for new writes expires (5 s)
	for _, size := range []int{100, 100_000} {
		key := "during-" + strings.Repeat("x", size%7)
		r := u.s3(t, "PUT", "/"+bucket+"/"+key, fill("KMS-OUTAGE-", size), "")
		if r.status != 503 || r.code != "ServiceUnavailable" || r.header.Get("Retry-After") == "" {
			t.Errorf("PUT of %d bytes during the outage: %d %s (Retry-After %q), want 503 ServiceUnavailable with Retry-After",
				size, r.status, r.code, r.header.Get("Retry-After"))
		}
		if r := u.s3(t, "HEAD", "/"+bucket+"/"+key, nil, ""); r.status != 404 {
			t.Errorf("HEAD %s after the refused PUT: %d, want 404", key, r.status)
		}
	}
	// A read whose key is cached works; after a restart (cold caches) it
	// needs the key service: 503 too.
	wantBody(t, u, bucket, "before", before)
	srv.Restart()
	if r := u.s3(t, "GET", "/"+bucket+"/before", nil, ""); r.status != 503 || r.header.Get("Retry-After") == "" {
		t.Errorf("cold GET during the outage: %d %s, want 503 with Retry-After", r.status, r.code)
	}

	moto.Resume()
	wantBody(t, u, bucket, "before", before)
	after := fill("KMS-AFTER-", 70_000)
	if r := u.s3(t, "PUT", "/"+bucket+"/after", after, ""); r.status != 200 {
		t.Errorf("PUT after the outage: %d %s", r.status, r.body)
	}
	wantBody(t, u, bucket, "after", after)
}
