package metatest

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

var accessKeyTests = []test{
	{name: "CreateGetList", fn: testAccessKeys},
	{name: "Rejected", fn: testAccessKeyRejected},
	{name: "Delete", fn: testDeleteAccessKey},
	{name: "Touch", fn: testTouchAccessKey},
	{name: "ScopeExpiryToken", fn: testAccessKeyScope},
}

// accessKey returns a key of user with a unique ID and secret.
func accessKey(user, name string, created time.Time) meta.AccessKey {
	n := seq.Add(1)
	return meta.AccessKey{
		ID:        fmt.Sprintf("AKIA%016d", n),
		UserID:    user,
		SecretEnc: []byte(fmt.Sprintf("\x00\xff sealed secret %d \x80", n)),
		Name:      name,
		CreatedAt: created,
	}
}

func diffAccessKey(got, want meta.AccessKey) string {
	var d string
	add := func(field string, g, w any) { d += fmt.Sprintf(" %s=%v (want %v)", field, g, w) }
	if got.ID != want.ID {
		add("ID", got.ID, want.ID)
	}
	if got.UserID != want.UserID {
		add("UserID", got.UserID, want.UserID)
	}
	if !bytes.Equal(got.SecretEnc, want.SecretEnc) {
		add("SecretEnc", got.SecretEnc, want.SecretEnc)
	}
	if got.Name != want.Name {
		add("Name", got.Name, want.Name)
	}
	if got.Internal != want.Internal {
		add("Internal", got.Internal, want.Internal)
	}
	if got.Token != want.Token {
		add("Token", got.Token, want.Token)
	}
	if got.Scope != want.Scope {
		add("Scope", got.Scope, want.Scope)
	}
	if !sameTime(got.ExpiresAt, want.ExpiresAt) || got.ExpiresAt.IsZero() != want.ExpiresAt.IsZero() {
		add("ExpiresAt", got.ExpiresAt, want.ExpiresAt)
	}
	if !sameTime(got.CreatedAt, want.CreatedAt) {
		add("CreatedAt", got.CreatedAt, want.CreatedAt)
	}
	if !sameTime(got.LastUsed, want.LastUsed) || got.LastUsed.IsZero() != want.LastUsed.IsZero() {
		add("LastUsed", got.LastUsed, want.LastUsed)
	}
	return d
}

// wantAccessKey fails unless GetAccessKey(want.ID) returns want.
func wantAccessKey(t *testing.T, s store, want meta.AccessKey) {
	t.Helper()
	got, err := s.GetAccessKey(t.Context(), want.ID)
	ok(t, err, "GetAccessKey "+want.ID)
	if d := diffAccessKey(got, want); d != "" {
		t.Errorf("GetAccessKey %s differs:%s", want.ID, d)
	}
}

// wantAccessKeys fails unless ListAccessKeys(user) returns want, in order.
func wantAccessKeys(t *testing.T, s store, user string, want ...meta.AccessKey) {
	t.Helper()
	got, err := s.ListAccessKeys(t.Context(), user)
	ok(t, err, "ListAccessKeys "+user)
	ids := func(ks []meta.AccessKey) []string {
		out := make([]string, len(ks))
		for i, k := range ks {
			out[i] = k.ID
		}
		return out
	}
	if fmt.Sprint(ids(got)) != fmt.Sprint(ids(want)) {
		t.Fatalf("ListAccessKeys(%s) = %q, want %q", user, ids(got), ids(want))
	}
	for i := range got {
		if d := diffAccessKey(got[i], want[i]); d != "" {
			t.Errorf("ListAccessKeys(%s)[%d] differs:%s", user, i, d)
		}
	}
}

