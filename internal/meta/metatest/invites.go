package metatest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

var inviteTests = []test{
	{name: "RoundTrip", fn: testInviteRoundTrip},
	{name: "CreateRejected", fn: testInviteCreateRejected},
	{name: "Redeem", fn: testInviteRedeem},
	{name: "NotRedeemable", fn: testInviteNotRedeemable},
	{name: "FailedSignupKeepsUse", fn: testInviteFailedSignupKeepsUse},
	{name: "Revoke", fn: testInviteRevoke},
	{name: "ConcurrentRedeem", fn: testInviteConcurrentRedeem},
}

// newInvite returns an invite with unique ID and hash, uses uses,
// expiring a day after baseTime.
func newInvite(uses int) meta.Invite {
	n := seq.Add(1)
	return meta.Invite{
		ID:        fmt.Sprintf("inv%d", n),
		Hash:      fmt.Sprintf("%064x", n),
		Uses:      uses,
		CreatedBy: "admin",
		CreatedAt: baseTime,
		ExpiresAt: baseTime.Add(24 * time.Hour),
	}
}

func addInvite(t *testing.T, s store, inv meta.Invite) meta.Invite {
	t.Helper()
	ok(t, s.CreateInvite(t.Context(), inv), "CreateInvite "+inv.ID)
	inv.UsesLeft = inv.Uses
	return inv
}

// invitedUser returns a user (with its default bucket) for
// CreateInvitedUser.
func invitedUser(id string) (meta.User, meta.Bucket) {
	return meta.User{ID: id, Email: id + "@example.com", PasswordHash: "x", CreatedAt: baseTime},
		meta.Bucket{Name: id, OwnerID: id, Visibility: meta.Private, CreatedAt: baseTime}
}

func wantInvite(t *testing.T, s store, want meta.Invite) {
	t.Helper()
	got, err := s.GetInviteByHash(t.Context(), want.Hash)
	ok(t, err, "GetInviteByHash "+want.ID)
	if d := diffInvite(got, want); d != "" {
		t.Errorf("invite %s: %s", want.ID, d)
	}
}

func diffInvite(got, want meta.Invite) string {
	if got.ID != want.ID || got.Hash != want.Hash || got.Email != want.Email || got.Uses != want.Uses ||
		got.UsesLeft != want.UsesLeft || got.CreatedBy != want.CreatedBy || got.Revoked != want.Revoked ||
		!sameTime(got.CreatedAt, want.CreatedAt) || !sameTime(got.ExpiresAt, want.ExpiresAt) {
		return fmt.Sprintf("got %+v, want %+v", got, want)
	}
	return ""
}

func wantInviteInvalid(t *testing.T, err error, what string) {
	t.Helper()
	wantCode(t, err, errcode.PermissionDenied, what)
	if e := errcode.As(err); e.Detail["reason"] != "invite_invalid" {
		t.Fatalf("%s: Detail = %v, want reason invite_invalid", what, e.Detail)
	}
}

func testInviteRoundTrip(t *testing.T, s store) {
	ctx := t.Context()
	a := newInvite(1)
	a.Email = "bob@example.com"
	a.UsesLeft, a.Revoked = 7, true // ignored
	b := newInvite(5)
	b.CreatedAt = baseTime.Add(time.Minute)
	c := newInvite(2)
	c.CreatedAt = baseTime // ties with a: by ID
	for _, inv := range []meta.Invite{a, b, c} {
		ok(t, s.CreateInvite(ctx, inv), "CreateInvite "+inv.ID)
	}
	a.UsesLeft, a.Revoked = 1, false
	b.UsesLeft, c.UsesLeft = 5, 2
	wantInvite(t, s, a)
	wantInvite(t, s, b)
	_, err := s.GetInviteByHash(ctx, fmt.Sprintf("%064x", 0))
	wantCode(t, err, errcode.NotFound, "GetInviteByHash of an unknown hash")

	got, err := s.ListInvites(ctx)
	ok(t, err, "ListInvites")
	want := []meta.Invite{b, a, c}
	if a.ID > c.ID {
		want = []meta.Invite{b, c, a}
	}
	if len(got) != len(want) {
		t.Fatalf("ListInvites returned %d invites, want %d", len(got), len(want))
	}
	for i := range want {
		if d := diffInvite(got[i], want[i]); d != "" {
			t.Errorf("ListInvites[%d]: %s", i, d)
		}
	}
}

