package metatest

import (
	"sync"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

var tusTests = []test{
	{name: "State", fn: testTusState},
	{name: "Lock", fn: testTusLock},
	{name: "UnlockWithHash", fn: testTusUnlockWithHash},
	{name: "GoesWithUpload", fn: testTusGoesWithUpload},
	{name: "UserLimits", fn: testUserLimits},
	{name: "ReserveRate", fn: testReserveRate},
	{name: "UpdateThrottles", fn: testUpdateThrottles},
}

func testTusState(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	u := newUpload("alice", "t.bin")
	ok(t, s.CreateUpload(ctx, u), "CreateUpload")
	if err := s.CreateTus(ctx, meta.TusUpload{UploadID: "missing", Length: 1, Info: []byte("{}")}); !errcode.Is(err, errcode.NotFound) {
		t.Errorf("CreateTus of no upload: %v, want NotFound", err)
	}
	ok(t, s.CreateTus(ctx, meta.TusUpload{UploadID: u.ID, Length: -1, Info: []byte(`{"a":1}`)}), "CreateTus")
	if err := s.CreateTus(ctx, meta.TusUpload{UploadID: u.ID, Length: -1, Info: []byte("{}")}); !errcode.Is(err, errcode.AlreadyExists) {
		t.Errorf("CreateTus twice: %v, want AlreadyExists", err)
	}
	ok(t, s.SetTusLength(ctx, u.ID, 42), "SetTusLength")
	if err := s.SetTusLength(ctx, u.ID, 43); !errcode.Is(err, errcode.InvalidArgument) {
		t.Errorf("SetTusLength twice: %v, want InvalidArgument", err)
	}
	ok(t, s.SetTusHash(ctx, u.ID, 7, []byte{1, 2, 3}), "SetTusHash")
	got, err := s.GetTus(ctx, u.ID)
	ok(t, err, "GetTus")
	if got.Length != 42 || string(got.Info) != `{"a":1}` || got.HashOffset != 7 || string(got.HashState) != "\x01\x02\x03" {
		t.Errorf("GetTus = %+v", got)
	}
	if _, err := s.GetTus(ctx, "missing"); !errcode.Is(err, errcode.NotFound) {
		t.Errorf("GetTus of none: %v, want NotFound", err)
	}
}

// newTus creates alice, an upload of hers and its tus state of length
// bytes; it returns the upload.
func newTus(t *testing.T, s store, length int64) meta.Upload {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	u := newUpload("alice", "t.bin")
	ok(t, s.CreateUpload(ctx, u), "CreateUpload")
	ok(t, s.CreateTus(ctx, meta.TusUpload{UploadID: u.ID, Length: length, Info: []byte("{}")}), "CreateTus")
	return u
}

func testTusLock(t *testing.T, s store) {
	ctx := t.Context()
	u := newTus(t, s, 1)
	lease := time.Now().Add(time.Minute)
	steps := []struct {
		name    string
		holder  string
		until   time.Time
		release bool
		want    meta.TusLock
	}{
		{"free", "h1", lease, false, meta.TusLocked},
		{"held by another", "h2", lease, true, meta.TusBusy},
		{"again by its holder", "h1", lease, false, meta.TusLocked},
	}
	for _, st := range steps {
		got, err := s.TryLockTus(ctx, u.ID, st.holder, st.until, st.release)
		ok(t, err, st.name)
		if got != st.want {
			t.Errorf("%s: TryLockTus = %v, want %v", st.name, got, st.want)
		}
	}
	// h1 retook the lock after h2 asked: the request was cleared.
	if _, err := s.TryLockTus(ctx, u.ID, "h2", lease, true); err != nil {
		t.Fatal(err)
	}
	held, release, err := s.RenewTusLock(ctx, u.ID, "h1", lease)
	ok(t, err, "RenewTusLock")
	if !held || !release {
		t.Errorf("RenewTusLock by the holder after a request = %v, %v; want true, true", held, release)
	}
	if held, _, _ := s.RenewTusLock(ctx, u.ID, "h2", lease); held {
		t.Errorf("RenewTusLock by a non-holder held")
	}
	ok(t, s.UnlockTus(ctx, u.ID, "h2"), "UnlockTus by a non-holder")
	if got, _ := s.TryLockTus(ctx, u.ID, "h3", lease, false); got != meta.TusBusy {
		t.Errorf("after a non-holder's unlock: %v, want busy", got)
	}
	ok(t, s.UnlockTus(ctx, u.ID, "h1"), "UnlockTus")
	if got, _ := s.TryLockTus(ctx, u.ID, "h3", time.Now().Add(-time.Second), false); got != meta.TusLocked {
		t.Errorf("after unlock: %v, want locked", got)
	}
	// h3's lease has expired: anyone takes it.
	if got, _ := s.TryLockTus(ctx, u.ID, "h4", lease, false); got != meta.TusLocked {
		t.Errorf("expired lease: %v, want locked", got)
	}
	if got, _ := s.TryLockTus(ctx, "missing", "h1", lease, true); got != meta.TusMissing {
		t.Errorf("no upload: %v, want missing", got)
	}
}

// testTusUnlockWithHash: UnlockTusHash releases the lock and records the
// hash state in one write, only for the lock's holder.
func testTusUnlockWithHash(t *testing.T, s store) {
	ctx := t.Context()
	u := newTus(t, s, 100)
	lease := time.Now().Add(time.Minute)
	if got, err := s.TryLockTus(ctx, u.ID, "h1", lease, false); err != nil || got != meta.TusLocked {
		t.Fatalf("TryLockTus = %v, %v", got, err)
	}
	if err := s.UnlockTusHash(ctx, u.ID, "h1", -1, []byte{9}); !errcode.Is(err, errcode.InvalidArgument) {
		t.Errorf("UnlockTusHash at a negative offset: %v, want InvalidArgument", err)
	}
	// Not the holder: neither unlocked nor recorded.
	ok(t, s.UnlockTusHash(ctx, u.ID, "h2", 5, []byte{5}), "UnlockTusHash by a non-holder")
	if got, _ := s.TryLockTus(ctx, u.ID, "h3", lease, false); got != meta.TusBusy {
		t.Errorf("after a non-holder's UnlockTusHash: %v, want busy", got)
	}
	if got, err := s.GetTus(ctx, u.ID); err != nil || got.HashOffset != 0 || len(got.HashState) != 0 {
		t.Errorf("after a non-holder's UnlockTusHash: %+v, %v; want no hash state", got, err)
	}
	ok(t, s.UnlockTusHash(ctx, u.ID, "h1", 42, []byte{1, 2, 3}), "UnlockTusHash")
	if got, err := s.GetTus(ctx, u.ID); err != nil || got.HashOffset != 42 || string(got.HashState) != "\x01\x02\x03" || got.Length != 100 {
		t.Errorf("after UnlockTusHash: %+v, %v; want the state after 42 bytes", got, err)
	}
	if got, _ := s.TryLockTus(ctx, u.ID, "h3", lease, false); got != meta.TusLocked {
		t.Errorf("after UnlockTusHash: %v, want locked", got)
	}
	if err := s.UnlockTusHash(ctx, "missing", "h1", 1, []byte{1}); err != nil {
		t.Errorf("UnlockTusHash of no upload: %v, want nothing", err)
	}
}

func testTusGoesWithUpload(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	u := newUpload("alice", "t.bin")
	ok(t, s.CreateUpload(ctx, u), "CreateUpload")
	ok(t, s.CreateTus(ctx, meta.TusUpload{UploadID: u.ID, Length: 1, Info: []byte("{}")}), "CreateTus")
	ok(t, s.AbortUpload(ctx, u.ID), "AbortUpload")
	if _, err := s.GetTus(ctx, u.ID); !errcode.Is(err, errcode.NotFound) {
		t.Errorf("GetTus after abort: %v, want NotFound", err)
	}
}

func testUserLimits(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	if err := s.SetUserLimits(ctx, meta.UserLimits{UserID: "nobody", Requests: 1, Window: time.Minute}); !errcode.Is(err, errcode.NotFound) {
		t.Errorf("SetUserLimits of no user: %v, want NotFound", err)
	}
	for _, bad := range []meta.UserLimits{{UserID: "alice", Requests: -1, Window: time.Minute}, {UserID: "alice", Requests: 1, Window: time.Millisecond}} {
		if err := s.SetUserLimits(ctx, bad); !errcode.Is(err, errcode.InvalidArgument) {
			t.Errorf("SetUserLimits(%+v): %v, want InvalidArgument", bad, err)
		}
	}
	if _, err := s.GetUserLimits(ctx, "alice"); !errcode.Is(err, errcode.NotFound) {
		t.Errorf("GetUserLimits before: %v, want NotFound", err)
	}
	want := meta.UserLimits{UserID: "alice", Requests: 10, Bytes: 1 << 20, Window: time.Minute}
	ok(t, s.SetUserLimits(ctx, want), "SetUserLimits")
	want.Requests = 20
	ok(t, s.SetUserLimits(ctx, want), "SetUserLimits again")
	got, err := s.GetUserLimits(ctx, "alice")
	ok(t, err, "GetUserLimits")
	if got != want {
		t.Errorf("GetUserLimits = %+v, want %+v", got, want)
	}
	ok(t, s.SetUserLimits(ctx, meta.UserLimits{UserID: "alice"}), "SetUserLimits to defaults")
	if _, err := s.GetUserLimits(ctx, "alice"); !errcode.Is(err, errcode.NotFound) {
		t.Errorf("GetUserLimits after clearing: %v, want NotFound", err)
	}
}

func testReserveRate(t *testing.T, s store) {
	ctx := t.Context()
	steps := []struct {
		window, block, want int64
	}{
		{1000, 4, 4}, {1000, 4, 4}, {1000, 4, 2}, {1000, 4, 0}, // limit 10
		{2000, 4, 4}, // a new window starts full
	}
	for i, st := range steps {
		got, err := s.ReserveRate(ctx, "user", "u1", st.window, st.block, 10)
		ok(t, err, "ReserveRate")
		if got != st.want {
			t.Errorf("step %d: got %d tokens, want %d", i, got, st.want)
		}
	}
	if got, _ := s.ReserveRate(ctx, "user", "u2", 1000, 4, 10); got != 4 {
		t.Errorf("another key: %d, want 4", got)
	}
}

// testUpdateThrottles: states are stored by key and read back; nil stores
// nothing; an expired state reads as the zero state and an unexpired one
// returned with Expires not after now is forgotten; concurrent updates of
// one key are serialised (none is lost).
func testUpdateThrottles(t *testing.T, s store) {
	ctx := t.Context()
	now := time.UnixMilli(1_700_000_000_000)
	read := func(keys ...string) []meta.ThrottleState {
		t.Helper()
		var got []meta.ThrottleState
		ok(t, s.UpdateThrottles(ctx, now, keys, func(st []meta.ThrottleState) []meta.ThrottleState {
			got = st
			return nil
		}), "UpdateThrottles (read)")
		return got
	}
	a := meta.ThrottleState{Start: now, Count: 3, Delay: 2 * time.Second, Until: now.Add(2 * time.Second), Expires: now.Add(time.Minute)}
	b := meta.ThrottleState{Start: now.Add(-time.Second), Count: 1, Expires: now.Add(time.Hour)}
	ok(t, s.UpdateThrottles(ctx, now, []string{"b", "a"}, func(st []meta.ThrottleState) []meta.ThrottleState {
		if st[0] != (meta.ThrottleState{}) || st[1] != (meta.ThrottleState{}) {
			t.Errorf("new keys read %+v, want zero states", st)
		}
		return []meta.ThrottleState{b, a}
	}), "UpdateThrottles")
	if got := read("a", "b", "c"); !got[0].Start.Equal(a.Start) || got[0].Count != 3 || got[0].Delay != a.Delay ||
		!got[0].Until.Equal(a.Until) || !got[0].Expires.Equal(a.Expires) || got[1].Count != 1 || got[2] != (meta.ThrottleState{}) {
		t.Errorf("read back %+v, want a, b and a zero state", got)
	}
	// Forgotten: returned expired.
	ok(t, s.UpdateThrottles(ctx, now, []string{"a"}, func([]meta.ThrottleState) []meta.ThrottleState {
		return []meta.ThrottleState{{Count: 9}}
	}), "UpdateThrottles (forget)")
	if got := read("a"); got[0] != (meta.ThrottleState{}) {
		t.Errorf("a forgotten reads %+v", got[0])
	}
	// Expired by the time of the read.
	later := now.Add(2 * time.Hour)
	ok(t, s.UpdateThrottles(ctx, later, []string{"b"}, func(st []meta.ThrottleState) []meta.ThrottleState {
		if st[0] != (meta.ThrottleState{}) {
			t.Errorf("b read %+v after it expired, want the zero state", st[0])
		}
		return nil
	}), "UpdateThrottles (expired)")
	// Concurrent increments of one key.
	const n = 10
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			err := s.UpdateThrottles(ctx, now, []string{"x", "y"}, func(st []meta.ThrottleState) []meta.ThrottleState {
				for i := range st {
					st[i].Count++
					st[i].Expires = now.Add(time.Hour)
				}
				return st
			})
			if err != nil {
				t.Errorf("concurrent UpdateThrottles: %v", err)
			}
		})
	}
	wg.Wait()
	if got := read("y", "x"); got[0].Count != n || got[1].Count != n {
		t.Errorf("after %d concurrent increments: %d and %d", n, got[0].Count, got[1].Count)
	}
}
