package metatest

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// The store keeps encryption envelopes (meta.Object.Encryption and
// EncryptionKEK, and the same on parts) opaque: exactly the bytes given,
// nil for plaintext, through every way a row is written, moved and read.

var encryptionTests = []test{
	{name: "SingleBlob", fn: testEnvelopeSingleBlob},
	{name: "Inline", fn: testEnvelopeInline},
	{name: "Multipart", fn: testEnvelopeMultipart},
	{name: "PutWithParts", fn: testEnvelopeParts},
	{name: "BucketDefault", fn: testBucketEncryption},
	{name: "Upload", fn: testUploadEncryption},
}

// testUploadEncryption: an upload's encryption choice (mode, KMS key,
// customer key check) comes back as given from GetUpload, ListUploads
// and ListExpiredUploads.
func testUploadEncryption(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	now := time.Now().UTC()
	u := meta.Upload{ID: "sse-up", Bucket: "alice", Key: "k", InitiatorID: "alice", CreatedAt: now, ExpiresAt: now.Add(-time.Minute),
		EncryptionMode: 3, EncryptionKMSKey: "alias/k", CustomerKeyCheck: envelope("check")}
	ok(t, s.CreateUpload(ctx, u), "CreateUpload")
	plain := meta.Upload{ID: "plain-up", Bucket: "alice", Key: "p", InitiatorID: "alice", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	ok(t, s.CreateUpload(ctx, plain), "CreateUpload plain")
	check := func(got, want meta.Upload, what string) {
		t.Helper()
		if got.EncryptionMode != want.EncryptionMode || got.EncryptionKMSKey != want.EncryptionKMSKey || !bytes.Equal(got.CustomerKeyCheck, want.CustomerKeyCheck) {
			t.Errorf("%s: encryption %d %q %q, want %d %q %q", what, got.EncryptionMode, got.EncryptionKMSKey, got.CustomerKeyCheck,
				want.EncryptionMode, want.EncryptionKMSKey, want.CustomerKeyCheck)
		}
		if want.CustomerKeyCheck == nil && got.CustomerKeyCheck != nil {
			t.Errorf("%s: customer key check %q, want nil", what, got.CustomerKeyCheck)
		}
	}
	got, err := s.GetUpload(ctx, u.ID)
	ok(t, err, "GetUpload")
	check(got, u, "GetUpload")
	got, err = s.GetUpload(ctx, plain.ID)
	ok(t, err, "GetUpload plain")
	check(got, plain, "GetUpload plain")
	us, _, err := s.ListUploads(ctx, "alice", meta.ListUploadsOptions{})
	ok(t, err, "ListUploads")
	if len(us) != 2 {
		t.Fatalf("ListUploads: %d uploads, want 2", len(us))
	}
	for _, g := range us {
		if g.ID == u.ID {
			check(g, u, "ListUploads")
		}
	}
	exp, err := s.ListExpiredUploads(ctx, now, 10)
	ok(t, err, "ListExpiredUploads")
	if len(exp) != 1 {
		t.Fatalf("ListExpiredUploads: %d uploads, want 1", len(exp))
	}
	check(exp[0], u, "ListExpiredUploads")
}

func testBucketEncryption(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	if b, err := s.GetBucket(ctx, "alice"); err != nil || b.Encryption != "" || b.EncryptionKMSKey != "" {
		t.Fatalf("new bucket: %+v, %v; want no default encryption", b, err)
	}
	for _, tc := range []struct{ enc, key string }{
		{meta.EncryptAES256, ""}, {meta.EncryptKMS, ""}, {meta.EncryptKMS, "alias/coffer"}, {"", ""},
	} {
		ok(t, s.SetBucketEncryption(ctx, "alice", tc.enc, tc.key), "SetBucketEncryption "+tc.enc)
		b, err := s.GetBucket(ctx, "alice")
		ok(t, err, "GetBucket")
		if b.Encryption != tc.enc || b.EncryptionKMSKey != tc.key {
			t.Errorf("GetBucket after SetBucketEncryption(%q, %q): %q, %q", tc.enc, tc.key, b.Encryption, b.EncryptionKMSKey)
		}
		bs, err := s.ListBuckets(ctx, "alice")
		ok(t, err, "ListBuckets")
		if len(bs) != 1 || bs[0].Encryption != tc.enc || bs[0].EncryptionKMSKey != tc.key {
			t.Errorf("ListBuckets: %+v", bs)
		}
	}
	for _, bad := range []struct{ enc, key string }{{"AES128", ""}, {meta.EncryptAES256, "k"}, {"", "k"}} {
		wantCode(t, s.SetBucketEncryption(ctx, "alice", bad.enc, bad.key), errcode.InvalidArgument, "SetBucketEncryption "+bad.enc+" "+bad.key)
	}
	wantCode(t, s.SetBucketEncryption(ctx, "nope", meta.EncryptAES256, ""), errcode.NotFound, "SetBucketEncryption of a missing bucket")
}

// envelope returns distinct opaque envelope bytes (with a zero byte and a
// high byte, which a text column would mangle).
func envelope(tag string) []byte {
	return fmt.Appendf(nil, "\x01\x00\xffenvelope %s %d", tag, seq.Add(1))
}

func encrypted(o meta.Object) meta.Object {
	o.Encryption, o.EncryptionKEK = envelope(o.Key), "local:default#1"
	return o
}

func testEnvelopeSingleBlob(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	o := put1(t, s, encrypted(obj("alice", "secret", 100)))
	wantObject(t, s, o)

	page, err := s.ListObjects(ctx, "alice", meta.ListOptions{})
	ok(t, err, "ListObjects")
	if len(page.Objects) != 1 || page.Objects[0].Key != "secret" || page.Objects[0].Size != 100 {
		t.Errorf("listing: %+v", page.Objects)
	}

	// A move keeps the envelope (it is bound to the blob, not the key).
	moved, err := s.MoveObject(ctx, "alice", "secret", "alice", "moved", meta.Cond{})
	ok(t, err, "MoveObject")
	if string(moved.Encryption) != string(o.Encryption) {
		t.Errorf("MoveObject returned Encryption %q, want %q", moved.Encryption, o.Encryption)
	}
	o.Key = "moved"
	wantObject(t, s, o)

	// A plaintext overwrite has none.
	plain := put1(t, s, obj("alice", "moved", 7))
	wantObject(t, s, plain)
	if got, err := s.GetObject(ctx, "alice", "moved"); err == nil && (got.Encryption != nil || got.EncryptionKEK != "") {
		t.Errorf("plaintext overwrite: Encryption %q, KEK %q; want nil, \"\"", got.Encryption, got.EncryptionKEK)
	}
}

func testEnvelopeInline(t *testing.T, s store) {
	addUser(t, s, "alice", 0)
	o := encrypted(inlineObj("alice", "small", []byte("ciphertext\x00\xff")))
	put1(t, s, o)
	wantObject(t, s, o)
	wantInline(t, s, "alice", "small", o.Inline)
}

func testEnvelopeMultipart(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	u := addUpload(t, s, "alice", "big")
	ps := make([]meta.Part, 3)
	for i := range ps {
		p := part(u.ID, i+1, 5<<20)
		if i != 1 { // part 2 plaintext: each part stands alone
			p.Encryption, p.EncryptionKEK = envelope(fmt.Sprint("part", i)), fmt.Sprintf("local:default#%d", i+1)
		}
		ps[i] = putPart(t, s, p)
	}
	// ListParts returns each part's envelope (tus reads its parts back
	// through them).
	listed, _, err := s.ListParts(ctx, u.ID, 0, 0)
	ok(t, err, "ListParts")
	for i, p := range listed {
		if !bytes.Equal(p.Encryption, ps[i].Encryption) || p.EncryptionKEK != ps[i].EncryptionKEK {
			t.Errorf("ListParts part %d: envelope %q (%q), want %q (%q)", p.Number, p.Encryption, p.EncryptionKEK, ps[i].Encryption, ps[i].EncryptionKEK)
		}
	}
	in := completion(len(ps))
	got, err := s.CompleteUpload(ctx, u.ID, in, completeOf(ps...), 0, meta.Cond{})
	ok(t, err, "CompleteUpload")
	want := completed(u, in, ps...)
	sameObject(t, got, want, "CompleteUpload result")
	wantObject(t, s, want)
	if want.Parts[1].Encryption != nil || want.Parts[0].Encryption == nil {
		t.Fatal("test setup: parts 1 and 3 encrypted, part 2 plain")
	}

	_, err = s.MoveObject(ctx, "alice", "big", "alice", "big2", meta.Cond{})
	ok(t, err, "MoveObject")
	want.Key = "big2"
	wantObject(t, s, want)
}

func testEnvelopeParts(t *testing.T, s store) {
	addUser(t, s, "alice", 0)
	o := obj("alice", "assembled", 30)
	o.BlobKey = ""
	for i := range 3 {
		o.Parts = append(o.Parts, meta.ObjectPart{BlobKey: fmt.Sprintf("blob/p%d-%d", i, seq.Add(1)), Size: 10,
			ETag: fmt.Sprintf("%032x", i), Encryption: envelope("p"), EncryptionKEK: "awskms:alias/coffer"})
	}
	o.ETag = "0123456789abcdef0123456789abcdef-3"
	o.Checksum = meta.Checksum{}
	put1(t, s, o)
	wantObject(t, s, o)
}
