package metatest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// The account lifecycle: listing users, revoking sessions, deleting a
// user with and without its data, totals.
var accountTests = []test{
	{name: "ListUsers", fn: testListUsers},
	{name: "RevokeRefreshTokens", fn: testRevokeRefreshTokens},
	{name: "RotateDisabledOrCutOff", fn: testRotateDisabledOrCutOff},
	{name: "DeleteUserEmpty", fn: testDeleteUserEmpty},
	{name: "DeleteUserRefused", fn: testDeleteUserRefused},
	{name: "DeleteUserPurge", fn: testDeleteUserPurge},
	{name: "Counts", fn: testCounts},
}

func emails(us []meta.User) []string {
	out := make([]string, len(us))
	for i, u := range us {
		out[i] = u.Email
	}
	return out
}

func testListUsers(t *testing.T, s store) {
	ctx := t.Context()
	for _, id := range []string{"carol", "alice", "bob", "a_b", "a%b", "dave"} {
		addUser(t, s, id, 0)
	}
	for _, c := range []struct {
		name string
		opts meta.ListUsersOptions
		want []string
		more bool
	}{
		{"all", meta.ListUsersOptions{}, []string{"a%b", "a_b", "alice", "bob", "carol", "dave"}, false},
		{"first page", meta.ListUsersOptions{Limit: 2}, []string{"a%b", "a_b"}, true},
		{"next page", meta.ListUsersOptions{Limit: 2, After: "a_b@example.com"}, []string{"alice", "bob"}, true},
		{"last page exactly", meta.ListUsersOptions{Limit: 2, After: "bob@example.com"}, []string{"carol", "dave"}, false},
		{"query", meta.ListUsersOptions{Query: "AL"}, []string{"alice"}, false},
		{"query percent is literal", meta.ListUsersOptions{Query: "a%"}, []string{"a%b"}, false},
		{"query underscore is literal", meta.ListUsersOptions{Query: "a_"}, []string{"a_b"}, false},
		{"query and after", meta.ListUsersOptions{Query: "example", After: "carol@example.com"}, []string{"dave"}, false},
		{"no match", meta.ListUsersOptions{Query: "zzz"}, nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			us, more, err := s.ListUsers(ctx, c.opts)
			ok(t, err, "ListUsers")
			var want []string
			for _, id := range c.want {
				want = append(want, id+"@example.com")
			}
			if got := emails(us); !slices.Equal(got, want) || more != c.more {
				t.Errorf("ListUsers(%+v) = %q, more %v; want %q, more %v", c.opts, got, more, want, c.more)
			}
		})
	}
	us, _, err := s.ListUsers(ctx, meta.ListUsersOptions{Query: "alice"})
	ok(t, err, "ListUsers")
	if len(us) != 1 || us[0].ID != "alice" || us[0].PasswordHash == "" || !sameTime(us[0].CreatedAt, baseTime) {
		t.Errorf("ListUsers returned %+v", us)
	}
	_, _, err = s.ListUsers(ctx, meta.ListUsersOptions{Limit: -1})
	wantCode(t, err, errcode.InvalidArgument, "ListUsers with a negative limit")
}

func testRevokeRefreshTokens(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	addUser(t, s, "bob", 0)
	ok(t, s.CreateRefreshToken(ctx, token("a1", "fa")), "CreateRefreshToken a1")
	ok(t, s.CreateRefreshToken(ctx, token("a2", "fb")), "CreateRefreshToken a2")
	b := token("b1", "fc")
	b.UserID = "bob"
	ok(t, s.CreateRefreshToken(ctx, b), "CreateRefreshToken b1")
	// Without RevokeRefreshTokens the tokens live on.
	yes := true
	_, err := s.UpdateUser(ctx, "alice", meta.UserUpdate{Admin: &yes})
	ok(t, err, "UpdateUser")
	_, err = s.RotateRefreshToken(ctx, "a1", next("a1-next"), now)
	ok(t, err, "rotating after an update that revokes nothing")
	// With it, every token of alice is revoked, and none of bob's.
	_, err = s.UpdateUser(ctx, "alice", meta.UserUpdate{Admin: &yes, RevokeRefreshTokens: true})
	ok(t, err, "UpdateUser RevokeRefreshTokens")
	for _, h := range []string{"a1-next", "a2"} {
		_, err := s.RotateRefreshToken(ctx, h, next(h+"-x"), now)
		wantCode(t, err, errcode.Unauthenticated, "rotating "+h+" after RevokeRefreshTokens")
	}
	_, err = s.RotateRefreshToken(ctx, "b1", next("b1-next"), now)
	ok(t, err, "rotating another user's token")
	// Revoking alone is no update.
	_, err = s.UpdateUser(ctx, "alice", meta.UserUpdate{RevokeRefreshTokens: true})
	wantCode(t, err, errcode.InvalidArgument, "UpdateUser with only RevokeRefreshTokens")
}