func testAccessKeys(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	addUser(t, s, "bob", 0)
	wantAccessKeys(t, s, "alice") // none yet

	// Created in an order that differs from CreatedAt order.
	newer := accessKey("alice", "laptop", baseTime.Add(2*time.Hour))
	internal := accessKey("alice", "", baseTime.Add(3*time.Hour))
	internal.Internal = true
	older := accessKey("alice", "ünïcode name", baseTime.Add(time.Hour))
	bobs := accessKey("bob", "bob's", baseTime)
	for _, k := range []meta.AccessKey{newer, internal, older, bobs} {
		ok(t, s.CreateAccessKey(ctx, k), "CreateAccessKey "+k.Name)
	}
	for _, k := range []meta.AccessKey{newer, internal, older, bobs} {
		wantAccessKey(t, s, k)
	}
	wantAccessKeys(t, s, "alice", older, newer, internal)
	wantAccessKeys(t, s, "bob", bobs)
	wantAccessKeys(t, s, "nobody")
}

func testAccessKeyRejected(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	addUser(t, s, "bob", 0)
	k := accessKey("alice", "k", baseTime)
	ok(t, s.CreateAccessKey(ctx, k), "CreateAccessKey")

	orphan := accessKey("nobody", "orphan", baseTime)
	wantCode(t, s.CreateAccessKey(ctx, orphan), errcode.NotFound, "CreateAccessKey for a missing user")
	_, err := s.GetAccessKey(ctx, orphan.ID)
	wantCode(t, err, errcode.NotFound, "GetAccessKey of a key whose creation failed")

	dup := accessKey("bob", "dup", baseTime.Add(time.Hour))
	dup.ID = k.ID
	wantCode(t, s.CreateAccessKey(ctx, dup), errcode.AlreadyExists, "CreateAccessKey with a taken ID (another user's)")
	wantAccessKey(t, s, k)
	wantAccessKeys(t, s, "bob")

	_, err = s.GetAccessKey(ctx, "AKIA-UNKNOWN")
	wantCode(t, err, errcode.NotFound, "GetAccessKey of an unknown ID")
	_, err = s.GetAccessKey(ctx, "akia"+k.ID[4:])
	wantCode(t, err, errcode.NotFound, "GetAccessKey with another case")
}

func testDeleteAccessKey(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	addUser(t, s, "bob", 0)
	a1 := accessKey("alice", "a1", baseTime)
	a2 := accessKey("alice", "a2", baseTime.Add(time.Second))
	b1 := accessKey("bob", "b1", baseTime)
	for _, k := range []meta.AccessKey{a1, a2, b1} {
		ok(t, s.CreateAccessKey(ctx, k), "CreateAccessKey "+k.Name)
	}

	wantCode(t, s.DeleteAccessKey(ctx, "bob", a1.ID), errcode.NotFound, "DeleteAccessKey of another user's key")
	wantAccessKey(t, s, a1)
	wantCode(t, s.DeleteAccessKey(ctx, "nobody", a1.ID), errcode.NotFound, "DeleteAccessKey by a missing user")
	wantAccessKey(t, s, a1)

	ok(t, s.DeleteAccessKey(ctx, "alice", a1.ID), "DeleteAccessKey")
	_, err := s.GetAccessKey(ctx, a1.ID)
	wantCode(t, err, errcode.NotFound, "GetAccessKey of a deleted key")
	wantAccessKeys(t, s, "alice", a2)
	wantAccessKeys(t, s, "bob", b1)
	wantCode(t, s.DeleteAccessKey(ctx, "alice", a1.ID), errcode.NotFound, "DeleteAccessKey of a deleted key")
	wantCode(t, s.DeleteAccessKey(ctx, "alice", "AKIA-UNKNOWN"), errcode.NotFound, "DeleteAccessKey of an unknown key")

	// The ID is free again.
	again := accessKey("bob", "again", baseTime.Add(time.Minute))
	again.ID = a1.ID
	ok(t, s.CreateAccessKey(ctx, again), "CreateAccessKey with a deleted key's ID")
	wantAccessKeys(t, s, "bob", b1, again)
}

