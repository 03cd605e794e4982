package auth

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/config"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/sqlite"
)

// newTestService returns a Service on a fresh SQLite store, with cheap
// hashing, its throttles and its own clock on c.
func newTestService(t *testing.T, change func(*Config)) (*Service, *clock) {
	t.Helper()
	cfg := ConfigFrom(config.Defaults())
	if change != nil {
		change(&cfg)
	}
	m, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "meta.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	cfg.Params = testParams
	s := NewService(StoresOf(m.Stores()), []byte("master key for tests"), cfg)
	c := newClock()
	s.core.now = c.now
	s.core.logins.setClock(c.now)
	if s.Signups.signups != nil {
		s.Signups.signups.now = c.now
	}
	return s, c
}

// wantRefusal fails unless err has code and, if reason is not "",
// Detail["reason"] reason.
func wantRefusal(t *testing.T, err error, code errcode.Code, reason, what string) {
	t.Helper()
	if got := errcode.Of(err); got != code {
		t.Fatalf("%s: err = %v (code %v), want code %v", what, err, got, code)
	}
	if reason == "" {
		return
	}
	if got := errcode.As(err).Detail["reason"]; got != reason {
		t.Fatalf("%s: reason = %v, want %s", what, got, reason)
	}
}

func signupReq(email, code, ip string) SignupRequest {
	return SignupRequest{Email: email, Password: "correct horse battery", InviteCode: code, ClientIP: ip}
}

func TestSignupPolicies(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		policy SignupPolicy
		// what a signup without a code, with a good code and with a bad
		// code gets ("" = success)
		plain, good, bad string
	}{
		{SignupOpen, "", "", "invite_invalid"},
		{SignupInvite, "invite_required", "", "invite_invalid"},
		{SignupClosed, "signup_closed", "signup_closed", "signup_closed"},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			s, _ := newTestService(t, func(c *Config) { c.Signup, c.SignupLimit = tc.policy, 0 })
			_, code, err := s.Signups.CreateInvite(ctx, InviteRequest{Uses: 10})
			if err != nil {
				t.Fatal(err)
			}
			for i, try := range []struct{ code, want string }{{"", tc.plain}, {code, tc.good}, {"not-a-code", tc.bad}} {
				email := fmt.Sprintf("user%d@example.com", i)
				u, b, err := s.Signups.SelfSignup(ctx, signupReq(email, try.code, "192.0.2.1"))
				if try.want != "" {
					wantRefusal(t, err, errcode.PermissionDenied, try.want, fmt.Sprintf("signup with code %q", try.code))
					if _, err := s.core.meta.GetUserByEmail(ctx, email); !errcode.Is(err, errcode.NotFound) {
						t.Errorf("refused signup created the account: %v", err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("signup with code %q: %v", try.code, err)
				}
				if u.Email != email || b.OwnerID != u.ID {
					t.Errorf("signup = %+v, %+v", u, b)
				}
			}
			// Administrators and the CLI create accounts whatever the policy.
			if _, _, err := s.Signups.Signup(ctx, "by-admin@example.com", "correct horse battery"); err != nil {
				t.Errorf("Signup under %s: %v", tc.policy, err)
			}
		})
	}
}