func testRotateDisabledOrCutOff(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	yes, no := true, false
	ok(t, s.CreateRefreshToken(ctx, token("t1", "f1")), "CreateRefreshToken")
	_, err := s.UpdateUser(ctx, "alice", meta.UserUpdate{Disabled: &yes})
	ok(t, err, "disable")
	_, err = s.RotateRefreshToken(ctx, "t1", next("t1-next"), now)
	wantCode(t, err, errcode.Unauthenticated, "rotating a token of a disabled user")
	_, err = s.UpdateUser(ctx, "alice", meta.UserUpdate{Disabled: &no})
	ok(t, err, "enable")
	_, err = s.RotateRefreshToken(ctx, "t1", next("t1-next"), now)
	ok(t, err, "rotating once enabled again (nothing revoked it)")

	// A token created before SessionsAfter is refused; one created at or
	// after it is not.
	ok(t, s.CreateRefreshToken(ctx, token("t2", "f2")), "CreateRefreshToken t2")
	t3 := token("t3", "f3")
	t3.CreatedAt = baseTime.Add(2 * time.Second)
	ok(t, s.CreateRefreshToken(ctx, t3), "CreateRefreshToken t3")
	cut := baseTime.Add(time.Second)
	_, err = s.UpdateUser(ctx, "alice", meta.UserUpdate{SessionsAfter: &cut})
	ok(t, err, "UpdateUser SessionsAfter")
	_, err = s.RotateRefreshToken(ctx, "t2", next("t2-next"), now)
	wantCode(t, err, errcode.Unauthenticated, "rotating a token created before SessionsAfter")
	_, err = s.RotateRefreshToken(ctx, "t3", next("t3-next"), now)
	ok(t, err, "rotating a token created after SessionsAfter")
}

// wantUserGone fails unless the user, its buckets and its keys are gone.
func wantUserGone(t *testing.T, s store, id string, buckets []string, keys []string) {
	t.Helper()
	ctx := t.Context()
	_, err := s.GetUser(ctx, id)
	wantCode(t, err, errcode.NotFound, "GetUser of a deleted user")
	_, err = s.GetUserByEmail(ctx, id+"@example.com")
	wantCode(t, err, errcode.NotFound, "GetUserByEmail of a deleted user")
	for _, b := range buckets {
		_, err := s.GetBucket(ctx, b)
		wantCode(t, err, errcode.NotFound, "GetBucket "+b+" of a deleted user")
	}
	for _, k := range keys {
		_, err := s.GetAccessKey(ctx, k)
		wantCode(t, err, errcode.NotFound, "GetAccessKey "+k+" of a deleted user")
	}
	bs, err := s.ListBuckets(ctx, id)
	ok(t, err, "ListBuckets")
	if len(bs) != 0 {
		t.Errorf("a deleted user still owns %d buckets", len(bs))
	}
}

