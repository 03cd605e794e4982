package metatest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

var userTests = []test{
	{name: "CreateAndGet", fn: testCreateUser},
	{name: "DuplicateEmail", fn: testDuplicateEmail},
	{name: "DuplicateBucket", fn: testDuplicateDefaultBucket},
	{name: "NotFound", fn: testUserNotFound},
	{name: "SetQuota", fn: testSetQuota},
	{name: "UpdateUser", fn: testUpdateUser},
}

func testCreateUser(t *testing.T, s store) {
	ctx := t.Context()
	u := meta.User{
		ID:           "u1",
		Email:        "alice@example.com",
		PasswordHash: "$argon2id$v=19$m=65536,t=1,p=4$c2FsdA$aGFzaA",
		QuotaBytes:   1 << 30,
		Disabled:     true,
		Admin:        true,
		CreatedAt:    baseTime,
	}
	b := meta.Bucket{Name: "alice", OwnerID: "u1", Visibility: meta.PublicRead, CreatedAt: baseTime.Add(time.Second)}
	ok(t, s.CreateUser(ctx, u, b), "CreateUser")

	for _, get := range []struct {
		name string
		fn   func() (meta.User, error)
	}{
		{"GetUser", func() (meta.User, error) { return s.GetUser(ctx, "u1") }},
		{"GetUserByEmail", func() (meta.User, error) { return s.GetUserByEmail(ctx, "alice@example.com") }},
	} {
		got, err := get.fn()
		ok(t, err, get.name)
		if got.ID != u.ID || got.Email != u.Email || got.PasswordHash != u.PasswordHash ||
			got.QuotaBytes != u.QuotaBytes || got.Disabled != u.Disabled || got.Admin != u.Admin ||
			!got.SessionsAfter.IsZero() || !sameTime(got.CreatedAt, u.CreatedAt) {
			t.Errorf("%s = %+v, want %+v", get.name, got, u)
		}
		if got.UsageBytes != 0 {
			t.Errorf("%s: UsageBytes = %d, want 0", get.name, got.UsageBytes)
		}
	}

	gotB, err := s.GetBucket(ctx, "alice")
	ok(t, err, "GetBucket of the default bucket")
	if gotB.Name != b.Name || gotB.OwnerID != b.OwnerID || gotB.Visibility != b.Visibility || !sameTime(gotB.CreatedAt, b.CreatedAt) {
		t.Errorf("GetBucket = %+v, want %+v", gotB, b)
	}
	bs, err := s.ListBuckets(ctx, "u1")
	ok(t, err, "ListBuckets")
	if got, want := len(bs), 1; got != want {
		t.Fatalf("ListBuckets returned %d buckets, want %d", got, want)
	}
	if got, want := bs[0].Name, "alice"; got != want {
		t.Errorf("ListBuckets[0].Name = %q, want %q", got, want)
	}
}

func testDuplicateEmail(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	u := meta.User{ID: "alice2", Email: "alice@example.com", PasswordHash: "x", CreatedAt: baseTime}
	b := meta.Bucket{Name: "alice2", OwnerID: "alice2", Visibility: meta.Private}
	wantCode(t, s.CreateUser(ctx, u, b), errcode.AlreadyExists, "CreateUser with a taken email")

	_, err := s.GetUser(ctx, "alice2")
	wantCode(t, err, errcode.NotFound, "GetUser of the rejected user")
	_, err = s.GetBucket(ctx, "alice2")
	wantCode(t, err, errcode.NotFound, "GetBucket of the rejected user's bucket")
	got, err := s.GetUserByEmail(ctx, "alice@example.com")
	ok(t, err, "GetUserByEmail")
	if got.ID != "alice" {
		t.Errorf("the email now belongs to %q, want %q", got.ID, "alice")
	}
}

func testDuplicateDefaultBucket(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	u := meta.User{ID: "bob", Email: "bob@example.com", PasswordHash: "x", CreatedAt: baseTime}
	b := meta.Bucket{Name: "alice", OwnerID: "bob", Visibility: meta.Private}
	wantCode(t, s.CreateUser(ctx, u, b), errcode.AlreadyExists, "CreateUser with a taken bucket name")

	_, err := s.GetUser(ctx, "bob")
	wantCode(t, err, errcode.NotFound, "GetUser of the rejected user")
	_, err = s.GetUserByEmail(ctx, "bob@example.com")
	wantCode(t, err, errcode.NotFound, "GetUserByEmail of the rejected user")
	got, err := s.GetBucket(ctx, "alice")
	ok(t, err, "GetBucket")
	if got.OwnerID != "alice" {
		t.Errorf("bucket owner = %q, want %q", got.OwnerID, "alice")
	}
	// The email is still free.
	b.Name = "bob"
	ok(t, s.CreateUser(ctx, u, b), "CreateUser after the failed attempt")
}