// TestInviteInvalidIsOneAnswer: unknown, expired, used up, revoked and
// bound-to-another-email invites all get the same error, and none creates
// an account or takes a use.
func TestInviteInvalidIsOneAnswer(t *testing.T) {
	ctx := context.Background()
	s, c := newTestService(t, func(c *Config) { c.Signup, c.SignupLimit = SignupInvite, 0 })
	mk := func(req InviteRequest) (meta.Invite, string) {
		t.Helper()
		inv, code, err := s.Signups.CreateInvite(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return inv, code
	}
	_, expired := mk(InviteRequest{TTL: time.Hour})
	_, usedUp := mk(InviteRequest{})
	if _, _, err := s.Signups.SelfSignup(ctx, signupReq("first@example.com", usedUp, "192.0.2.1")); err != nil {
		t.Fatal(err)
	}
	revokedInv, revoked := mk(InviteRequest{Uses: 5})
	if err := s.Signups.RevokeInvite(ctx, revokedInv.ID); err != nil {
		t.Fatal(err)
	}
	_, bound := mk(InviteRequest{Email: "Invited@Example.com"})
	c.advance(time.Hour)

	var first *errcode.Error
	for name, code := range map[string]string{
		"unknown": "no-such-code", "expired": expired, "used up": usedUp, "revoked": revoked, "other email": bound,
	} {
		_, _, err := s.Signups.SelfSignup(ctx, signupReq("stranger@example.com", code, "192.0.2.1"))
		wantRefusal(t, err, errcode.PermissionDenied, "invite_invalid", name)
		e := errcode.As(err)
		if first == nil {
			first = e
		} else if e.Message != first.Message {
			t.Errorf("%s: message %q, want the same as every other invalid invite: %q", name, e.Message, first.Message)
		}
	}
	if _, err := s.core.meta.GetUserByEmail(ctx, "stranger@example.com"); !errcode.Is(err, errcode.NotFound) {
		t.Errorf("an invalid invite created the account: %v", err)
	}
	// The bound email itself may redeem it (normalised).
	if _, _, err := s.Signups.SelfSignup(ctx, signupReq("invited@example.COM", bound, "192.0.2.1")); err != nil {
		t.Errorf("bound email: %v", err)
	}
	invs, err := s.Signups.ListInvites(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, inv := range invs {
		if inv.ID == revokedInv.ID && inv.UsesLeft != 5 {
			t.Errorf("revoked invite: %d uses left, want 5", inv.UsesLeft)
		}
	}
}

func TestCreateInviteBounds(t *testing.T) {
	s, c := newTestService(t, nil)
	for _, tc := range []struct {
		name string
		req  InviteRequest
		ok   bool
	}{
		{"Defaults", InviteRequest{}, true},
		{"MultiUse", InviteRequest{Uses: 50, TTL: time.Hour, Email: "a@example.com"}, true},
		{"NegativeUses", InviteRequest{Uses: -1}, false},
		{"TooManyUses", InviteRequest{Uses: MaxInviteUses + 1}, false},
		{"NegativeTTL", InviteRequest{TTL: -time.Hour}, false},
		{"TooLong", InviteRequest{TTL: MaxInviteTTL + time.Hour}, false},
		{"BadEmail", InviteRequest{Email: "not an email"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inv, code, err := s.Signups.CreateInvite(context.Background(), tc.req)
			if !tc.ok {
				wantRefusal(t, err, errcode.InvalidArgument, "", "CreateInvite")
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if code == "" || inv.Hash != HashToken(code) {
				t.Errorf("code %q does not hash to the stored %q", code, inv.Hash)
			}
			wantUses, wantTTL := max(tc.req.Uses, 1), tc.req.TTL
			if wantTTL == 0 {
				wantTTL = 7 * 24 * time.Hour
			}
			if got := inv.ExpiresAt.Sub(c.now()); got != wantTTL {
				t.Errorf("expires in %v, want %v", got, wantTTL)
			}
			if inv.Uses != wantUses || inv.UsesLeft != wantUses {
				t.Errorf("uses %d/%d, want %d", inv.UsesLeft, inv.Uses, wantUses)
			}
		})
	}
}

// TestConcurrentSingleUseInvite: of many signups racing on a single-use
// code, exactly one gets an account.
func TestConcurrentSingleUseInvite(t *testing.T) {
	ctx := context.Background()
	s, _ := newTestService(t, func(c *Config) { c.Signup, c.SignupLimit = SignupInvite, 0 })
	_, code, err := s.Signups.CreateInvite(ctx, InviteRequest{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, _, errs[i] = s.Signups.SelfSignup(ctx, signupReq(fmt.Sprintf("racer%d@example.com", i), code, "192.0.2.1"))
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
	if won != 1 {
		t.Errorf("%d signups redeemed a single-use invite, want 1", won)
	}
}

func TestSignupThrottle(t *testing.T) {
	ctx := context.Background()
	s, c := newTestService(t, nil) // the default: 5 per hour
	h := s.Hasher()
	for i := range 5 {
		if _, _, err := s.Signups.SelfSignup(ctx, signupReq(fmt.Sprintf("a%d@example.com", i), "", "192.0.2.1")); err != nil {
			t.Fatalf("signup %d: %v", i+1, err)
		}
	}
	hashed := h.Stats().Hashed
	_, _, err := s.Signups.SelfSignup(ctx, signupReq("a5@example.com", "", "192.0.2.1"))
	wantRefusal(t, err, errcode.RateLimited, "", "6th signup from one address")
	if ra := errcode.As(err).RetryAfter; ra <= 0 || ra > time.Hour {
		t.Errorf("Retry-After %v, want within the hour", ra)
	}
	if got := h.Stats().Hashed; got != hashed {
		t.Errorf("the refused signup hashed its password (%d hashes, want %d)", got, hashed)
	}
	// IPv6 by /64.
	for i := range 5 {
		if _, _, err := s.Signups.SelfSignup(ctx, signupReq(fmt.Sprintf("b%d@example.com", i), "", fmt.Sprintf("2001:db8::%d", i+1))); err != nil {
			t.Fatalf("IPv6 signup %d: %v", i+1, err)
		}
	}
	_, _, err = s.Signups.SelfSignup(ctx, signupReq("b5@example.com", "", "2001:db8::ffff:1"))
	wantRefusal(t, err, errcode.RateLimited, "", "6th signup from one /64")
	// Another address is fine; the CLI and admins are not throttled.
	if _, _, err := s.Signups.SelfSignup(ctx, signupReq("c@example.com", "", "192.0.2.2")); err != nil {
		t.Errorf("signup from another address: %v", err)
	}
	if _, _, err := s.Signups.Signup(ctx, "admin-made@example.com", "correct horse battery"); err != nil {
		t.Errorf("Signup (admin/CLI): %v", err)
	}
	// Attempts that fail for the client's reasons count too: a taken email.
	for range 4 {
		_, _, err := s.Signups.SelfSignup(ctx, signupReq("c@example.com", "", "192.0.2.2"))
		wantRefusal(t, err, errcode.AlreadyExists, "", "taken email")
	}
	_, _, err = s.Signups.SelfSignup(ctx, signupReq("d@example.com", "", "192.0.2.2"))
	wantRefusal(t, err, errcode.RateLimited, "", "after probing taken emails")
	// An hour later the address may sign up again.
	c.advance(time.Hour)
	if _, _, err := s.Signups.SelfSignup(ctx, signupReq("a5@example.com", "", "192.0.2.1")); err != nil {
		t.Errorf("signup an hour later: %v", err)
	}

	// Off.
	off, _ := newTestService(t, func(c *Config) { c.SignupLimit = 0 })
	for i := range 20 {
		if _, _, err := off.Signups.SelfSignup(ctx, signupReq(fmt.Sprintf("e%d@example.com", i), "", "192.0.2.1")); err != nil {
			t.Fatalf("unlimited, signup %d: %v", i+1, err)
		}
	}
}

// TestSignupThrottleNotChargedForServerErrors: a signup the server could
// not serve (hashing pool busy, request cancelled) is not counted.
func TestSignupThrottleNotChargedForServerErrors(t *testing.T) {
	s, _ := newTestService(t, func(c *Config) { c.SignupLimit = 1 })
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for range 3 {
		// Fill the pool so the hash must wait, then find the context done.
		s.core.hasher.sem <- struct{}{}
		_, _, err := s.Signups.SelfSignup(cancelled, signupReq("a@example.com", "", "192.0.2.1"))
		<-s.core.hasher.sem
		if err == nil || errcode.Is(err, errcode.RateLimited) {
			t.Fatalf("signup with a cancelled context: %v", err)
		}
	}
	if _, _, err := s.Signups.SelfSignup(context.Background(), signupReq("a@example.com", "", "192.0.2.1")); err != nil {
		t.Errorf("first served signup: %v", err)
	}
}

func TestLoginStrangerCannotLockOwner(t *testing.T) {
	ctx := context.Background()
	s, _ := newTestService(t, nil)
	if _, _, err := s.Signups.Signup(ctx, "owner@example.com", "correct horse battery"); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		_, err := s.Sessions.Login(ctx, "owner@example.com", fmt.Sprintf("guess %d!", i), "198.51.100.7")
		wantRefusal(t, err, errcode.Unauthenticated, "", "wrong password")
	}
	_, err := s.Sessions.Login(ctx, "owner@example.com", "correct horse battery", "198.51.100.7")
	wantRefusal(t, err, errcode.RateLimited, "", "right password from the stranger's address")
	if errcode.As(err).RetryAfter <= 0 {
		t.Error("429 without Retry-After")
	}
	if _, err := s.Sessions.Login(ctx, "owner@example.com", "correct horse battery", "203.0.113.9"); err != nil {
		t.Errorf("the owner from their own address: %v", err)
	}
}

// TestLoginNoEnumeration: an unknown account and a wrong password get the
// same error, and both cost one password hash.
func TestLoginNoEnumeration(t *testing.T) {
	ctx := context.Background()
	s, _ := newTestService(t, nil)
	if _, _, err := s.Signups.Signup(ctx, "known@example.com", "correct horse battery"); err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, email := range []string{"known@example.com", "unknown@example.com"} {
		before := s.Hasher().Stats().Hashed
		_, err := s.Sessions.Login(ctx, email, "wrong password", "192.0.2.1")
		wantRefusal(t, err, errcode.Unauthenticated, "", email)
		msgs = append(msgs, errcode.Message(err))
		if got := s.Hasher().Stats().Hashed - before; got != 1 {
			t.Errorf("%s: %d hashes, want 1", email, got)
		}
	}
	if msgs[0] != msgs[1] {
		t.Errorf("wrong password says %q, unknown account says %q", msgs[0], msgs[1])
	}
	// Throttled alike too.
	for _, email := range []string{"known@example.com", "unknown@example.com"} {
		for range 10 {
			s.Sessions.Login(ctx, email, "wrong password", "192.0.2.2")
		}
		_, err := s.Sessions.Login(ctx, email, "wrong password", "192.0.2.2")
		wantRefusal(t, err, errcode.RateLimited, "", email+" 11th attempt")
	}
}

// TestVerifyCounted: the helper other password checks use counts as a
// login attempt.
func TestVerifyCounted(t *testing.T) {
	ctx := context.Background()
	s, _ := newTestService(t, nil)
	u, _, err := s.Signups.Signup(ctx, "me@example.com", "correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Sessions.verifyCounted(ctx, "Me@Example.com", "correct horse battery", "192.0.2.1")
	if err != nil || got.ID != u.ID {
		t.Fatalf("verifyCounted = %+v, %v", got, err)
	}
	for range 10 {
		_, err := s.Sessions.verifyCounted(ctx, "me@example.com", "wrong password", "192.0.2.1")
		wantRefusal(t, err, errcode.Unauthenticated, "", "wrong password")
	}
	_, err = s.Sessions.Login(ctx, "me@example.com", "correct horse battery", "192.0.2.1")
	wantRefusal(t, err, errcode.RateLimited, "", "login after 10 failed password checks")
}