func testInviteCreateRejected(t *testing.T, s store) {
	ctx := t.Context()
	taken := addInvite(t, s, newInvite(1))
	for _, tc := range []struct {
		name string
		edit func(*meta.Invite)
		code errcode.Code
	}{
		{"NoID", func(i *meta.Invite) { i.ID = "" }, errcode.InvalidArgument},
		{"NoHash", func(i *meta.Invite) { i.Hash = "" }, errcode.InvalidArgument},
		{"NoExpiry", func(i *meta.Invite) { i.ExpiresAt = time.Time{} }, errcode.InvalidArgument},
		{"ZeroUses", func(i *meta.Invite) { i.Uses = 0 }, errcode.InvalidArgument},
		{"NegativeUses", func(i *meta.Invite) { i.Uses = -1 }, errcode.InvalidArgument},
		{"TakenID", func(i *meta.Invite) { i.ID = taken.ID }, errcode.AlreadyExists},
		{"TakenHash", func(i *meta.Invite) { i.Hash = taken.Hash }, errcode.AlreadyExists},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inv := newInvite(1)
			tc.edit(&inv)
			wantCode(t, s.CreateInvite(ctx, inv), tc.code, "CreateInvite")
		})
	}
	got, err := s.ListInvites(ctx)
	ok(t, err, "ListInvites")
	if len(got) != 1 || got[0].ID != taken.ID {
		t.Errorf("ListInvites after rejected creates = %+v, want only %s", got, taken.ID)
	}
}

func testInviteRedeem(t *testing.T, s store) {
	ctx := t.Context()
	inv := addInvite(t, s, newInvite(2))
	for i, id := range []string{"carol", "dave"} {
		u, b := invitedUser(id)
		ok(t, s.CreateInvitedUser(ctx, u, b, inv.Hash, baseTime), "CreateInvitedUser "+id)
		got, err := s.GetUserByEmail(ctx, u.Email)
		ok(t, err, "GetUserByEmail "+id)
		if got.ID != id {
			t.Errorf("user %s has ID %q", id, got.ID)
		}
		_, err = s.GetBucket(ctx, id)
		ok(t, err, "GetBucket of "+id+"'s default bucket")
		inv.UsesLeft = 2 - (i + 1)
		wantInvite(t, s, inv)
	}
	u, b := invitedUser("eve")
	wantInviteInvalid(t, s.CreateInvitedUser(ctx, u, b, inv.Hash, baseTime), "CreateInvitedUser on a used-up invite")

	// Bound to an email: that email only.
	bound := newInvite(1)
	bound.Email = "frank@example.com"
	bound = addInvite(t, s, bound)
	u, b = invitedUser("frank")
	ok(t, s.CreateInvitedUser(ctx, u, b, bound.Hash, baseTime), "CreateInvitedUser with the bound email")
	bound.UsesLeft = 0
	wantInvite(t, s, bound)
}

func testInviteNotRedeemable(t *testing.T, s store) {
	ctx := t.Context()
	revoked := addInvite(t, s, newInvite(1))
	ok(t, s.RevokeInvite(ctx, revoked.ID), "RevokeInvite")
	revoked.Revoked = true
	expired := addInvite(t, s, newInvite(1))
	bound := newInvite(1)
	bound.Email = "someone.else@example.com"
	bound = addInvite(t, s, bound)
	for _, tc := range []struct {
		name string
		inv  meta.Invite
		now  time.Time
	}{
		{"Unknown", meta.Invite{Hash: fmt.Sprintf("%064x", 0)}, baseTime},
		{"Revoked", revoked, baseTime},
		{"ExpiredAtExpiry", expired, expired.ExpiresAt},
		{"ExpiredAfter", expired, expired.ExpiresAt.Add(time.Hour)},
		{"OtherEmail", bound, baseTime},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, b := invitedUser("grace")
			if tc.inv.Redeemable(u.Email, tc.now) && tc.inv.ID != "" {
				t.Fatalf("Invite.Redeemable says %s is redeemable", tc.name)
			}
			wantInviteInvalid(t, s.CreateInvitedUser(ctx, u, b, tc.inv.Hash, tc.now), "CreateInvitedUser")
			_, err := s.GetUser(ctx, u.ID)
			wantCode(t, err, errcode.NotFound, "GetUser of the refused signup")
			_, err = s.GetBucket(ctx, b.Name)
			wantCode(t, err, errcode.NotFound, "GetBucket of the refused signup")
			if tc.inv.ID != "" {
				wantInvite(t, s, tc.inv)
			}
		})
	}
	// A moment before expiry it is still good.
	u, b := invitedUser("heidi")
	ok(t, s.CreateInvitedUser(ctx, u, b, expired.Hash, expired.ExpiresAt.Add(-time.Millisecond)), "CreateInvitedUser just before expiry")
}

