package metatest

import (
	"strings"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

var kmsGrantTests = []test{
	{name: "AllowDisallow", fn: testKMSGrants},
	{name: "GoWithTheirUser", fn: testKMSGrantsGoWithUser},
}

func testKMSGrants(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	addUser(t, s, "bob", 0)
	allowed := func(key, user string) bool {
		t.Helper()
		ok, err := s.KMSKeyAllowed(ctx, key, user)
		if err != nil {
			t.Fatalf("KMSKeyAllowed(%q, %q): %v", key, user, err)
		}
		return ok
	}
	if allowed("finance", "alice") {
		t.Fatal("allowed before any grant")
	}
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	ok(t, s.AllowKMSKey(ctx, meta.KMSKeyGrant{Key: "finance", UserID: "alice", CreatedAt: at}), "AllowKMSKey")
	ok(t, s.AllowKMSKey(ctx, meta.KMSKeyGrant{Key: "finance", UserID: "alice", CreatedAt: at.Add(time.Hour)}), "AllowKMSKey again")
	ok(t, s.AllowKMSKey(ctx, meta.KMSKeyGrant{Key: "alias/hr", UserID: "bob"}), "AllowKMSKey without a time")
	if !allowed("finance", "alice") || allowed("finance", "bob") || allowed("Finance", "alice") || allowed("alias/hr", "alice") || !allowed("alias/hr", "bob") {
		t.Error("KMSKeyAllowed disagrees with the grants (alice: finance; bob: alias/hr)")
	}
	gs, err := s.ListKMSKeyGrants(ctx)
	ok(t, err, "ListKMSKeyGrants")
	if len(gs) != 2 || gs[0].Key != "alias/hr" || gs[0].UserID != "bob" || gs[0].CreatedAt.IsZero() ||
		gs[1].Key != "finance" || gs[1].UserID != "alice" || !gs[1].CreatedAt.Equal(at) {
		t.Errorf("ListKMSKeyGrants = %+v; want bob's alias/hr, then alice's finance granted at %v (the first grant's time)", gs, at)
	}
	if err := s.AllowKMSKey(ctx, meta.KMSKeyGrant{Key: "finance", UserID: "nobody"}); !errcode.Is(err, errcode.NotFound) {
		t.Errorf("AllowKMSKey to no user: %v, want NotFound", err)
	}
	for _, bad := range []string{"", "with space", "tab\tkey", strings.Repeat("k", meta.MaxKMSKeyName+1), "bad\xff"} {
		if err := s.AllowKMSKey(ctx, meta.KMSKeyGrant{Key: bad, UserID: "alice"}); !errcode.Is(err, errcode.InvalidArgument) {
			t.Errorf("AllowKMSKey(%.20q): %v, want InvalidArgument", bad, err)
		}
	}
	ok(t, s.DisallowKMSKey(ctx, "finance", "alice"), "DisallowKMSKey")
	if allowed("finance", "alice") {
		t.Error("still allowed after DisallowKMSKey")
	}
	if err := s.DisallowKMSKey(ctx, "finance", "alice"); !errcode.Is(err, errcode.NotFound) {
		t.Errorf("DisallowKMSKey twice: %v, want NotFound", err)
	}
}

func testKMSGrantsGoWithUser(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	ok(t, s.AllowKMSKey(ctx, meta.KMSKeyGrant{Key: "finance", UserID: "alice"}), "AllowKMSKey")
	if _, err := s.DeleteUser(ctx, "alice", true); err != nil {
		t.Fatal(err)
	}
	gs, err := s.ListKMSKeyGrants(ctx)
	ok(t, err, "ListKMSKeyGrants")
	if len(gs) != 0 {
		t.Errorf("grants of a deleted user remain: %+v", gs)
	}
}