func testDeleteUserEmpty(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	addUser(t, s, "bob", 0)
	addBucket(t, s, "alice-empty", "alice")
	put(t, s, obj("bob", "keep", 10))
	ok(t, s.CreateAccessKey(ctx, meta.AccessKey{ID: "AK1", UserID: "alice", SecretEnc: []byte("x"), CreatedAt: baseTime}), "CreateAccessKey")
	ok(t, s.CreateRefreshToken(ctx, token("t1", "f1")), "CreateRefreshToken")
	res, err := s.DeleteUser(ctx, "alice", false)
	ok(t, err, "DeleteUser without data")
	if res.Buckets != 2 || res.Objects != 0 || res.Uploads != 0 || len(res.BackendUploads) != 0 {
		t.Errorf("DeleteUser = %+v, want 2 buckets and nothing else", res)
	}
	wantUserGone(t, s, "alice", []string{"alice", "alice-empty"}, []string{"AK1"})
	_, err = s.RotateRefreshToken(ctx, "t1", next("t1-next"), now)
	wantCode(t, err, errcode.Unauthenticated, "rotating a deleted user's token")
	_, err = s.DeleteUser(ctx, "alice", false)
	wantCode(t, err, errcode.NotFound, "DeleteUser again")
	_, err = s.DeleteUser(ctx, "nobody", true)
	wantCode(t, err, errcode.NotFound, "DeleteUser of an unknown user")
	// The email and the bucket names are free again; bob is untouched.
	addUser(t, s, "alice", 0)
	addBucket(t, s, "alice-empty", "bob")
	wantObject(t, s, obj0(t, s, "bob", "keep"))
	wantGarbage(t, s)
}

// obj0 returns the object at bucket/key.
func obj0(t *testing.T, s store, bucket, key string) meta.Object {
	t.Helper()
	o, err := s.GetObject(t.Context(), bucket, key)
	ok(t, err, "GetObject")
	return o
}

func testDeleteUserRefused(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	addBucket(t, s, "alice-b", "alice")
	addBucket(t, s, "alice-c", "alice")
	addBucket(t, s, "alice-empty", "alice")
	o1, o2 := obj("alice-b", "one", 5), obj("alice-b", "two", 7)
	put(t, s, o1, o2)
	up := addUpload(t, s, "alice-c", "big")
	_, err := s.DeleteUser(ctx, "alice", false)
	wantCode(t, err, errcode.Conflict, "DeleteUser of a user owning data")
	e := errcode.As(err)
	if e.Detail["reason"] != "user_owns_data" || fmt.Sprint(e.Detail["objects"]) != "2" || fmt.Sprint(e.Detail["uploads"]) != "1" ||
		fmt.Sprint(e.Detail["buckets"]) != "[alice-b alice-c]" {
		t.Errorf("Conflict detail = %v", e.Detail)
	}
	// Nothing changed.
	u, err := s.GetUser(ctx, "alice")
	ok(t, err, "GetUser after a refused delete")
	if u.UsageBytes != 12 {
		t.Errorf("usage = %d, want 12", u.UsageBytes)
	}
	for _, b := range []string{"alice", "alice-b", "alice-c", "alice-empty"} {
		_, err := s.GetBucket(ctx, b)
		ok(t, err, "GetBucket "+b+" after a refused delete")
	}
	wantObject(t, s, o1)
	_, err = s.GetUpload(ctx, up.ID)
	ok(t, err, "GetUpload after a refused delete")
	// An upload in progress alone refuses it too.
	_, err = s.DeleteObject(ctx, "alice-b", "one", meta.Cond{})
	ok(t, err, "DeleteObject")
	_, err = s.DeleteObject(ctx, "alice-b", "two", meta.Cond{})
	ok(t, err, "DeleteObject")
	_, err = s.DeleteUser(ctx, "alice", false)
	wantCode(t, err, errcode.Conflict, "DeleteUser of a user with an upload in progress")
	ok(t, s.AbortUpload(ctx, up.ID), "AbortUpload")
	_, err = s.DeleteUser(ctx, "alice", false)
	ok(t, err, "DeleteUser once empty")
	wantUserGone(t, s, "alice", []string{"alice", "alice-b", "alice-c", "alice-empty"}, nil)
}