func testInviteFailedSignupKeepsUse(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "ivan", 0)
	inv := addInvite(t, s, newInvite(1))
	u, b := invitedUser("ivan2")
	u.Email = "ivan@example.com" // taken
	wantCode(t, s.CreateInvitedUser(ctx, u, b, inv.Hash, baseTime), errcode.AlreadyExists, "CreateInvitedUser with a taken email")
	wantInvite(t, s, inv)
	_, err := s.GetBucket(ctx, b.Name)
	wantCode(t, err, errcode.NotFound, "GetBucket of the refused signup")

	// The invite is checked first: an invalid one with a taken email is
	// invite_invalid, so an invite-only server reveals no emails to those
	// without an invite.
	wantInviteInvalid(t, s.CreateInvitedUser(ctx, u, b, fmt.Sprintf("%064x", 0), baseTime), "CreateInvitedUser with an unknown invite and a taken email")

	u, b = invitedUser("judy")
	ok(t, s.CreateInvitedUser(ctx, u, b, inv.Hash, baseTime), "CreateInvitedUser after the failed one")
}

func testInviteRevoke(t *testing.T, s store) {
	ctx := t.Context()
	wantCode(t, s.RevokeInvite(ctx, "nope"), errcode.NotFound, "RevokeInvite of an unknown id")
	inv := addInvite(t, s, newInvite(3))
	u, b := invitedUser("kim")
	ok(t, s.CreateInvitedUser(ctx, u, b, inv.Hash, baseTime), "CreateInvitedUser")
	ok(t, s.RevokeInvite(ctx, inv.ID), "RevokeInvite")
	ok(t, s.RevokeInvite(ctx, inv.ID), "RevokeInvite again")
	inv.UsesLeft, inv.Revoked = 2, true
	wantInvite(t, s, inv)
	u, b = invitedUser("lee")
	wantInviteInvalid(t, s.CreateInvitedUser(ctx, u, b, inv.Hash, baseTime), "CreateInvitedUser on a revoked invite")
}

// testInviteConcurrentRedeem races signups on an invite: exactly as many
// succeed as it has uses, whatever the interleaving.
func testInviteConcurrentRedeem(t *testing.T, s store) {
	for _, uses := range []int{1, 3} {
		t.Run(fmt.Sprintf("Uses%d", uses), func(t *testing.T) {
			inv := addInvite(t, s, newInvite(uses))
			const n = 12
			var wg sync.WaitGroup
			errs := make([]error, n)
			for i := range n {
				wg.Go(func() {
					u, b := invitedUser(fmt.Sprintf("race%d-%d", uses, i))
					errs[i] = s.CreateInvitedUser(t.Context(), u, b, inv.Hash, baseTime)
				})
			}
			wg.Wait()
			won := 0
			for i, err := range errs {
				switch {
				case err == nil:
					won++
				case errcode.Is(err, errcode.PermissionDenied):
				default:
					t.Errorf("signup %d: %v", i, err)
				}
			}
			if won != uses {
				t.Errorf("%d of %d concurrent signups redeemed an invite of %d uses", won, n, uses)
			}
			inv.UsesLeft = 0
			wantInvite(t, s, inv)
		})
	}
}
