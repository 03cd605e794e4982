package auth

import (
	"context"
	"fmt"
	"time"

	"github.com/coffer-storage/coffer/internal/audit"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// SignupPolicy says who may create an account through SelfSignup.
type SignupPolicy string

// Signup policies.
const (
	SignupOpen   SignupPolicy = "open"   // anyone who reaches the API
	SignupInvite SignupPolicy = "invite" // with an invite code an administrator made
	SignupClosed SignupPolicy = "closed" // nobody: administrators create accounts
)

// ParseSignupPolicy parses "open", "invite" or "closed".
func ParseSignupPolicy(s string) (SignupPolicy, error) {
	switch p := SignupPolicy(s); p {
	case SignupOpen, SignupInvite, SignupClosed:
		return p, nil
	}
	return "", fmt.Errorf("signup policy %q is not open, invite or closed", s)
}

// SignupRequest is a self-service signup.
type SignupRequest struct {
	Email, Password string
	// InviteCode is required under SignupInvite. Under SignupOpen it is
	// optional, and if given it is checked and redeemed all the same (a
	// bad code is refused, never silently ignored).
	InviteCode string
	// ClientIP keys the per-address signup throttle.
	ClientIP string
}

func refusal(code errcode.Code, reason, format string, args ...any) error {
	e := errcode.As(errcode.New(code, format, args...))
	e.Detail = map[string]any{"reason": reason}
	return e
}

// ErrSignupClosed is the error of a self-service signup under
// SignupClosed: PermissionDenied, Detail["reason"] = "signup_closed".
func ErrSignupClosed() error {
	return refusal(errcode.PermissionDenied, "signup_closed", "signup is closed on this server; ask an administrator for an account")
}

// ErrInviteRequired is the error of a self-service signup without an
// invite code under SignupInvite: PermissionDenied, Detail["reason"] =
// "invite_required".
func ErrInviteRequired() error {
	return refusal(errcode.PermissionDenied, "invite_required", "signup on this server needs an invite_code from an administrator")
}

// Signups creates accounts through the public API under the signup
// policy (with its per-address throttle), and for administrators and the
// CLI; and makes, lists and revokes invites.
type Signups struct {
	*core
	signups *Throttle // nil: unlimited
}

func newSignups(c *core) *Signups {
	s := &Signups{core: c}
	if c.cfg.SignupLimit > 0 {
		s.signups = NewThrottle(c.cfg.SignupLimit, c.cfg.SignupWindow)
	}
	return s
}

// Signup creates an account and its default bucket, whatever the signup
// policy and unthrottled: it is for administrators and the CLI. The
// public route calls SelfSignup.
func (s *Signups) Signup(ctx context.Context, email, password string) (meta.User, meta.Bucket, error) {
	u, b, err := s.createUser(ctx, email, password, false, s.cfg.DefaultQuota)
	s.audit(ctx, audit.Event{Action: audit.Signup, Target: audit.Target{User: u.ID, Email: NormalizeEmail(email)}}, err)
	return u, b, err
}

// SelfSignup creates an account through the public API, under the
// server's signup policy. In order, each refusal changing nothing:
//
//  1. SignupClosed: ErrSignupClosed.
//  2. An invalid email or password: InvalidArgument.
//  3. The per-address throttle (SignupLimit per SignupWindow) counts the
//     attempt, before anything costs: RateLimited with a Retry-After when
//     the address is at its limit. Attempts that fail later count too
//     (probing emails or codes is not free); only one that fails for the
//     server's reasons (hashing pool busy) is given back.
//  4. SignupInvite without a code: ErrInviteRequired. A code (under any
//     policy) that is not redeemable by this email: meta.ErrInviteInvalid,
//     checked before the email, so that those without a valid invite
//     learn nothing about which emails have accounts.
//  5. A taken email: AlreadyExists.
//
// The invite's use is taken in the transaction that creates the account
// (meta.Accounts.CreateInvitedUser), so concurrent signups can never redeem
// more uses than it has.
func (s *Signups) SelfSignup(ctx context.Context, req SignupRequest) (u meta.User, b meta.Bucket, err error) {
	defer func() {
		if s.cfg.Audit == nil {
			return
		}
		email := auditEmail(NormalizeEmail(req.Email))
		e := audit.Event{Action: audit.Signup, Actor: audit.Anonymous(email), Target: audit.Target{User: u.ID, Email: email}}
		if err == nil {
			e.Actor = audit.Actor{Type: audit.ActorUser, ID: u.ID, Name: email}
		}
		e = e.Result(err)
		if err == nil {
			e.Reason = audit.ReasonSelf
			if req.InviteCode != "" {
				e.Reason = audit.ReasonInvite
			}
		}
		s.cfg.Audit.Log(ctx, e)
	}()
	if s.cfg.Signup == SignupClosed {
		return meta.User{}, meta.Bucket{}, ErrSignupClosed()
	}
	email := NormalizeEmail(req.Email)
	if err := validEmail(email); err != nil {
		return meta.User{}, meta.Bucket{}, err
	}
	if err := validPassword(req.Password); err != nil {
		return meta.User{}, meta.Bucket{}, err
	}
	addr := IPKey(req.ClientIP)
	var shared bool
	if s.signups != nil {
		var wait time.Duration
		wait, shared = s.takeSignup(ctx, addr)
		if wait > 0 {
			return meta.User{}, meta.Bucket{}, errcode.Retry(errcode.RateLimited, wait, "too many signups from this address; retry later")
		}
	}
	u, b, err = s.selfSignup(ctx, email, req.Password, req.InviteCode)
	if err != nil && s.signups != nil && !clientsFault(err) {
		if shared {
			s.shared.update(ctx, s.signups.now(), []string{"signup:" + textKey(addr)}, func(st []meta.ThrottleState) []meta.ThrottleState {
				release(&st[0])
				return st
			})
		} else {
			s.signups.Release(addr)
		}
	}
	return u, b, err
}

// takeSignup counts a signup from addr: in the shared store when there is
// one (shared true), every node's together, else in this node's throttle.
func (s *Signups) takeSignup(ctx context.Context, addr string) (wait time.Duration, shared bool) {
	now := s.signups.now()
	if s.shared.update(ctx, now, []string{"signup:" + textKey(addr)}, func(st []meta.ThrottleState) []meta.ThrottleState {
		if wait = s.signups.take(&st[0], now); wait > 0 {
			return nil
		}
		return st
	}) {
		return wait, true
	}
	return s.signups.Take(addr), false
}

func (s *Signups) selfSignup(ctx context.Context, email, password, code string) (meta.User, meta.Bucket, error) {
	if code == "" {
		if s.cfg.Signup == SignupInvite {
			return meta.User{}, meta.Bucket{}, ErrInviteRequired()
		}
		return s.createAccount(ctx, email, password, "", false, s.cfg.DefaultQuota)
	}
	hash := HashToken(code)
	inv, err := s.meta.GetInviteByHash(ctx, hash)
	if errcode.Is(err, errcode.NotFound) || err == nil && !inv.Redeemable(email, s.now()) {
		return meta.User{}, meta.Bucket{}, meta.ErrInviteInvalid()
	}
	if err != nil {
		return meta.User{}, meta.Bucket{}, err
	}
	return s.createAccount(ctx, email, password, hash, false, s.cfg.DefaultQuota)
}

// clientsFault reports whether a failed signup was the client's doing
// (and stays counted) rather than the server's.
func clientsFault(err error) bool {
	switch errcode.Of(err) {
	case errcode.InvalidArgument, errcode.AlreadyExists, errcode.PermissionDenied:
		return true
	}
	return false
}

// Invite limits.
const (
	DefaultInviteTTL = 7 * 24 * time.Hour
	MaxInviteTTL     = 366 * 24 * time.Hour
	MaxInviteUses    = 100_000
)

// InviteRequest describes an invite to create. Zero values take the
// defaults noted.
type InviteRequest struct {
	Email     string        // only this email may redeem it; default any
	TTL       time.Duration // default 7 days, at most MaxInviteTTL
	Uses      int           // signups it allows; default 1, at most MaxInviteUses
	CreatedBy string        // the administrator's user ID; "" for the CLI
}

// CreateInvite makes an invite and returns it with its code. The code is
// shown only now: the store keeps its SHA-256 (like refresh tokens).
// Checking that the caller is an administrator is the caller's job (the
// admin routes, the CLI).
func (s *Signups) CreateInvite(ctx context.Context, req InviteRequest) (meta.Invite, string, error) {
	if req.TTL == 0 {
		req.TTL = DefaultInviteTTL
	}
	if req.Uses == 0 {
		req.Uses = 1
	}
	switch {
	case req.TTL < 0 || req.TTL > MaxInviteTTL:
		return meta.Invite{}, "", errcode.New(errcode.InvalidArgument, "an invite expires after more than 0 and at most %d days", MaxInviteTTL/(24*time.Hour))
	case req.Uses < 0 || req.Uses > MaxInviteUses:
		return meta.Invite{}, "", errcode.New(errcode.InvalidArgument, "an invite allows 1 to %d signups", MaxInviteUses)
	}
	if req.Email != "" {
		req.Email = NormalizeEmail(req.Email)
		if err := validEmail(req.Email); err != nil {
			return meta.Invite{}, "", err
		}
	}
	code, hash := newOpaqueToken()
	now := s.now().UTC()
	inv := meta.Invite{
		ID: NewID(), Hash: hash, Email: req.Email, Uses: req.Uses, UsesLeft: req.Uses,
		CreatedBy: req.CreatedBy, CreatedAt: now, ExpiresAt: now.Add(req.TTL),
	}
	err := s.meta.CreateInvite(ctx, inv)
	s.audit(ctx, audit.Event{Action: audit.InviteCreate, Target: audit.Target{Invite: inv.ID, Email: req.Email}}, err)
	if err != nil {
		return meta.Invite{}, "", err
	}
	return inv, code, nil
}

// ListInvites returns every invite, newest first.
func (s *Signups) ListInvites(ctx context.Context) ([]meta.Invite, error) {
	return s.meta.ListInvites(ctx)
}

// RevokeInvite revokes an invite; NotFound if there is no such invite.
func (s *Signups) RevokeInvite(ctx context.Context, id string) error {
	err := s.meta.RevokeInvite(ctx, id)
	s.audit(ctx, audit.Event{Action: audit.InviteRevoke, Target: audit.Target{Invite: id}}, err)
	return err
}
