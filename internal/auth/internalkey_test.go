package auth_test

import "testing"

// TestLookupKeyInternal: the principal of the user's internal key (the one
// Coffer presigns direct-upload part URLs with) says so, and the same
// user's own key does not: the S3 API tells a direct upload's part from
// S3's UploadPart by it.
func TestLookupKeyInternal(t *testing.T) {
	s := newService(openSQLite(t), nil)
	ctx := t.Context()
	a := signup(t, s, "alice@example.com")
	id, secret, err := s.Keys.InternalKey(ctx, a.id)
	if err != nil {
		t.Fatal(err)
	}
	got, p, err := s.Keys.LookupKey(ctx, id)
	if err != nil || got != secret || p.UserID != a.id || !p.Internal {
		t.Errorf("internal key: %+v, %v; want alice's, Internal", p, err)
	}
	if _, p, err := s.Keys.LookupKey(ctx, a.keyID); err != nil || p.Internal {
		t.Errorf("alice's own key: %+v, %v; want not Internal", p, err)
	}
}
