package auth_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/auth"
	"github.com/coffer-storage/coffer/internal/config"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/postgres"
	"github.com/coffer-storage/coffer/internal/meta/sqlite"
	"github.com/coffer-storage/coffer/internal/metacache"
	"github.com/coffer-storage/coffer/internal/testbackend"
)

func TestMain(m *testing.M) { testbackend.Main(m) }

var cheap = auth.Params{Memory: 8 * 1024, Time: 1}

func openSQLite(t testing.TB) auth.Stores {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "meta.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return auth.StoresOf(s.Stores())
}

// newService is the account service over m with the default
// configuration (config.Defaults()), cheap hashing, changed by change if
// not nil.
func newService(m auth.Stores, change func(*auth.Config)) *auth.Service {
	cfg := auth.ConfigFrom(config.Defaults())
	cfg.Params = cheap
	if change != nil {
		change(&cfg)
	}
	return auth.NewService(m, []byte("0123456789abcdef0123456789abcdef"), cfg)
}

const pw = "correct horse battery"

// account is a user signed up and logged in, with an S3 key.
type account struct {
	id      string
	email   string
	session auth.Session
	keyID   string
}

func signup(t *testing.T, s *auth.Service, email string) account {
	t.Helper()
	ctx := t.Context()
	u, _, err := s.Signups.Signup(ctx, email, pw)
	if err != nil {
		t.Fatal(err)
	}
	sess, err := s.Sessions.Login(ctx, email, pw, "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	k, err := s.Keys.CreateAccessKey(ctx, u.ID, auth.KeyOptions{Name: "k"})
	if err != nil {
		t.Fatal(err)
	}
	return account{id: u.ID, email: email, session: sess, keyID: k.ID}
}

func wantCode(t *testing.T, err error, want errcode.Code, what string) {
	t.Helper()
	if got := errcode.Of(err); got != want {
		t.Errorf("%s: err = %v (code %v), want %v", what, err, got, want)
	}
}

// TestDisableEnable: a disabled user's access token, refresh token, S3 key
// and login fail at once; enabling restores the login and the key, never
// the sessions of before. Three rounds, to catch ordering races.
func TestDisableEnable(t *testing.T) {
	s := newService(openSQLite(t), nil)
	ctx := t.Context()
	a := signup(t, s, "alice@example.com")
	other := signup(t, s, "bob@example.com")
	old := a.session
	for round := range 3 {
		// Warm the caches: everything works.
		if _, err := s.Sessions.Authenticate(ctx, a.session.AccessToken); err != nil {
			t.Fatalf("round %d: token before disable: %v", round, err)
		}
		if _, _, err := s.Keys.LookupKey(ctx, a.keyID); err != nil {
			t.Fatalf("round %d: key before disable: %v", round, err)
		}
		if _, err := s.Users.Disable(ctx, a.id); err != nil {
			t.Fatal(err)
		}
		_, err := s.Sessions.Authenticate(ctx, a.session.AccessToken)
		wantCode(t, err, errcode.Unauthenticated, "access token of a disabled user")
		_, _, err = s.Keys.LookupKey(ctx, a.keyID)
		wantCode(t, err, errcode.NotFound, "S3 key of a disabled user")
		_, err = s.Sessions.Refresh(ctx, a.session.RefreshToken)
		wantCode(t, err, errcode.Unauthenticated, "refresh token of a disabled user")
		_, err = s.Sessions.Login(ctx, a.email, pw, "192.0.2.1")
		wantCode(t, err, errcode.Unauthenticated, "login of a disabled user")
		// Others are untouched.
		if _, err := s.Sessions.Authenticate(ctx, other.session.AccessToken); err != nil {
			t.Errorf("another user's token: %v", err)
		}
		if _, _, err := s.Keys.LookupKey(ctx, other.keyID); err != nil {
			t.Errorf("another user's key: %v", err)
		}
		if _, err := s.Users.Enable(ctx, a.id); err != nil {
			t.Fatal(err)
		}
		for name, tok := range map[string]string{"this round's": a.session.AccessToken, "the first": old.AccessToken} {
			_, err = s.Sessions.Authenticate(ctx, tok)
			wantCode(t, err, errcode.Unauthenticated, name+" access token after enable")
		}
		_, err = s.Sessions.Refresh(ctx, a.session.RefreshToken)
		wantCode(t, err, errcode.Unauthenticated, "refresh token after enable")
		if _, _, err := s.Keys.LookupKey(ctx, a.keyID); err != nil {
			t.Errorf("round %d: S3 key after enable: %v", round, err)
		}
		a.session, err = s.Sessions.Login(ctx, a.email, pw, "192.0.2.1")
		if err != nil {
			t.Fatalf("round %d: login after enable: %v", round, err)
		}
		if _, err := s.Sessions.Authenticate(ctx, a.session.AccessToken); err != nil {
			t.Errorf("round %d: new token after enable: %v", round, err)
		}
	}
}

// TestPasswordChange: the change ends every other session (and the
// caller's old tokens) and returns a working one; the old password stops
// working; a wrong old password is refused and counts as a failed login.
func TestPasswordChange(t *testing.T) {
	s := newService(openSQLite(t), func(c *auth.Config) { c.Logins.PerPair = 3 })
	ctx := t.Context()
	a := signup(t, s, "alice@example.com")
	second, err := s.Sessions.Login(ctx, a.email, pw, "192.0.2.2")
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := s.Users.ChangePassword(ctx, a.id, pw, "a new password", "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Sessions.Authenticate(ctx, fresh.AccessToken); err != nil {
		t.Errorf("the session returned by the change: %v", err)
	}
	for name, sess := range map[string]auth.Session{"the caller's old": a.session, "another": second} {
		_, err := s.Sessions.Authenticate(ctx, sess.AccessToken)
		wantCode(t, err, errcode.Unauthenticated, name+" access token")
		_, err = s.Sessions.Refresh(ctx, sess.RefreshToken)
		wantCode(t, err, errcode.Unauthenticated, name+" refresh token")
	}
	if _, err := s.Sessions.Refresh(ctx, fresh.RefreshToken); err != nil {
		t.Errorf("refreshing the new session: %v", err)
	}
	_, err = s.Sessions.Login(ctx, a.email, pw, "192.0.2.1")
	wantCode(t, err, errcode.Unauthenticated, "login with the old password")
	if _, err := s.Sessions.Login(ctx, a.email, "a new password", "192.0.2.1"); err != nil {
		t.Errorf("login with the new password: %v", err)
	}
	_, err = s.Users.ChangePassword(ctx, a.id, "wrong password", "another one", "192.0.2.1")
	wantCode(t, err, errcode.Unauthenticated, "change with a wrong old password")
	_, err = s.Users.ChangePassword(ctx, a.id, "a new password", "short", "192.0.2.1")
	wantCode(t, err, errcode.InvalidArgument, "change to a too short password")
	for range 3 {
		s.Users.ChangePassword(ctx, a.id, "wrong password", "another one", "192.0.2.1")
	}
	_, err = s.Sessions.Login(ctx, a.email, "a new password", "192.0.2.1")
	wantCode(t, err, errcode.RateLimited, "login after wrong old passwords reached the account's limit")
}

// TestAdminReset: a reset ends the user's sessions; the new password
// works, the old one does not.
func TestAdminReset(t *testing.T) {
	s := newService(openSQLite(t), nil)
	ctx := t.Context()
	a := signup(t, s, "alice@example.com")
	if _, err := s.Users.SetPassword(ctx, a.id, "set by an admin"); err != nil {
		t.Fatal(err)
	}
	_, err := s.Sessions.Authenticate(ctx, a.session.AccessToken)
	wantCode(t, err, errcode.Unauthenticated, "access token after a reset")
	_, err = s.Sessions.Refresh(ctx, a.session.RefreshToken)
	wantCode(t, err, errcode.Unauthenticated, "refresh token after a reset")
	_, err = s.Sessions.Login(ctx, a.email, pw, "192.0.2.1")
	wantCode(t, err, errcode.Unauthenticated, "the old password after a reset")
	if _, err := s.Sessions.Login(ctx, a.email, "set by an admin", "192.0.2.1"); err != nil {
		t.Errorf("the new password: %v", err)
	}
}

// TestDeleteUser: a deleted user's token and key fail at once.
func TestDeleteUser(t *testing.T) {
	s := newService(openSQLite(t), nil)
	ctx := t.Context()
	a := signup(t, s, "alice@example.com")
	s.Sessions.Authenticate(ctx, a.session.AccessToken)
	s.Keys.LookupKey(ctx, a.keyID)
	_, err := s.Users.DeleteAccount(ctx, a.id, "wrong password", false, "192.0.2.1")
	wantCode(t, err, errcode.Unauthenticated, "DeleteAccount with a wrong password")
	if _, err := s.Users.DeleteAccount(ctx, a.id, pw, false, "192.0.2.1"); err != nil {
		t.Fatal(err)
	}
	_, err = s.Sessions.Authenticate(ctx, a.session.AccessToken)
	wantCode(t, err, errcode.Unauthenticated, "access token of a deleted user")
	_, _, err = s.Keys.LookupKey(ctx, a.keyID)
	wantCode(t, err, errcode.NotFound, "S3 key of a deleted user")
}

// TestOtherNode: two services ("nodes") on one PostgreSQL store. With the
// store's announcements wired to node B, B refuses a user disabled
// through node A although its cache would keep the user for an hour (only
// the announcement can have told it); with them off (a lost notification),
// B's cached state still expires within the TTL, the documented bound: no
// check B starts after the TTL accepts the user. Nothing here depends on
// how fast the machine is.
func TestOtherNode(t *testing.T) {
	db := testbackend.SharedPostgres(t).CreateDatabase(t)
	openPG := func() *postgres.Store {
		s, err := postgres.Open(context.Background(), db, postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	ctx := t.Context()
	for _, listen := range []bool{true, false} {
		name := map[bool]string{true: "notifications", false: "no notifications"}[listen]
		t.Run(name, func(t *testing.T) {
			ttl := time.Second
			if listen {
				ttl = time.Hour
			}
			pgB := openPG()
			busB := metacache.NewBus()
			nodeA := newService(auth.StoresOf(openPG().Stores()), nil)
			nodeB := newService(auth.StoresOf(pgB.Stores()), func(c *auth.Config) { c.Bus, c.Cache = busB, metacache.Options{TTL: ttl} })
			if listen {
				lctx, stop := context.WithCancel(ctx)
				listening := make(chan struct{}, 1)
				h := busB.Handler(nil)
				reset := h.Reset
				h.Reset = func() { reset(); listening <- struct{}{} }
				done := make(chan struct{})
				go func() { defer close(done); pgB.ListenChanges(lctx, h) }()
				t.Cleanup(func() { stop(); <-done })
				<-listening
			}
			a := signup(t, nodeA, strings.ReplaceAll(name, " ", "-")+"@example.com")
			for round := range 3 {
				if _, err := nodeB.Sessions.Authenticate(ctx, a.session.AccessToken); err != nil {
					t.Fatalf("round %d: B before disable: %v", round, err)
				}
				if _, _, err := nodeB.Keys.LookupKey(ctx, a.keyID); err != nil {
					t.Fatalf("round %d: B's key lookup before disable: %v", round, err)
				}
				warmed := time.Now()
				if _, err := nodeA.Users.Disable(ctx, a.id); err != nil {
					t.Fatal(err)
				}
				// The entries B holds were loaded before warmed, so they
				// expire by warmed+ttl: a check started later must refuse.
				// (With notifications, ttl is an hour: the test's own
				// timeout is the bound.)
				var took time.Duration
				for {
					checked := time.Now()
					_, err := nodeB.Sessions.Authenticate(ctx, a.session.AccessToken)
					_, _, kerr := nodeB.Keys.LookupKey(ctx, a.keyID)
					if err != nil && kerr != nil {
						wantCode(t, err, errcode.Unauthenticated, "B's token check")
						wantCode(t, kerr, errcode.NotFound, "B's key lookup")
						took = time.Since(warmed)
						break
					}
					if checked.Sub(warmed) > ttl {
						t.Fatalf("round %d: B accepts the disabled user in a check started %v after its cache was warmed (TTL %v)", round, checked.Sub(warmed), ttl)
					}
					time.Sleep(5 * time.Millisecond)
				}
				t.Logf("round %d: B refused the disabled user %v after warming", round, took)
				if _, err := nodeA.Users.Enable(ctx, a.id); err != nil {
					t.Fatal(err)
				}
				sess, err := nodeA.Sessions.Login(ctx, a.email, pw, "192.0.2.1")
				if err != nil {
					t.Fatal(err)
				}
				a.session = sess
				// B sees the enable within the TTL too.
				enabled := time.Now()
				for {
					checked := time.Now()
					if _, err := nodeB.Sessions.Authenticate(ctx, a.session.AccessToken); err == nil {
						break
					} else if checked.Sub(enabled) > ttl {
						t.Fatalf("round %d: B refuses the enabled user's new token in a check started %v after the enable: %v", round, checked.Sub(enabled), err)
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
		})
	}
}

// BenchmarkAccountCheck compares what every authenticated request now
// does (a cached state check) with what an uncached check costs (a
// GetUser on SQLite), and the S3 key lookup before (a GetAccessKey and a
// decryption per request) and after (two cache hits).
func BenchmarkAccountCheck(b *testing.B) {
	m := openSQLite(b)
	s := newService(m, nil)
	ctx := context.Background()
	u, _, err := s.Signups.Signup(ctx, "alice@example.com", pw)
	if err != nil {
		b.Fatal(err)
	}
	sess, err := s.Sessions.Login(ctx, "alice@example.com", pw, "192.0.2.1")
	if err != nil {
		b.Fatal(err)
	}
	k, err := s.Keys.CreateAccessKey(ctx, u.ID, auth.KeyOptions{Name: "k"})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("Authenticate/cached", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Sessions.Authenticate(ctx, sess.AccessToken); err != nil {
				b.Fatal(err)
			}
		}
	})
	tokens := auth.NewTokens(auth.DeriveKey([]byte("0123456789abcdef0123456789abcdef"), "access-token"), 0)
	b.Run("VerifyJWT/only", func(b *testing.B) { // Authenticate minus the account check
		for b.Loop() {
			if _, _, err := tokens.Verify(sess.AccessToken); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("GetUser/uncached", func(b *testing.B) {
		for b.Loop() {
			if _, err := m.GetUser(ctx, u.ID); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("LookupKey/cached", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := s.Keys.LookupKey(ctx, k.ID); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("GetAccessKey/uncached", func(b *testing.B) {
		for b.Loop() {
			if _, err := m.GetAccessKey(ctx, k.ID); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// countingAccounts counts the reads of user rows.
type countingAccounts struct {
	meta.Accounts
	getUser atomic.Int64
}

func (c *countingAccounts) GetUser(ctx context.Context, id string) (meta.User, error) {
	c.getUser.Add(1)
	return c.Accounts.GetUser(ctx, id)
}

// TestRefreshReadsNoUser: a refresh reads no user row (the rotation judged
// the account in its transaction: meta.Sessions' contract), and still
// fails for a disabled user (TestDisableEnable checks that in full).
func TestRefreshReadsNoUser(t *testing.T) {
	m := openSQLite(t)
	counted := &countingAccounts{Accounts: m.Accounts}
	m.Accounts = counted
	s := newService(m, nil)
	ctx := t.Context()
	a := signup(t, s, "alice@example.com")
	sess := a.session
	before := counted.getUser.Load()
	for range 10 {
		next, err := s.Sessions.Refresh(ctx, sess.RefreshToken)
		if err != nil {
			t.Fatal(err)
		}
		if next.UserID != a.id {
			t.Fatalf("refreshed as %q, want %q", next.UserID, a.id)
		}
		sess = next
	}
	if n := counted.getUser.Load() - before; n != 0 {
		t.Errorf("10 refreshes read the user's row %d times, want 0", n)
	}
	if _, err := s.Users.Disable(ctx, a.id); err != nil {
		t.Fatal(err)
	}
	_, err := s.Sessions.Refresh(ctx, sess.RefreshToken)
	wantCode(t, err, errcode.Unauthenticated, "refresh of a disabled user")
}

// BenchmarkRefresh: one token rotation (SQLite, a durable commit) and the
// new access token, with -benchmem.
func BenchmarkRefresh(b *testing.B) {
	m := openSQLite(b)
	s := newService(m, nil)
	ctx := context.Background()
	if _, _, err := s.Signups.Signup(ctx, "alice@example.com", pw); err != nil {
		b.Fatal(err)
	}
	sess, err := s.Sessions.Login(ctx, "alice@example.com", pw, "192.0.2.1")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if sess, err = s.Sessions.Refresh(ctx, sess.RefreshToken); err != nil {
			b.Fatal(err)
		}
	}
}