func testUserNotFound(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	_, err := s.GetUser(ctx, "nobody")
	wantCode(t, err, errcode.NotFound, "GetUser")
	_, err = s.GetUserByEmail(ctx, "nobody@example.com")
	wantCode(t, err, errcode.NotFound, "GetUserByEmail")
}

func testSetQuota(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	addUser(t, s, "bob", 7)
	for _, q := range []int64{1000, 0, 5 << 40} {
		ok(t, s.SetQuota(ctx, "alice", q), fmt.Sprint("SetQuota ", q))
		u, err := s.GetUser(ctx, "alice")
		ok(t, err, "GetUser")
		if got, want := u.QuotaBytes, q; got != want {
			t.Errorf("QuotaBytes = %d, want %d", got, want)
		}
	}
	u, err := s.GetUser(ctx, "bob")
	ok(t, err, "GetUser bob")
	if got, want := u.QuotaBytes, int64(7); got != want {
		t.Errorf("bob's QuotaBytes = %d, want %d (SetQuota changed another user)", got, want)
	}
	wantCode(t, s.SetQuota(ctx, "nobody", 10), errcode.NotFound, "SetQuota of a missing user")
}

func testUpdateUser(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 5)
	addUser(t, s, "bob", 7)
	yes, no, hash, quota, after := true, false, "$argon2id$new", int64(99), baseTime.Add(time.Hour)
	got, err := s.UpdateUser(ctx, "alice", meta.UserUpdate{Admin: &yes, Disabled: &yes, PasswordHash: &hash, QuotaBytes: &quota, SessionsAfter: &after})
	ok(t, err, "UpdateUser all fields")
	if !got.Admin || !got.Disabled || got.PasswordHash != hash || got.QuotaBytes != quota || !sameTime(got.SessionsAfter, after) {
		t.Errorf("UpdateUser returned %+v", got)
	}
	again, err := s.GetUser(ctx, "alice")
	ok(t, err, "GetUser")
	if again.Admin != got.Admin || again.Disabled != got.Disabled || again.PasswordHash != got.PasswordHash ||
		again.QuotaBytes != got.QuotaBytes || !sameTime(again.SessionsAfter, after) {
		t.Errorf("GetUser after UpdateUser = %+v, want %+v", again, got)
	}
	got, err = s.UpdateUser(ctx, "alice", meta.UserUpdate{Disabled: &no})
	ok(t, err, "UpdateUser one field")
	if got.Disabled || !got.Admin || got.QuotaBytes != quota {
		t.Errorf("UpdateUser(Disabled=false) = %+v; only Disabled may change", got)
	}
	b, err := s.GetUser(ctx, "bob")
	ok(t, err, "GetUser bob")
	if b.Admin || b.Disabled || b.QuotaBytes != 7 {
		t.Errorf("bob = %+v: UpdateUser changed another user", b)
	}
	neg := int64(-1)
	for name, c := range map[string]struct {
		id   string
		upd  meta.UserUpdate
		code errcode.Code
	}{
		"empty":          {"alice", meta.UserUpdate{}, errcode.InvalidArgument},
		"negative quota": {"alice", meta.UserUpdate{QuotaBytes: &neg}, errcode.InvalidArgument},
		"missing user":   {"nobody", meta.UserUpdate{Admin: &yes}, errcode.NotFound},
	} {
		_, err := s.UpdateUser(ctx, c.id, c.upd)
		wantCode(t, err, c.code, "UpdateUser "+name)
	}
}

var tokenTests = []test{
	{name: "Rotate", fn: testRotate},
	{name: "ReuseRevokesFamily", fn: testReuse},
	{name: "Rejected", fn: testRotateRejected},
	{name: "ConcurrentRotations", fn: testConcurrentRotations},
	{name: "RevokeFamily", fn: testRevokeFamily},
	{name: "DeleteExpired", fn: testDeleteExpired},
	{name: "DuplicateHash", fn: testDuplicateToken},
}

