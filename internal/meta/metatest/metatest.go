// Package metatest is the conformance suite of the metadata store (every
// role of meta.Stores). Every backend runs it from its own tests and is
// done when it passes:
//
//	func TestConformance(t *testing.T) {
//		metatest.Run(t, func(t *testing.T) (meta.Stores, func() error) {
//			s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "meta.db"), sqlite.Options{})
//			if err != nil {
//				t.Fatal(err)
//			}
//			return s.Stores(), s.Close
//		})
//	}
//
// The suite checks only the contract written in package meta — results,
// error codes, atomicity, exact usage accounting under concurrency, the
// byte order of keys — never how a backend stores anything, so the same
// suite holds every backend to the same behaviour.
//
// # Decisions the contract leaves open
//
// Where meta's documentation is silent the suite pins one answer, so that
// the backends agree:
//   - SetQuota and SetBucketVisibility on a missing user or bucket return
//     NotFound.
//   - A Cond.IfMatch on a missing key fails with PreconditionFailed
//     (RFC 9110: If-Match is false when there is no current object), but
//     DeleteObject of a missing key is NotFound whatever the Cond.
//   - A blob is enqueued only when no object row points at it any more, so
//     a replace that keeps the blob key, or a delete of one of two objects
//     sharing a blob, enqueues nothing (the package invariant: a blob is
//     never reclaimed while a row still points at it).
//   - MoveObject keeps every field of the object, ModTime included.
//   - A refresh token is expired from its ExpiresAt on (like JWT "exp"):
//     rotating it at now == ExpiresAt fails.
//   - A taken hash is AlreadyExists, for CreateRefreshToken and for the
//     next token of RotateRefreshToken (which then consumes nothing).
//   - A rotation that finds its token already used revokes the family even
//     when the reuse came from a concurrent rotation, so after concurrent
//     rotations of one token the winner's new token is revoked too.
//
// Access keys, multipart uploads and multipart objects:
//   - The blob rule above covers every row that points at a blob: objects,
//     parts of multipart objects and parts of uploads. Recording a part
//     again with the same blob, or a PutObjects of a multipart object that
//     keeps its Parts (a metadata-only replace), enqueues nothing.
//     ReferencedBlobs never reports "" (a multipart object's BlobKey).
//   - PutObjects stores an Object with Parts as given; its BlobKey must then
//     be "" and its Size the sum of the part sizes, else InvalidArgument.
//     GetObject, ListObjects, DeleteObject, MoveObject and the replaced
//     objects PutObjects returns all carry Parts and Checksum; Parts is nil
//     exactly for single-blob objects.
//   - ListAccessKeys orders by CreatedAt, ties by ID, and returns no keys
//     (no error) for an unknown user. TouchAccessKey sets LastUsed to t
//     even when t is earlier than the stored value.
//   - PutPart rejects a Number outside 1..10000 with InvalidArgument. A
//     PutPart that fails stores and enqueues nothing.
//   - ListParts and ListUploads report "more" only when another entry
//     exists: a page that ends exactly at the last entry is not truncated.
//   - ListUploads markers (the contract's "key == KeyMarker and ID >
//     UploadIDMarker" cannot page through uploads ordered by creation time,
//     whose IDs are random): UploadIDMarker without KeyMarker is ignored;
//     KeyMarker alone resumes after every upload of that key (as in S3);
//     both resume after the upload UploadIDMarker in the listing order
//     (key, CreatedAt, ID), and if that upload no longer exists under
//     KeyMarker, at the first upload of KeyMarker (a vanished marker may
//     repeat uploads, never skip them).
//   - ListExpiredUploads lists uploads with ExpiresAt strictly before t,
//     soonest ExpiresAt first (ties by ID).
//
// Uploads in flight (stagings):
//   - Stage of a key staged already is AlreadyExists, for an unknown owner
//     NotFound. GrowStaging never shrinks a reservation. RenewStaging
//     reports unknown keys as not renewed.
//   - A staging expires at ExpiresAt (live strictly before it); expiry is
//     checked against the store's clock.
//   - A part replacing a recorded part gets no credit for it (only object
//     stagings replacing an object do).
//
// Multipart, continued:
//   - CompleteUpload runs its checks in the order the contract lists them,
//     each over every listed part before the next: NotFound (the upload is
//     gone) first, then invalid_part_order, then invalid_part for the first
//     listed part that is missing or has another ETag, then
//     entity_too_small for the first small part, then the Cond. The part
//     size minimum is inclusive. Detail["part_number"] is the part's
//     number as an int.
//
// Invites:
//   - CreateInvite ignores the given UsesLeft and Revoked (a new invite
//     has every use left and is not revoked).
//   - An invite expires at ExpiresAt (redeemable strictly before it,
//     judged by the now CreateInvitedUser is given).
//   - CreateInvitedUser checks the invite before the user: a signup with
//     an invalid invite and a taken email is ErrInviteInvalid.
//
// Server key fingerprint:
//   - ClaimKeyFingerprint accepts any fingerprint of 1 to 128 bytes (the
//     store never interprets it) and rejects others with InvalidArgument,
//     recording nothing.
package metatest

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// Run runs the suite. newStore must return a fresh, empty store for each
// call, by role, and the function that closes it; Run closes every store
// it gets (newStore must not), and calls newStore once per subtest.
func Run(t *testing.T, newStore func(t *testing.T) (meta.Stores, func() error)) {
	RunGroups(t, newStore)
}

