package auth

import (
	"context"

	"github.com/coffer-storage/coffer/internal/audit"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// Sessions logs users in and out, rotates their refresh tokens, and turns
// a request's access token into a Principal, checking the account's
// cached state (see the package doc) every time.
type Sessions struct {
	*core
}

// Login checks a password and opens a session. clientIP keys the login
// throttles (verifyCounted).
func (s *Sessions) Login(ctx context.Context, email, password, clientIP string) (_ Session, err error) {
	var u meta.User
	defer func() { s.auditSignIn(ctx, email, u.ID, err) }()
	u, err = s.verifyCounted(ctx, email, password, clientIP)
	if err != nil {
		return Session{}, err
	}
	token, hash := newOpaqueToken()
	now := s.now().UTC()
	rt := meta.RefreshToken{Hash: hash, UserID: u.ID, Family: NewID(), CreatedAt: now, ExpiresAt: now.Add(s.cfg.RefreshTTL)}
	if err := s.meta.CreateRefreshToken(ctx, rt); err != nil {
		return Session{}, err
	}
	return s.session(u.ID, token)
}

// auditSignIn records a login of email: the user's on success, an
// anonymous caller's otherwise (a wrong password is a failure with reason
// wrong_credentials, a throttled one throttled).
func (s *Sessions) auditSignIn(ctx context.Context, email, userID string, err error) {
	if s.cfg.Audit == nil {
		return
	}
	email = auditEmail(NormalizeEmail(email))
	e := audit.Event{Action: audit.SignIn, Actor: audit.Anonymous(email), Target: audit.Target{Email: email}}
	switch {
	case err == nil:
		e.Actor = audit.Actor{Type: audit.ActorUser, ID: userID, Name: email}
		e.Target.User = userID
	case errcode.Is(err, errcode.Unauthenticated):
		e.Outcome, e.Reason = audit.Failure, audit.ReasonWrongSecret
		s.cfg.Audit.Log(ctx, e)
		return
	}
	s.audit(ctx, e, err)
}

// verifyCounted is a password check that counts as a login attempt of
// email from clientIP: the login throttles (LoginLimits) count it before
// the slow hash, so parallel guesses cannot all pass, and refuse it with
// RateLimited and a Retry-After when a limit is reached. It returns the
// account if the password is right and the account enabled, and otherwise
// Unauthenticated "wrong email or password" — the same for an unknown
// account, which is verified against a dummy hash so that the answer
// takes as long. Login uses it, and so must every other check of a
// password a client sends (changing one's password).
func (s *Sessions) verifyCounted(ctx context.Context, email, password, clientIP string) (meta.User, error) {
	email = auditEmail(NormalizeEmail(email))
	a, wait := s.logins.begin(ctx, email, clientIP)
	if wait > 0 {
		return meta.User{}, errcode.Retry(errcode.RateLimited, wait, "too many failed logins; retry later")
	}
	u, err := s.meta.GetUserByEmail(ctx, email)
	if err != nil && !errcode.Is(err, errcode.NotFound) {
		a.uncounted()
		return meta.User{}, err
	}
	ok, err := s.hasher.Verify(ctx, password, u.PasswordHash)
	if err != nil {
		// Not the client's fault (pool busy, cancelled): not counted.
		a.uncounted()
		return meta.User{}, err
	}
	if !ok || u.Disabled {
		a.failed()
		return meta.User{}, errcode.New(errcode.Unauthenticated, "wrong email or password")
	}
	a.succeeded()
	return u, nil
}

func (s *Sessions) session(userID, refresh string) (Session, error) {
	access, ttl, err := s.tokens.Issue(userID)
	if err != nil {
		return Session{}, err
	}
	return Session{UserID: userID, AccessToken: access, ExpiresIn: ttl, RefreshToken: refresh, RefreshTTL: s.cfg.RefreshTTL}, nil
}

// Refresh rotates a refresh token. Presenting a token that was already
// rotated revokes its whole family (a stolen token is useless after the
// legitimate client's next refresh, and vice versa).
func (s *Sessions) Refresh(ctx context.Context, refreshToken string) (Session, error) {
	if refreshToken == "" {
		return Session{}, errcode.New(errcode.InvalidArgument, "refresh_token is required")
	}
	token, hash := newOpaqueToken()
	now := s.now().UTC()
	next, err := s.meta.RotateRefreshToken(ctx, HashToken(refreshToken),
		meta.RefreshToken{Hash: hash, CreatedAt: now, ExpiresAt: now.Add(s.cfg.RefreshTTL)}, now)
	if err != nil {
		return Session{}, err
	}
	// The rotation judged the account in its own transaction (disabled,
	// SessionsAfter: meta.Sessions' contract), so a rotated token's user is
	// enabled: no read of the user's row after it (one statement less per
	// refresh, a step of GoVault's flows: issue 23, fifth pass).
	return s.session(next.UserID, token)
}

// Logout revokes the refresh token's family.
func (s *Sessions) Logout(ctx context.Context, refreshToken string) error {
	if refreshToken == "" {
		return errcode.New(errcode.InvalidArgument, "refresh_token is required")
	}
	err := s.meta.RevokeRefreshFamily(ctx, HashToken(refreshToken))
	if errcode.Is(err, errcode.NotFound) {
		return errcode.New(errcode.Unauthenticated, "unknown refresh token")
	}
	return err
}

// Authenticate turns a bearer access token into a Principal. The token
// must be valid, its user enabled, and the token issued no earlier than
// the user's SessionsAfter (checked on a cached state, see the package
// doc).
func (s *Sessions) Authenticate(ctx context.Context, token string) (Principal, error) {
	id, issued, err := s.tokens.Verify(token)
	if err != nil {
		return Principal{}, err
	}
	st, err := s.state(ctx, id)
	if err != nil {
		return Principal{}, err
	}
	switch {
	case !st.found:
		return Principal{}, errcode.New(errcode.Unauthenticated, "account no longer exists")
	case st.disabled:
		return Principal{}, errcode.New(errcode.Unauthenticated, "account disabled")
	case issued.Before(st.sessionsAfter):
		return Principal{}, errcode.New(errcode.Unauthenticated, "session revoked; log in again")
	}
	return Principal{UserID: id}, nil
}

// RequireAdmin returns nil if p is an enabled administrator, Unauthenticated
// if p is anonymous, and PermissionDenied otherwise. It is the one check of
// the admin role; the admin API and admin-only actions call it.
func (s *Sessions) RequireAdmin(ctx context.Context, p Principal) error {
	if p.Anonymous() {
		return errcode.New(errcode.Unauthenticated, "authentication required")
	}
	st, err := s.state(ctx, p.UserID)
	if err != nil {
		return err
	}
	if !st.found {
		return errcode.New(errcode.Unauthenticated, "account no longer exists")
	}
	if !st.admin || st.disabled {
		return errcode.New(errcode.PermissionDenied, "administrators only")
	}
	return nil
}