// token returns a token of alice's family fam, valid for a day after baseTime.
func token(hash, fam string) meta.RefreshToken {
	return meta.RefreshToken{Hash: hash, UserID: "alice", Family: fam, CreatedAt: baseTime, ExpiresAt: baseTime.Add(24 * time.Hour)}
}

// now is the clock of the rotation tests: an hour into the tokens' life.
var now = baseTime.Add(time.Hour)

func next(hash string) meta.RefreshToken {
	return meta.RefreshToken{Hash: hash, CreatedAt: now, ExpiresAt: now.Add(24 * time.Hour)}
}

func testRotate(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	addUser(t, s, "bob", 0)
	ok(t, s.CreateRefreshToken(ctx, token("h1", "f1")), "CreateRefreshToken")

	// UserID and Family of next are ignored: they come from the old token.
	n := next("h2")
	n.UserID, n.Family = "bob", "other"
	got, err := s.RotateRefreshToken(ctx, "h1", n, now)
	ok(t, err, "RotateRefreshToken h1")
	if got.Hash != "h2" || got.UserID != "alice" || got.Family != "f1" || got.Used || got.Revoked ||
		!sameTime(got.ExpiresAt, n.ExpiresAt) || !sameTime(got.CreatedAt, n.CreatedAt) {
		t.Errorf("RotateRefreshToken = %+v, want hash h2, user alice, family f1, unused, expiring %v", got, n.ExpiresAt)
	}
	// The chain goes on from the new token.
	got, err = s.RotateRefreshToken(ctx, "h2", next("h3"), now.Add(time.Minute))
	ok(t, err, "RotateRefreshToken h2")
	if got.UserID != "alice" || got.Family != "f1" {
		t.Errorf("second rotation = %+v, want user alice, family f1", got)
	}
}

func testReuse(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	ok(t, s.CreateRefreshToken(ctx, token("h1", "f1")), "CreateRefreshToken")
	ok(t, s.CreateRefreshToken(ctx, token("o1", "other")), "CreateRefreshToken other family")
	_, err := s.RotateRefreshToken(ctx, "h1", next("h2"), now)
	ok(t, err, "rotate h1")
	_, err = s.RotateRefreshToken(ctx, "h2", next("h3"), now)
	ok(t, err, "rotate h2")

	// h1 again: reuse. It fails, stores nothing, and revokes the family.
	_, err = s.RotateRefreshToken(ctx, "h1", next("x"), now)
	wantCode(t, err, errcode.Unauthenticated, "rotating a used token")
	_, err = s.RotateRefreshToken(ctx, "h3", next("h4"), now)
	wantCode(t, err, errcode.Unauthenticated, "rotating the newest token of a family revoked by reuse")
	_, err = s.RotateRefreshToken(ctx, "x", next("y"), now)
	wantCode(t, err, errcode.Unauthenticated, "rotating the token the reuse attempt offered")

	// Other families are untouched.
	_, err = s.RotateRefreshToken(ctx, "o1", next("o2"), now)
	ok(t, err, "rotating a token of another family")
}

func testRotateRejected(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	expired := token("expired", "f1")
	expired.ExpiresAt = now.Add(-time.Second)
	ok(t, s.CreateRefreshToken(ctx, expired), "CreateRefreshToken expired")
	ok(t, s.CreateRefreshToken(ctx, token("revoked", "f2")), "CreateRefreshToken")
	ok(t, s.RevokeRefreshFamily(ctx, "revoked"), "RevokeRefreshFamily")
	ok(t, s.CreateRefreshToken(ctx, token("late", "f3")), "CreateRefreshToken")

	for _, tc := range []struct {
		name string
		hash string
		now  time.Time
	}{
		{"unknown", "nope", now},
		{"expired", "expired", now},
		{"revoked", "revoked", now},
		{"expired at now", "late", baseTime.Add(24 * time.Hour)},
		{"past expiry", "late", baseTime.Add(48 * time.Hour)},
	} {
		_, err := s.RotateRefreshToken(ctx, tc.hash, next("n-"+tc.name), tc.now)
		wantCode(t, err, errcode.Unauthenticated, "rotating a token: "+tc.name)
		// Nothing was stored under the offered hash.
		_, err = s.RotateRefreshToken(ctx, "n-"+tc.name, next("z-"+tc.name), now)
		wantCode(t, err, errcode.Unauthenticated, "rotating the token a rejected rotation offered")
	}
	// A rejected late rotation did not consume the token.
	_, err := s.RotateRefreshToken(ctx, "late", next("late2"), now)
	ok(t, err, "rotating the token before its expiry")
}