// RunGroups is Run of the named groups of tests only ("List",
// "Versions", ...; none: all of them).
func RunGroups(t *testing.T, newStore func(t *testing.T) (meta.Stores, func() error), names ...string) {
	groups := []struct {
		name  string
		tests []test
	}{
		{"Users", userTests},
		{"Accounts", accountTests},
		{"RefreshTokens", tokenTests},
		{"Invites", inviteTests},
		{"Shares", shareTests},
		{"Buckets", bucketTests},
		{"Objects", objectTests},
		{"Move", moveTests},
		{"Versions", versionTests},
		{"Tags", tagTests},
		{"Lock", lockTests},
		{"Quota", quotaTests},
		{"List", listTests},
		{"AccessKeys", accessKeyTests},
		{"Uploads", uploadTests},
		{"Inline", inlineTests},
		{"Multipart", multipartTests},
		{"Encryption", encryptionTests},
		{"Gateways", gatewayTests},
		{"EncryptionJobs", encryptionJobTests},
		{"BackendUploads", backendUploadTests},
		{"Staging", stagingTests},
		{"Garbage", garbageTests},
		{"ServerKey", serverKeyTests},
		{"Store", storeTests},
		{"Tus", tusTests},
		{"KMSGrants", kmsGrantTests},
		{"Lifecycle", lifecycleTests},
		{"CORS", corsTests},
		{"ACL", aclTests},
		{"Policy", policyTests},
		{"Scrub", scrubTests},
	}
	mk := func(t *testing.T) store {
		t.Helper()
		st, closeStore := newStore(t)
		if closeStore == nil {
			t.Fatal("newStore returned no close function")
		}
		s := store{st.Accounts, st.Sessions, st.Invites, st.AccessKeys, st.Limits, st.Buckets, st.Objects, st.Uploads,
			st.Stagings, st.Reclamation, st.Shares, st.Tus, st.EncryptionJobs, st.KeyGrants, st.Cluster, st.Lifecycles, st.CORSConfigs, st.ACLs, st.Policies, st.Scrubs, closeStore}
		for f, v := range reflect.ValueOf(st).Fields() {
			if v.IsNil() && f.Name != "Changes" {
				t.Fatalf("newStore returned no %s", f.Name)
			}
		}
		return s
	}
	for _, g := range groups {
		if len(names) > 0 && !slices.Contains(names, g.name) {
			continue
		}
		t.Run(g.name, func(t *testing.T) {
			for _, tc := range g.tests {
				t.Run(tc.name, func(t *testing.T) {
					if tc.raw != nil {
						tc.raw(t, mk)
						return
					}
					tc.fn(t, open(t, mk))
				})
			}
		})
	}
}

// store is the store under test, every role in one value (the suite
// tests them all, and together: a write of one role is seen by the reads
// of another).
type store struct {
	meta.Accounts
	meta.Sessions
	meta.Invites
	meta.AccessKeys
	meta.Limits
	meta.Buckets
	meta.Objects
	meta.Uploads
	meta.Stagings
	meta.Reclamation
	meta.Shares
	meta.Tus
	meta.EncryptionJobs
	meta.KeyGrants
	meta.Cluster
	meta.Lifecycles
	meta.CORSConfigs
	meta.ACLs
	meta.Policies
	meta.Scrubs
	close func() error
}

// Close closes the store.
func (s store) Close() error { return s.close() }

// test is one subtest: fn gets a fresh store that Run closes; raw manages
// its store itself.
type test struct {
	name string
	fn   func(t *testing.T, s store)
	raw  func(t *testing.T, newStore func(t *testing.T) store)
}

