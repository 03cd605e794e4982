package postgres_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/postgres"
	"github.com/coffer-storage/coffer/internal/testbackend"
)

// TestListenChanges: changes are announced when their transaction
// commits and never when it fails; the listener reports Reset when it
// starts listening, and again after its connection is cut and re-opened,
// and keeps delivering afterwards.
func TestListenChanges(t *testing.T) {
	// A database of its own: channels are per database, not per schema.
	db := testbackend.SharedPostgres(t).CreateDatabase(t)
	s := open(t, db, postgres.Options{})
	ctx, cancel := context.WithCancel(t.Context())
	changes, resets, errs := make(chan meta.Change, 100), make(chan struct{}, 10), make(chan error, 10)
	ups := make(chan bool, 10)
	done := make(chan error, 1)
	go func() {
		done <- s.ListenChanges(ctx, meta.ChangeHandler{
			Changed:   func(c meta.Change) { changes <- c },
			Reset:     func() { resets <- struct{}{} },
			Error:     func(err error) { errs <- err },
			Listening: func(up bool) { ups <- up },
		})
	}()
	wantUp := func(want bool) {
		t.Helper()
		select {
		case up := <-ups:
			if up != want {
				t.Fatalf("Listening(%v), want Listening(%v)", up, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no Listening(%v) within 10s", want)
		}
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != context.Canceled {
			t.Errorf("ListenChanges returned %v, want context.Canceled", err)
		}
	})
	wait := func(what string, ch <-chan struct{}) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s within 10s", what)
		}
	}
	want := func(topic, key string) {
		t.Helper()
		select {
		case c := <-changes:
			if c.Topic != topic || c.Key != key {
				t.Fatalf("change = %+v, want %s:%s", c, topic, key)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no change %s:%s within 10s", topic, key)
		}
	}
	wait("Reset at start", resets)
	wantUp(true)

	for _, id := range []string{"alice", "bob"} {
		u := meta.User{ID: id, Email: id + "@example.com", PasswordHash: "x"}
		if err := s.CreateUser(ctx, u, meta.Bucket{Name: id, OwnerID: id}); err != nil {
			t.Fatal(err)
		}
	}
	yes := true
	// A failed update announces nothing: the next change is bob's.
	if _, err := s.UpdateUser(ctx, "nobody", meta.UserUpdate{Disabled: &yes}); err == nil {
		t.Fatal("UpdateUser of a missing user succeeded")
	}
	if _, err := s.UpdateUser(ctx, "bob", meta.UserUpdate{Disabled: &yes}); err != nil {
		t.Fatal(err)
	}
	want(meta.TopicUser, "bob")
	if err := s.CreateAccessKey(ctx, meta.AccessKey{ID: "AK1", UserID: "alice", SecretEnc: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteAccessKey(ctx, "bob", "AK1"); err == nil {
		t.Fatal("deleting another user's key succeeded")
	}
	if err := s.DeleteAccessKey(ctx, "alice", "AK1"); err != nil {
		t.Fatal(err)
	}
	want(meta.TopicAccessKey, "AK1")

	// A write announces the changes its context carries when it commits.
	obj := meta.Change{Topic: meta.TopicObject, Key: meta.ObjectChangeKey("bob", "a:b/c")}
	actx := meta.WithAnnounce(ctx, []meta.Change{obj})
	if _, err := s.PutObjects(actx, []meta.Put{{Object: meta.Object{Bucket: "bob", Key: "a:b/c", BlobKey: "blob1", ModTime: time.Now()}}}); err != nil {
		t.Fatal(err)
	}
	want(obj.Topic, obj.Key)

	// Cut the listening connection: the listener says it is down and
	// Reset at once, reports the error, listens again, says Reset and
	// up, and delivers what follows.
	exec(t, db, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '"+
		postgres.ListenerApplicationName+"' AND datname = current_database()")
	wantUp(false)
	wait("Reset when the connection was cut", resets)
	wait("Reset after the connection was re-opened", resets)
	wantUp(true)
	select {
	case <-errs:
	default:
		t.Error("the cut was not reported to Error")
	}
	if err := s.CreateAccessKey(ctx, meta.AccessKey{ID: "AK2", UserID: "alice", SecretEnc: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteUser(ctx, "alice", false); err != nil {
		t.Fatal(err)
	}
	got := map[meta.Change]bool{}
	for range 2 {
		select {
		case c := <-changes:
			got[c] = true
		case <-time.After(10 * time.Second):
			t.Fatalf("DeleteUser announced only %v", got)
		}
	}
	if !got[meta.Change{Topic: meta.TopicUser, Key: "alice"}] || !got[meta.Change{Topic: meta.TopicAccessKey, Key: "AK2"}] {
		t.Errorf("DeleteUser announced %v, want the user and its key", got)
	}
}

// TestExpectChangeWaitsForEveryListener: the process that makes a change
// waits until every listening process handled it (here, one whose handler
// takes 300 ms), and no longer than its bound.
func TestExpectChangeWaitsForEveryListener(t *testing.T) {
	db := testbackend.SharedPostgres(t).CreateDatabase(t)
	a, b := open(t, db, postgres.Options{}), open(t, db, postgres.Options{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	handledByB := make(chan time.Time, 10)
	for _, l := range []struct {
		s    *postgres.Store
		slow bool
	}{{a, false}, {b, true}} {
		ready := make(chan struct{}, 1)
		go l.s.ListenChanges(ctx, meta.ChangeHandler{
			Changed: func(meta.Change) {
				if l.slow {
					time.Sleep(300 * time.Millisecond)
					handledByB <- time.Now()
				}
			},
			Reset: func() { ready <- struct{}{} },
		})
		<-ready
	}
	if err := a.CreateUser(ctx, meta.User{ID: "alice", Email: "alice@example.com", PasswordHash: "x"}, meta.Bucket{Name: "alice", OwnerID: "alice"}); err != nil {
		t.Fatal(err)
	}
	yes := true
	c := meta.Change{Topic: meta.TopicUser, Key: "alice"}
	wait, _ := a.ExpectChange(c)
	if _, err := a.UpdateUser(ctx, "alice", meta.UserUpdate{Disabled: &yes}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	wait(ctx, 10*time.Second)
	returned := time.Now()
	select {
	case at := <-handledByB:
		if returned.Before(at) {
			t.Errorf("wait returned %v before the slow listener handled the change", at.Sub(returned))
		}
	default:
		t.Errorf("wait returned after %v, before the slow listener handled the change", returned.Sub(start))
	}
	// Bounded: a change nobody announces is waited for max at most.
	wait, _ = a.ExpectChange(meta.Change{Topic: meta.TopicUser, Key: "nobody"})
	start = time.Now()
	wait(ctx, 100*time.Millisecond)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("wait for a change never made took %v", d)
	}
	// A store that does not listen does not wait.
	c2 := open(t, db, postgres.Options{})
	wait, _ = c2.ExpectChange(c)
	start = time.Now()
	wait(ctx, 10*time.Second)
	if d := time.Since(start); d > time.Second {
		t.Errorf("a store not listening waited %v", d)
	}
}

// TestExpectChangeOverlappingWrites: two nodes change one entry at
// overlapping times. A prepares to wait for its change (ExpectChange)
// before its write; B's change of the same entry commits first, and every
// listener handles and acknowledges it; then A's change commits, and
// listener C is slow to handle it (held for a second). A's wait must not
// return before C handled A's change, or A's client could read the old
// record from C's cache. When acknowledgements were matched by the
// payload topic:key, C's acknowledgement of B's change counted as its
// acknowledgement of A's, and A's wait returned at once.
func TestExpectChangeOverlappingWrites(t *testing.T) {
	db := testbackend.SharedPostgres(t).CreateDatabase(t)
	a, b, c := open(t, db, postgres.Options{}), open(t, db, postgres.Options{}), open(t, db, postgres.Options{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	change := meta.Change{Topic: meta.TopicUser, Key: "alice"}
	var seenByC atomic.Int32
	var handledByC atomic.Bool // A's change, by C
	holding, release := make(chan struct{}, 1), make(chan struct{})
	var releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
	for _, l := range []*postgres.Store{a, b, c} {
		ready := make(chan struct{}, 1)
		go l.ListenChanges(ctx, meta.ChangeHandler{
			Changed: func(got meta.Change) {
				if l != c || got != change {
					return
				}
				if seenByC.Add(1) == 2 { // A's change (B's came first)
					holding <- struct{}{}
					<-release
					handledByC.Store(true)
				}
			},
			Reset: func() {
				select {
				case ready <- struct{}{}:
				default:
				}
			},
		})
		<-ready
	}
	if err := a.CreateUser(ctx, meta.User{ID: "alice", Email: "alice@example.com", PasswordHash: "x"}, meta.Bucket{Name: "alice", OwnerID: "alice"}); err != nil {
		t.Fatal(err)
	}
	waitA, _ := a.ExpectChange(change)
	waitB, _ := b.ExpectChange(change)
	yes, no := true, false
	if _, err := b.UpdateUser(ctx, "alice", meta.UserUpdate{Disabled: &yes}); err != nil {
		t.Fatal(err)
	}
	waitB(ctx, 30*time.Second)
	if got := seenByC.Load(); got != 1 {
		t.Fatalf("B's wait returned when C had handled %d changes, want 1", got)
	}
	if _, err := a.UpdateUser(ctx, "alice", meta.UserUpdate{Disabled: &no}); err != nil {
		t.Fatal(err)
	}
	go func() {
		select {
		case <-holding:
		case <-ctx.Done():
		}
		time.Sleep(time.Second)
		releaseOnce.Do(func() { close(release) })
	}()
	waitA(ctx, 30*time.Second)
	if !handledByC.Load() {
		t.Error("A's wait returned before listener C handled A's change")
	}
}

// BenchmarkChangeWait is the cost of a write that waits for every
// listener (three listening stores on one database): ExpectChange, the
// write (an UpdateUser announcing one change), and the wait.
func BenchmarkChangeWait(b *testing.B) {
	db := testbackend.SharedPostgres(b).CreateDatabase(b)
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	var stores []*postgres.Store
	for range 3 {
		s := open(b, db, postgres.Options{})
		ready := make(chan struct{}, 1)
		go s.ListenChanges(ctx, meta.ChangeHandler{Reset: func() {
			select {
			case ready <- struct{}{}:
			default:
			}
		}})
		<-ready
		stores = append(stores, s)
	}
	s := stores[0]
	if err := s.CreateUser(ctx, meta.User{ID: "alice", Email: "alice@example.com", PasswordHash: "x"}, meta.Bucket{Name: "alice", OwnerID: "alice"}); err != nil {
		b.Fatal(err)
	}
	change := meta.Change{Topic: meta.TopicUser, Key: "alice"}
	b.ResetTimer()
	for i := range b.N {
		wait, _ := s.ExpectChange(change)
		on := i%2 == 0
		if _, err := s.UpdateUser(ctx, "alice", meta.UserUpdate{Disabled: &on}); err != nil {
			b.Fatal(err)
		}
		wait(ctx, 10*time.Second)
	}
}