func testConcurrentRotations(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	ok(t, s.CreateRefreshToken(ctx, token("h1", "f1")), "CreateRefreshToken")

	const n = 20
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			_, errs[i] = s.RotateRefreshToken(ctx, "h1", next(fmt.Sprintf("n%d", i)), now)
		})
	}
	close(start)
	wg.Wait()

	winners := 0
	for i, err := range errs {
		switch {
		case err == nil:
			winners++
		case errcode.Of(err) != errcode.Unauthenticated:
			t.Errorf("rotation %d: err = %v (code %v), want nil or unauthenticated", i, err, errcode.Of(err))
		}
	}
	if winners != 1 {
		t.Fatalf("%d of %d concurrent rotations succeeded, want exactly 1", winners, n)
	}
	// The losers presented a used token: reuse, so the family is revoked,
	// the winner's new token included.
	for i, err := range errs {
		if err == nil {
			_, err := s.RotateRefreshToken(ctx, fmt.Sprintf("n%d", i), next("after"), now)
			wantCode(t, err, errcode.Unauthenticated, "rotating the winner's token after the reuse")
		}
	}
}

func testRevokeFamily(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	ok(t, s.CreateRefreshToken(ctx, token("h1", "f1")), "CreateRefreshToken")
	ok(t, s.CreateRefreshToken(ctx, token("o1", "f2")), "CreateRefreshToken")
	_, err := s.RotateRefreshToken(ctx, "h1", next("h2"), now)
	ok(t, err, "rotate")

	// Revoking through an old (used) member revokes the newest one too.
	ok(t, s.RevokeRefreshFamily(ctx, "h1"), "RevokeRefreshFamily")
	_, err = s.RotateRefreshToken(ctx, "h2", next("h3"), now)
	wantCode(t, err, errcode.Unauthenticated, "rotating a token of a revoked family")
	_, err = s.RotateRefreshToken(ctx, "o1", next("o2"), now)
	ok(t, err, "rotating a token of another family")

	wantCode(t, s.RevokeRefreshFamily(ctx, "nope"), errcode.NotFound, "RevokeRefreshFamily of an unknown hash")
}

func testDeleteExpired(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	cut := baseTime.Add(10 * time.Hour)
	for i, exp := range []time.Duration{-time.Hour, time.Hour, 9 * time.Hour, 11 * time.Hour, 48 * time.Hour} {
		tok := token(fmt.Sprintf("t%d", i), fmt.Sprintf("f%d", i))
		tok.ExpiresAt = baseTime.Add(exp)
		ok(t, s.CreateRefreshToken(ctx, tok), "CreateRefreshToken")
	}
	n, err := s.DeleteExpiredRefreshTokens(ctx, cut)
	ok(t, err, "DeleteExpiredRefreshTokens")
	if got, want := n, 3; got != want {
		t.Errorf("DeleteExpiredRefreshTokens = %d, want %d", got, want)
	}
	n, err = s.DeleteExpiredRefreshTokens(ctx, cut)
	ok(t, err, "DeleteExpiredRefreshTokens again")
	if got, want := n, 0; got != want {
		t.Errorf("second DeleteExpiredRefreshTokens = %d, want %d", got, want)
	}
	// Deleted tokens are unknown; the others remain.
	wantCode(t, s.RevokeRefreshFamily(ctx, "t2"), errcode.NotFound, "RevokeRefreshFamily of a deleted token")
	ok(t, s.RevokeRefreshFamily(ctx, "t3"), "RevokeRefreshFamily of a kept token")
	_, err = s.RotateRefreshToken(ctx, "t4", next("t4b"), baseTime)
	ok(t, err, "rotating a kept token")
}

func testDuplicateToken(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	ok(t, s.CreateRefreshToken(ctx, token("h1", "f1")), "CreateRefreshToken")
	ok(t, s.CreateRefreshToken(ctx, token("h2", "f2")), "CreateRefreshToken")
	wantCode(t, s.CreateRefreshToken(ctx, token("h1", "f3")), errcode.AlreadyExists, "CreateRefreshToken with a taken hash")

	// A rotation onto a taken hash fails and consumes nothing.
	_, err := s.RotateRefreshToken(ctx, "h1", next("h2"), now)
	wantCode(t, err, errcode.AlreadyExists, "RotateRefreshToken onto a taken hash")
	_, err = s.RotateRefreshToken(ctx, "h1", next("h3"), now)
	ok(t, err, "RotateRefreshToken after the failed rotation")
}