// open returns a fresh store, closed when the test ends.
func open(t *testing.T, newStore func(t *testing.T) store) store {
	t.Helper()
	s := newStore(t)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// baseTime is a timestamp with a sub-millisecond part that survives both
// nanosecond and microsecond storage.
var baseTime = time.Date(2025, 3, 14, 15, 9, 26, 535_897_000, time.UTC)

// ms is the precision every backend must keep for times.
const ms = time.Millisecond

// sameTime reports whether a and b are equal to the millisecond.
func sameTime(a, b time.Time) bool { return a.Truncate(ms).Equal(b.Truncate(ms)) }

func ok(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// wantCode fails unless err carries code want.
func wantCode(t *testing.T, err error, want errcode.Code, what string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: err = nil, want code %v", what, want)
	}
	if got := errcode.Of(err); got != want {
		t.Fatalf("%s: err = %v (code %v), want code %v", what, err, got, want)
	}
}

// addUser creates a user with id, email id@example.com, quota and a
// default private bucket named id.
func addUser(t *testing.T, s store, id string, quota int64) meta.User {
	t.Helper()
	u := meta.User{
		ID:           id,
		Email:        id + "@example.com",
		PasswordHash: "$argon2id$v=19$m=65536,t=1,p=4$c2FsdA$" + id,
		QuotaBytes:   quota,
		CreatedAt:    baseTime,
	}
	b := meta.Bucket{Name: id, OwnerID: id, Visibility: meta.Private, CreatedAt: baseTime}
	ok(t, s.CreateUser(t.Context(), u, b), "CreateUser "+id)
	return u
}

// addBucket creates a private bucket owned by owner.
func addBucket(t *testing.T, s store, name, owner string) {
	t.Helper()
	ok(t, s.CreateBucket(t.Context(), meta.Bucket{Name: name, OwnerID: owner, Visibility: meta.Private, CreatedAt: baseTime}), "CreateBucket "+name)
}

var seq atomic.Int64

// obj returns an object with unique ETag, SHA-256, checksum and blob key.
func obj(bucket, key string, size int64) meta.Object {
	n := seq.Add(1)
	return meta.Object{
		Bucket:      bucket,
		Key:         key,
		Size:        size,
		ETag:        fmt.Sprintf("%032x", n),
		SHA256:      fmt.Sprintf("%064x", n),
		ContentType: "application/octet-stream",
		BlobKey:     fmt.Sprintf("blob/%d", n),
		Checksum:    meta.Checksum{Algorithm: "CRC32C", Type: "FULL_OBJECT", Value: checksumValue(n, 4)},
		ModTime:     baseTime.Add(time.Duration(n) * time.Second),
	}
}

// checksumValue returns a unique base64 value of a checksum of size bytes.
func checksumValue(n int64, size int) string {
	b := make([]byte, size)
	for i := range b {
		b[i] = byte(n >> (8 * (i % 8)))
	}
	return base64.StdEncoding.EncodeToString(b)
}

// put stores objs in one PutObjects without conditions and returns the
// objects they replaced.
func put(t *testing.T, s store, objs ...meta.Object) []meta.Object {
	t.Helper()
	puts := make([]meta.Put, len(objs))
	for i, o := range objs {
		puts[i] = meta.Put{Object: o}
	}
	res, err := s.PutObjects(t.Context(), puts)
	ok(t, err, "PutObjects")
	if got, want := len(res), len(objs); got != want {
		t.Fatalf("PutObjects returned %d objects, want %d", got, want)
	}
	old := make([]meta.Object, len(res))
	for i, r := range res {
		old[i] = r.Replaced
	}
	return old
}

// diffObject describes how got differs from want, or returns "".
func diffObject(got, want meta.Object) string {
	var d string
	add := func(field string, g, w any) { d += fmt.Sprintf(" %s=%v (want %v)", field, g, w) }
	if got.Bucket != want.Bucket {
		add("Bucket", got.Bucket, want.Bucket)
	}
	if got.Key != want.Key {
		add("Key", got.Key, want.Key)
	}
	if got.Size != want.Size {
		add("Size", got.Size, want.Size)
	}
	if got.ETag != want.ETag {
		add("ETag", got.ETag, want.ETag)
	}
	if got.SHA256 != want.SHA256 {
		add("SHA256", got.SHA256, want.SHA256)
	}
	if got.ContentType != want.ContentType {
		add("ContentType", got.ContentType, want.ContentType)
	}
	if !maps.Equal(got.Metadata, want.Metadata) { // nil and empty are equal
		add("Metadata", got.Metadata, want.Metadata)
	}
	if got.BlobKey != want.BlobKey {
		add("BlobKey", got.BlobKey, want.BlobKey)
	}
	if !slices.Equal(got.Tags, want.Tags) { // nil and empty are equal
		add("Tags", got.Tags, want.Tags)
	}
	if got.Owner != want.Owner || !slices.Equal(got.ACL, want.ACL) {
		add("Owner/ACL", fmt.Sprint(got.Owner, got.ACL), fmt.Sprint(want.Owner, want.ACL))
	}
	// Nil Parts is a single-blob object (BlobKeys depends on it).
	if (got.Parts == nil) != (want.Parts == nil) || !slices.EqualFunc(got.Parts, want.Parts, samePart) {
		add("Parts", fmtParts(got.Parts), fmtParts(want.Parts))
	}
	if got.Checksum != want.Checksum {
		add("Checksum", got.Checksum, want.Checksum)
	}
	if (got.CRC32C == nil) != (want.CRC32C == nil) || !bytes.Equal(got.CRC32C, want.CRC32C) {
		add("CRC32C", got.CRC32C, want.CRC32C)
	}
	if !sameTime(got.ModTime, want.ModTime) {
		add("ModTime", got.ModTime, want.ModTime)
	}
	if !bytes.Equal(got.Encryption, want.Encryption) {
		add("Encryption", got.Encryption, want.Encryption)
	}
	if got.EncryptionKEK != want.EncryptionKEK {
		add("EncryptionKEK", got.EncryptionKEK, want.EncryptionKEK)
	}
	if got.Retention.Mode != want.Retention.Mode || !sameTime(got.Retention.Until, want.Retention.Until) {
		add("Retention", got.Retention, want.Retention)
	}
	if got.LegalHold != want.LegalHold {
		add("LegalHold", got.LegalHold, want.LegalHold)
	}
	return d
}

// samePart reports whether two parts are equal (nil and empty
// Encryption alike: both mean plaintext).
func samePart(a, b meta.ObjectPart) bool {
	return a.BlobKey == b.BlobKey && a.Size == b.Size && a.ETag == b.ETag && a.Checksum == b.Checksum &&
		bytes.Equal(a.Encryption, b.Encryption) && a.EncryptionKEK == b.EncryptionKEK
}

// fmtParts formats parts, telling nil from empty.
func fmtParts(ps []meta.ObjectPart) string {
	if ps == nil {
		return "nil"
	}
	return fmt.Sprintf("%+v", ps)
}

func sameObject(t *testing.T, got, want meta.Object, what string) {
	t.Helper()
	if d := diffObject(got, want); d != "" {
		t.Errorf("%s differs:%s", what, d)
	}
}

// wantObject fails unless bucket/key holds want.
func wantObject(t *testing.T, s store, want meta.Object) {
	t.Helper()
	got, err := s.GetObject(t.Context(), want.Bucket, want.Key)
	ok(t, err, fmt.Sprintf("GetObject %s/%s", want.Bucket, want.Key))
	sameObject(t, got, want, fmt.Sprintf("GetObject %s/%s", want.Bucket, want.Key))
}

// wantMissing fails unless bucket/key is NotFound.
func wantMissing(t *testing.T, s store, bucket, key string) {
	t.Helper()
	_, err := s.GetObject(t.Context(), bucket, key)
	wantCode(t, err, errcode.NotFound, fmt.Sprintf("GetObject %s/%s", bucket, key))
}

// wantUsage fails unless the user's usage is want.
func wantUsage(t *testing.T, s store, userID string, want int64) {
	t.Helper()
	u, err := s.GetUser(t.Context(), userID)
	ok(t, err, "GetUser "+userID)
	if got := u.UsageBytes; got != want {
		t.Errorf("usage of %s = %d, want %d", userID, got, want)
	}
}

// garbage returns the blob keys of the whole garbage queue, oldest first.
func garbage(t *testing.T, s store) []string {
	t.Helper()
	gs, err := s.ListGarbage(t.Context(), time.Now().Add(time.Hour), 100000)
	ok(t, err, "ListGarbage")
	keys := make([]string, 0, len(gs))
	for _, g := range gs {
		keys = append(keys, g.BlobKey)
	}
	return keys
}

// wantGarbageSet fails unless the garbage queue holds exactly want, in
// any order (for blobs enqueued together).
func wantGarbageSet(t *testing.T, s store, want ...string) {
	t.Helper()
	got := garbage(t, s)
	slices.Sort(got)
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		t.Errorf("garbage = %q, want %q (in any order)", got, want)
	}
}

// wantReferenced fails unless ReferencedBlobs reports exactly the keys of
// want that are true, among keys.
func wantReferenced(t *testing.T, s store, what string, keys []string, want map[string]bool) {
	t.Helper()
	got, err := s.ReferencedBlobs(t.Context(), keys)
	ok(t, err, "ReferencedBlobs")
	for _, k := range keys {
		if got[k] != want[k] {
			t.Errorf("%s: ReferencedBlobs[%q] = %v, want %v", what, k, got[k], want[k])
		}
	}
}

// wantGarbage fails unless the garbage queue holds exactly want, in order.
func wantGarbage(t *testing.T, s store, want ...string) {
	t.Helper()
	got := garbage(t, s)
	if fmt.Sprint(got) != fmt.Sprint(want) || len(got) != len(want) {
		t.Errorf("garbage = %q, want %q", got, want)
	}
}

// ctxCanceled returns a context that is already cancelled.
func ctxCanceled(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	return ctx
}