func testDeleteUserPurge(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	addUser(t, s, "bob", 0)
	addBucket(t, s, "alice-b", "alice")
	single := obj("alice", "single", 10)
	inline := obj("alice", "inline", 3)
	inline.BlobKey, inline.Inline = "", []byte("abc")
	multi := obj("alice-b", "multi", 9)
	multi.BlobKey = ""
	multi.Parts = []meta.ObjectPart{{BlobKey: "mp/1", Size: 4, ETag: "e1"}, {BlobKey: "mp/2", Size: 5, ETag: "e2"}}
	put(t, s, single, inline, multi)
	bobs := obj("bob", "bobs", 4)
	put(t, s, bobs)
	up := addUpload(t, s, "alice-b", "upload")
	_, err := s.PutPart(ctx, meta.Part{UploadID: up.ID, Number: 1, Size: 6, ETag: "p1", BlobKey: "part/1", ModTime: baseTime})
	ok(t, err, "PutPart")
	backend := newUpload("alice", "direct")
	backend.BlobKey, backend.BackendUploadID = "assembled/1", "backend-42"
	ok(t, s.CreateUpload(ctx, backend), "CreateUpload (backend)")
	_, _, err = s.Stage(ctx, meta.Staging{BlobKey: "staged/1", OwnerID: "alice", Bytes: 100, ExpiresAt: time.Now().Add(time.Hour)}, 0)
	ok(t, err, "Stage")
	ok(t, s.CreateAccessKey(ctx, meta.AccessKey{ID: "AK1", UserID: "alice", SecretEnc: []byte("x"), CreatedAt: baseTime}), "CreateAccessKey")

	res, err := s.DeleteUser(ctx, "alice", true)
	ok(t, err, "DeleteUser with purge")
	if res.Buckets != 2 || res.Objects != 3 || res.Uploads != 2 {
		t.Errorf("DeleteUser = %+v, want 2 buckets, 3 objects, 2 uploads", res)
	}
	if len(res.BackendUploads) != 1 || res.BackendUploads[0].ID != backend.ID || res.BackendUploads[0].BackendUploadID != "backend-42" ||
		res.BackendUploads[0].BlobKey != "assembled/1" || res.BackendUploads[0].Bucket != "alice" {
		t.Errorf("BackendUploads = %+v", res.BackendUploads)
	}
	wantUserGone(t, s, "alice", []string{"alice", "alice-b"}, []string{"AK1"})
	for _, k := range [][2]string{{"alice", "single"}, {"alice", "inline"}, {"alice-b", "multi"}} {
		wantMissing(t, s, k[0], k[1])
	}
	_, err = s.GetUpload(ctx, up.ID)
	wantCode(t, err, errcode.NotFound, "GetUpload of a purged upload")
	// Every blob is queued; nothing points at them any more, so the
	// janitor's claim returns them all.
	blobs := []string{single.BlobKey, "mp/1", "mp/2", "part/1", "assembled/1", "staged/1"}
	wantGarbageSet(t, s, blobs...)
	gs, err := s.ClaimGarbage(ctx, time.Now().Add(time.Hour), time.Now(), 100)
	ok(t, err, "ClaimGarbage")
	if got := len(gs); got != len(blobs) {
		t.Errorf("ClaimGarbage returned %d blobs, want %d", got, len(blobs))
	}
	// Bob is untouched.
	wantObject(t, s, bobs)
	wantUsage(t, s, "bob", 4)
}

func testCounts(t *testing.T, s store) {
	ctx := t.Context()
	c, err := s.Counts(ctx)
	ok(t, err, "Counts of an empty store")
	if c != (meta.Counts{}) {
		t.Errorf("Counts of an empty store = %+v", c)
	}
	addUser(t, s, "alice", 0)
	addUser(t, s, "bob", 0)
	addBucket(t, s, "alice-b", "alice")
	put(t, s, obj("alice", "a", 10), obj("alice-b", "b", 20), obj("bob", "c", 5))
	c, err = s.Counts(ctx)
	ok(t, err, "Counts")
	if want := (meta.Counts{Users: 2, Buckets: 3, Objects: 3, Bytes: 35}); c != want {
		t.Errorf("Counts = %+v, want %+v", c, want)
	}
}
