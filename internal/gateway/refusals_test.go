package gateway_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/crypt"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/kms"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/object"
	"github.com/coffer-storage/coffer/internal/testbackend"
)

// TestGatewayRefusals: what a gateway bucket cannot do is refused with
// the same error whatever the operation's path through the service: a
// read-only gateway refuses every write (read_only_gateway) before it
// says what it does not support; a read-write one refuses multipart
// uploads, atomic batches, moves in either direction and its own
// deletion, and the writes it cannot store faithfully.
func TestGatewayRefusals(t *testing.T) {
	keys, err := kms.Open(t.Context(), "", kms.Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		code   errcode.Code
		reason string
	}
	readOnly := want{errcode.PermissionDenied, "read_only_gateway"}
	unsupported := want{errcode.NotImplemented, "gateway_unsupported"}
	gatewayBucket := want{errcode.PermissionDenied, "gateway_bucket"}
	check := func(t *testing.T, what string, err error, w want) {
		t.Helper()
		e := errcode.As(err)
		if err == nil || e.Code != w.code || w.reason != "" && e.Detail["reason"] != w.reason {
			t.Errorf("%s: %v (reason %v); want %s %s", what, err, e.Detail["reason"], w.code, w.reason)
		}
	}
	// orUnsupported is w, a write's refusal, or, for a gateway that
	// takes writes, gateway_unsupported.
	orUnsupported := func(w want) want {
		if w == (want{}) {
			return unsupported
		}
		return w
	}
	ops := func(t *testing.T, e *env, write, multi want) {
		ctx := t.Context()
		_, err := e.svc.Put(ctx, e.alice, object.PutInput{Bucket: "gate", Key: "k", Body: strings.NewReader("x"), Size: 1})
		if write != (want{}) {
			check(t, "Put", err, write)
		} else if err != nil {
			t.Fatalf("Put: %v", err)
		}
		_, err = e.svc.Delete(ctx, e.alice, "gate", "k", meta.Cond{})
		if write != (want{}) {
			check(t, "Delete", err, write)
		} else if err != nil {
			t.Errorf("Delete: %v", err)
		}
		_, err = e.svc.CreateUpload(ctx, e.alice, object.CreateUploadInput{Bucket: "gate", Key: "big"})
		check(t, "CreateUpload", err, multi)
		bt := e.svc.NewBatch(e.alice)
		_, err = bt.Add(ctx, object.PutInput{Bucket: "gate", Key: "x", Body: strings.NewReader("x"), Size: 1})
		check(t, "Batch.Add", err, multi)
		bt.Abort()
		_, err = e.svc.Move(ctx, e.alice, "gate", "k", "alice-bucket", "moved", meta.Cond{})
		check(t, "Move out of the gateway", err, unsupported)
		_, err = e.svc.Move(ctx, e.alice, "alice-bucket", "k", "gate", "moved", meta.Cond{})
		check(t, "Move into the gateway", err, unsupported)
		_, err = e.svc.Move(ctx, e.alice, "gate", "k", "gate", "../bad", meta.Cond{})
		check(t, "Move to an invalid key", err, unsupported) // the bucket answers before the key
		check(t, "DeleteBucket", e.svc.DeleteBucket(ctx, e.alice, "gate"), gatewayBucket)
		// Tagging: the backend's own tags are not Coffer's to manage.
		tags := []meta.Tag{{Key: "a", Value: "b"}}
		_, err = e.svc.Put(ctx, e.alice, object.PutInput{Bucket: "gate", Key: "tagged", Body: strings.NewReader("x"), Size: 1, Tags: tags})
		check(t, "Put with tags", err, orUnsupported(write))
		_, err = e.svc.SetTags(ctx, e.alice, "gate", "k", "", tags)
		check(t, "SetTags", err, orUnsupported(write))
		check(t, "SetBucketTags", e.svc.SetBucketTags(ctx, e.alice, "gate", tags), orUnsupported(write))
		_, err = e.svc.GetTags(ctx, e.alice, "gate", "k", "")
		check(t, "GetTags", err, unsupported)
		_, err = e.svc.GetBucketTags(ctx, e.alice, "gate")
		check(t, "GetBucketTags", err, unsupported)
		// Object lock: the backend's own.
		lock := object.Lock{LegalHold: true}
		_, err = e.svc.Put(ctx, e.alice, object.PutInput{Bucket: "gate", Key: "held", Body: strings.NewReader("x"), Size: 1, Lock: lock})
		check(t, "Put with a lock", err, orUnsupported(write))
		_, err = e.svc.GetObjectLock(ctx, e.alice, "gate")
		check(t, "GetObjectLock", err, unsupported)
		_, err = e.svc.SetObjectLock(ctx, e.alice, "gate", meta.DefaultRetention{Mode: meta.Governance, Days: 1})
		check(t, "SetObjectLock", err, orUnsupported(write))
		_, err = e.svc.GetLock(ctx, e.alice, "gate", "k", "")
		check(t, "GetLock", err, unsupported)
		_, err = e.svc.SetRetention(ctx, e.alice, "gate", "k", "", meta.Retention{Mode: meta.Governance, Until: time.Now().Add(time.Hour)}, false)
		check(t, "SetRetention", err, orUnsupported(write))
		_, err = e.svc.SetLegalHold(ctx, e.alice, "gate", "k", "", true)
		check(t, "SetLegalHold", err, orUnsupported(write))
	}
	t.Run("ro", func(t *testing.T) {
		ops(t, newEnv(t, testbackend.SharedMinIO(t), "ro", "", testConfig(nil)), readOnly, readOnly)
	})
	t.Run("rw", func(t *testing.T) {
		e := newEnv(t, testbackend.SharedMinIO(t), "rw", "", testConfig(func(c *object.Config) { c.Keys = keys }))
		ops(t, e, want{}, unsupported)
		ctx := t.Context()
		_, err := e.svc.Put(ctx, e.alice, object.PutInput{Bucket: "gate", Key: "md", Body: strings.NewReader("x"), Size: 1,
			Metadata: map[string]string{"coffer-sse": "x"}})
		check(t, "Put with reserved metadata", err, want{errcode.InvalidArgument, ""})
		_, err = e.svc.Put(ctx, e.alice, object.PutInput{Bucket: "gate", Key: "ssec", Body: strings.NewReader("x"), Size: 1,
			SSE: object.SSE{Mode: crypt.ModeCustomer, CustomerKey: bytes.Repeat([]byte{7}, 32)}})
		check(t, "Put with a customer key", err, unsupported)
		_, err = e.svc.Put(ctx, e.alice, object.PutInput{Bucket: "gate", Key: "chunked", Body: strings.NewReader("x"), Size: -1,
			SSE: object.SSE{Mode: crypt.ModeServer}})
		check(t, "encrypted Put of unknown size", err, want{errcode.InvalidArgument, ""})
		// An encrypted gateway object's ETag is the ciphertext's: a copy
		// out of the gateway is verified against its SHA-256, not its ETag.
		data := strings.Repeat("sealed ", 100)
		if _, err := e.svc.Put(ctx, e.alice, object.PutInput{Bucket: "gate", Key: "enc", Body: strings.NewReader(data), Size: int64(len(data)),
			SSE: object.SSE{Mode: crypt.ModeServer}}); err != nil {
			t.Fatal(err)
		}
		o, err := e.svc.Copy(ctx, e.alice, object.CopyInput{SrcBucket: "gate", SrcKey: "enc", DstBucket: "alice-bucket", DstKey: "enc"})
		if err != nil || o.ETag != md5hex(data) {
			t.Errorf("Copy of an encrypted gateway object: %v, ETag %s; want the plaintext's %s", err, o.ETag, md5hex(data))
		}
		for _, k := range []string{"k", "enc"} {
			e.svc.Delete(ctx, e.alice, "gate", k, meta.Cond{})
		}
	})
	t.Run("no opener", func(t *testing.T) {
		e := newEnvAt(t, testbackend.SharedMinIO(t), testbackend.SharedMinIO(t).Endpoint(), "rw", "", testConfig(nil), nil)
		_, err := e.svc.Get(t.Context(), e.alice, "gate", "k")
		check(t, "Get without a gateway opener", err, want{errcode.NotImplemented, ""})
		_, err = e.svc.List(t.Context(), e.alice, "gate", meta.ListOptions{})
		check(t, "List without a gateway opener", err, want{errcode.NotImplemented, ""})
	})
}
