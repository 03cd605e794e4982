package meta

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
)

func TestCheckRotation(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	live := RefreshToken{Hash: "h", UserID: "u", Family: "f", CreatedAt: now.Add(-time.Hour), ExpiresAt: now.Add(time.Hour)}
	with := func(f func(*RefreshToken)) RefreshToken { t := live; f(&t); return t }
	for _, c := range []struct {
		name     string
		old      RefreshToken
		found    bool
		disabled bool
		after    time.Time
		revoke   bool
		ok       bool
	}{
		{"live", live, true, false, time.Time{}, false, true},
		{"after an earlier revocation", live, true, false, now.Add(-2 * time.Hour), false, true},
		{"unknown", RefreshToken{}, false, false, time.Time{}, false, false},
		{"reused", with(func(t *RefreshToken) { t.Used = true }), true, false, time.Time{}, true, false},
		{"reused and revoked", with(func(t *RefreshToken) { t.Used, t.Revoked = true, true }), true, false, time.Time{}, true, false},
		{"revoked", with(func(t *RefreshToken) { t.Revoked = true }), true, false, time.Time{}, false, false},
		{"expired at now", with(func(t *RefreshToken) { t.ExpiresAt = now }), true, false, time.Time{}, false, false},
		{"disabled user", live, true, true, time.Time{}, false, false},
		{"before the user's sessions", live, true, false, now.Add(-time.Minute), false, false},
	} {
		revoke, err := CheckRotation(c.old, c.found, c.disabled, c.after, now)
		if revoke != c.revoke || (err == nil) != c.ok || err != nil && !errcode.Is(err, errcode.Unauthenticated) {
			t.Errorf("%s: CheckRotation = %v, %v; want revoke %v, ok %v", c.name, revoke, err, c.revoke, c.ok)
		}
	}
	next := NextRefreshToken(live, RefreshToken{Hash: "n", UserID: "other", Family: "other", Used: true, Revoked: true,
		ExpiresAt: time.Date(2026, 2, 1, 0, 0, 0, 0, time.FixedZone("x", 3600))}, now)
	if next.Hash != "n" || next.UserID != "u" || next.Family != "f" || next.Used || next.Revoked || !next.CreatedAt.Equal(now) ||
		next.ExpiresAt.Location() != time.UTC {
		t.Errorf("NextRefreshToken = %+v", next)
	}
	if err := CheckNextRefreshToken(RefreshToken{}); !errcode.Is(err, errcode.InvalidArgument) {
		t.Errorf("CheckNextRefreshToken without a hash = %v", err)
	}
}

func TestCheckDeleteUser(t *testing.T) {
	for _, c := range []struct {
		purge                    bool
		objects, uploads, locked int64
		ok                       bool
	}{{false, 0, 0, 0, true}, {true, 3, 1, 0, true}, {false, 1, 0, 0, false}, {false, 0, 2, 0, false}, {true, 3, 0, 1, false}} {
		err := CheckDeleteUser(c.purge, c.objects, c.uploads, c.locked, nil)
		if (err == nil) != c.ok {
			t.Errorf("CheckDeleteUser(%v, %d, %d, %d) = %v", c.purge, c.objects, c.uploads, c.locked, err)
		}
	}
	e := errcode.As(CheckDeleteUser(true, 5, 0, 2, []string{"a"}))
	if e == nil || e.Code != errcode.Conflict || e.Detail["reason"] != "objects_locked" || e.Detail["locked"] != int64(2) {
		t.Errorf("CheckDeleteUser with locked versions = %+v", e)
	}
	e = errcode.As(CheckDeleteUser(false, 2, 1, 0, []string{"a", "b"}))
	if e == nil || e.Code != errcode.Conflict || e.Detail["reason"] != "user_owns_data" || e.Detail["objects"] != int64(2) ||
		e.Detail["uploads"] != int64(1) || !slices.Equal(e.Detail["buckets"].([]string), []string{"a", "b"}) ||
		e.Message != "the account still owns 2 objects and 1 upload in progress (in buckets a, b); delete them first, or delete the account with purge" {
		t.Errorf("CheckDeleteUser error = %+v", e)
	}
	if e := errcode.As(CheckDeleteUser(false, 1, 0, 0, nil)); e.Detail["buckets"] == nil {
		t.Error("no buckets is not an empty list")
	}
}

func TestShareRefusal(t *testing.T) {
	now := time.Now()
	get := func(_ context.Context, id string) (Share, error) {
		if id == "s" {
			return Share{ID: "s", ExpiresAt: now.Add(-time.Second)}, nil
		}
		return Share{}, ErrNoShare()
	}
	e := errcode.As(ShareRefusal(context.Background(), get, "s", now))
	if e == nil || e.Code != errcode.NotFound || e.Detail["state"] != "expired" {
		t.Errorf("ShareRefusal = %+v", e)
	}
	if err := ShareRefusal(context.Background(), get, "gone", now); !errcode.Is(err, errcode.NotFound) || errcode.As(err).Detail != nil {
		t.Errorf("ShareRefusal of a missing share = %v", err)
	}
}

func TestStoredTime(t *testing.T) {
	loc := time.FixedZone("x", -7200)
	for _, c := range []struct {
		in, want time.Time
	}{
		{time.Time{}, time.Time{}},
		{time.Unix(0, 0), time.Time{}},
		{time.Date(2026, 1, 2, 3, 4, 5, 6, loc), time.Date(2026, 1, 2, 5, 4, 5, 6, time.UTC)},
		{time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC), time.Unix(0, math.MaxInt64).UTC()},
		{time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC), time.Unix(0, math.MinInt64).UTC()},
	} {
		got := StoredTime(c.in)
		if !got.Equal(c.want) || got.Location() != c.want.Location() {
			t.Errorf("StoredTime(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	if now := time.Now(); StoredTime(now) != now.Round(0).UTC() {
		t.Error("StoredTime keeps the monotonic clock reading")
	}
}