func testTouchAccessKey(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	k := accessKey("alice", "k", baseTime)
	other := accessKey("alice", "other", baseTime.Add(time.Second))
	other.LastUsed = baseTime.Add(time.Minute) // a given LastUsed is stored
	ok(t, s.CreateAccessKey(ctx, k), "CreateAccessKey")
	ok(t, s.CreateAccessKey(ctx, other), "CreateAccessKey other")
	wantAccessKey(t, s, k) // LastUsed zero: never used
	wantAccessKey(t, s, other)

	for _, at := range []time.Time{baseTime.Add(time.Hour), baseTime.Add(48 * time.Hour), baseTime.Add(2 * time.Hour)} {
		ok(t, s.TouchAccessKey(ctx, k.ID, at), "TouchAccessKey")
		k.LastUsed = at
		wantAccessKey(t, s, k)
	}
	wantAccessKey(t, s, other)
	wantAccessKeys(t, s, "alice", k, other)
	wantCode(t, s.TouchAccessKey(ctx, "AKIA-UNKNOWN", baseTime), errcode.NotFound, "TouchAccessKey of an unknown key")
}

// testAccessKeyScope: a key's scope (either form), expiry and token flag
// are stored as given and read back by Get and List; a malformed scope is
// refused and stores nothing.
func testAccessKeyScope(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	simple := accessKey("alice", "simple", baseTime)
	simple.Scope = meta.KeyScope{Bucket: "photos", Prefix: "uploads/ünï/", Access: meta.AccessRead}
	simple.ExpiresAt = baseTime.Add(30 * 24 * time.Hour)
	everywhere := accessKey("alice", "write anywhere", baseTime.Add(time.Second))
	everywhere.Scope = meta.KeyScope{Access: meta.AccessWrite}
	inline := accessKey("alice", "inline", baseTime.Add(2*time.Second))
	inline.Scope = meta.KeyScope{Policy: `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"}]}`}
	token := accessKey("alice", "app", baseTime.Add(3*time.Second))
	token.Token = true
	token.Scope = meta.KeyScope{Bucket: "photos", Access: meta.AccessReadWrite}
	token.ExpiresAt = baseTime.Add(time.Hour)
	plain := accessKey("alice", "plain", baseTime.Add(4*time.Second))
	for _, k := range []meta.AccessKey{simple, everywhere, inline, token, plain} {
		ok(t, s.CreateAccessKey(ctx, k), "CreateAccessKey "+k.Name)
		wantAccessKey(t, s, k)
	}
	wantAccessKeys(t, s, "alice", simple, everywhere, inline, token, plain)

	for _, c := range []struct {
		name  string
		scope meta.KeyScope
		code  errcode.Code
	}{
		{"unknown access", meta.KeyScope{Bucket: "b", Access: "admin"}, errcode.InvalidArgument},
		{"bucket without access", meta.KeyScope{Bucket: "b"}, errcode.InvalidArgument},
		{"prefix without bucket", meta.KeyScope{Prefix: "p/", Access: meta.AccessRead}, errcode.InvalidArgument},
		{"policy and bucket", meta.KeyScope{Bucket: "b", Policy: "{}"}, errcode.InvalidArgument},
		{"policy and access", meta.KeyScope{Access: meta.AccessRead, Policy: "{}"}, errcode.InvalidArgument},
		{"policy too large", meta.KeyScope{Policy: "{" + string(bytes.Repeat([]byte(" "), meta.MaxKeyPolicy)) + "}"}, errcode.TooLarge},
	} {
		k := accessKey("alice", c.name, baseTime.Add(time.Hour))
		k.Scope = c.scope
		wantCode(t, s.CreateAccessKey(ctx, k), c.code, "CreateAccessKey with "+c.name)
		_, err := s.GetAccessKey(ctx, k.ID)
		wantCode(t, err, errcode.NotFound, "GetAccessKey of a key refused for "+c.name)
	}
}
