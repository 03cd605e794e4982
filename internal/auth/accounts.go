package auth

import (
	"context"

	"github.com/coffer-storage/coffer/internal/audit"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// Users is the accounts and their lifecycle: creating, reading and
// listing them, their quota, role, rate limits (limits.go) and password,
// disabling, enabling and deleting them. Every change is made in one
// metadata transaction and then published on the bus, so this node's
// caches see it at once (other nodes through the store's announcements,
// see the package doc).
type Users struct {
	*core
}

// NewUser describes an account an administrator creates.
type NewUser struct {
	Email, Password string
	Admin           bool
	QuotaBytes      *int64 // nil: the default quota
}

// CreateUser creates an account and its default bucket, as Signups.Signup
// does, but with the role and quota given (for administrators and the
// CLI).
func (s *Users) CreateUser(ctx context.Context, nu NewUser) (u meta.User, b meta.Bucket, err error) {
	defer func() {
		s.audit(ctx, audit.Event{Action: audit.UserCreate, Target: audit.Target{User: u.ID, Email: NormalizeEmail(nu.Email)}}, err)
	}()
	quota := s.cfg.DefaultQuota
	if nu.QuotaBytes != nil {
		if *nu.QuotaBytes < 0 {
			return meta.User{}, meta.Bucket{}, errcode.New(errcode.InvalidArgument, "quota must not be negative")
		}
		quota = *nu.QuotaBytes
	}
	return s.createUser(ctx, nu.Email, nu.Password, nu.Admin, quota)
}

// User returns the account of id.
func (s *Users) User(ctx context.Context, id string) (meta.User, error) {
	return s.meta.GetUser(ctx, id)
}

// UserByEmail returns the account of email (normalised first).
func (s *Users) UserByEmail(ctx context.Context, email string) (meta.User, error) {
	return s.meta.GetUserByEmail(ctx, NormalizeEmail(email))
}

// ListUsers returns a page of accounts in email order.
func (s *Users) ListUsers(ctx context.Context, opts meta.ListUsersOptions) ([]meta.User, bool, error) {
	return s.meta.ListUsers(ctx, opts)
}

// UserBuckets returns the buckets of user id, by name.
func (s *Users) UserBuckets(ctx context.Context, id string) ([]meta.Bucket, error) {
	if _, err := s.meta.GetUser(ctx, id); err != nil {
		return nil, err
	}
	return s.meta.ListBuckets(ctx, id)
}

// update applies upd to user id and publishes the change.
// updateAudited is update recorded as action on user id.
func (s *Users) updateAudited(ctx context.Context, action audit.Action, id string, upd meta.UserUpdate) (meta.User, error) {
	u, err := s.update(ctx, id, upd)
	s.audit(ctx, audit.Event{Action: action, Target: audit.Target{User: id, Email: u.Email}}, err)
	return u, err
}

func (s *Users) update(ctx context.Context, id string, upd meta.UserUpdate) (meta.User, error) {
	var u meta.User
	err := s.publish(ctx, meta.Change{Topic: meta.TopicUser, Key: id}, func() (err error) {
		u, err = s.meta.UpdateUser(ctx, id, upd)
		return err
	})
	return u, err
}

// SetQuota sets user id's quota in bytes (0: unlimited).
func (s *Users) SetQuota(ctx context.Context, id string, bytes int64) (meta.User, error) {
	return s.updateAudited(ctx, audit.UserQuota, id, meta.UserUpdate{QuotaBytes: &bytes})
}

// SetAdmin grants or revokes the administrator role.
func (s *Users) SetAdmin(ctx context.Context, id string, admin bool) (meta.User, error) {
	return s.updateAudited(ctx, audit.UserRole, id, meta.UserUpdate{Admin: &admin})
}

// Disable disables user id: from the next request on, its access tokens,
// refresh tokens, S3 keys and presigned URLs are refused, and it cannot
// log in. Its sessions end for good (SessionsAfter moves to now and its
// refresh tokens are revoked in the same transaction), so Enable restores
// logins only.
func (s *Users) Disable(ctx context.Context, id string) (meta.User, error) {
	yes, now := true, s.now().UTC()
	return s.updateAudited(ctx, audit.UserDisable, id, meta.UserUpdate{Disabled: &yes, SessionsAfter: &now, RevokeRefreshTokens: true})
}

// Enable lets a disabled user log in again; the sessions it had stay
// revoked.
func (s *Users) Enable(ctx context.Context, id string) (meta.User, error) {
	no := false
	return s.updateAudited(ctx, audit.UserEnable, id, meta.UserUpdate{Disabled: &no})
}

// SetPassword is an administrator's reset: user id gets a new password and
// every session of it ends.
func (s *Users) SetPassword(ctx context.Context, id, password string) (u meta.User, err error) {
	defer func() {
		s.audit(ctx, audit.Event{Action: audit.UserPassword, Target: audit.Target{User: id, Email: u.Email}}, err)
	}()
	if err := validPassword(password); err != nil {
		return meta.User{}, err
	}
	hash, err := s.hasher.Hash(ctx, password)
	if err != nil {
		return meta.User{}, err
	}
	now := s.now().UTC()
	return s.update(ctx, id, meta.UserUpdate{PasswordHash: &hash, SessionsAfter: &now, RevokeRefreshTokens: true})
}

// ChangePassword changes user id's password after checking the old one
// (a wrong one counts as a failed login from clientIP), ends every other
// session of the user, and returns a fresh session so the caller stays
// signed in.
func (s *Users) ChangePassword(ctx context.Context, id, oldPassword, newPassword, clientIP string) (_ Session, err error) {
	defer func() { s.auditSecret(ctx, audit.PasswordChange, id, err) }()
	if err := validPassword(newPassword); err != nil {
		return Session{}, err
	}
	u, err := s.meta.GetUser(ctx, id)
	if err != nil {
		return Session{}, err
	}
	if err := s.checkPassword(ctx, u, oldPassword, clientIP); err != nil {
		return Session{}, err
	}
	hash, err := s.hasher.Hash(ctx, newPassword)
	if err != nil {
		return Session{}, err
	}
	// The cut-off and the new session share one instant: the new tokens
	// are not "issued before" it.
	now := s.now().UTC()
	if _, err := s.update(ctx, id, meta.UserUpdate{PasswordHash: &hash, SessionsAfter: &now, RevokeRefreshTokens: true}); err != nil {
		return Session{}, err
	}
	token, th := newOpaqueToken()
	rt := meta.RefreshToken{Hash: th, UserID: id, Family: NewID(), CreatedAt: now, ExpiresAt: now.Add(s.cfg.RefreshTTL)}
	if err := s.meta.CreateRefreshToken(ctx, rt); err != nil {
		return Session{}, err
	}
	access, ttl, err := s.tokens.IssueAt(id, now)
	if err != nil {
		return Session{}, err
	}
	return Session{UserID: id, AccessToken: access, ExpiresIn: ttl, RefreshToken: token, RefreshTTL: s.cfg.RefreshTTL}, nil
}

// checkPassword checks a password of the signed-in user u with the login
// throttles: a wrong one counts as a failed login of u's account from
// clientIP (Unauthenticated), and a throttled caller gets RateLimited
// before any hashing.
func (s *Users) checkPassword(ctx context.Context, u meta.User, password, clientIP string) error {
	a, wait := s.logins.begin(ctx, u.Email, clientIP)
	if wait > 0 {
		return errcode.Retry(errcode.RateLimited, wait, "too many failed logins; retry later")
	}
	ok, err := s.hasher.Verify(ctx, password, u.PasswordHash)
	if err != nil {
		// Not the client's fault (pool busy, cancelled): not counted.
		a.uncounted()
		return err
	}
	if !ok {
		a.failed()
		return errcode.New(errcode.Unauthenticated, "wrong password")
	}
	a.succeeded()
	return nil
}

// DeleteUser deletes user id with its keys, sessions and empty buckets;
// with purge, its buckets, objects and uploads too (blobs are queued for
// the janitor). Without purge, a user owning data is refused with
// Conflict (see meta.Accounts.DeleteUser). The caller aborts the returned
// backend uploads at the blob store.
func (s *Users) DeleteUser(ctx context.Context, id string, purge bool) (meta.DeleteUserResult, error) {
	res, err := s.deleteUser(ctx, id, purge)
	s.audit(ctx, audit.Event{Action: audit.UserDelete, Target: audit.Target{User: id}}, err)
	return res, err
}

func (s *Users) deleteUser(ctx context.Context, id string, purge bool) (meta.DeleteUserResult, error) {
	var res meta.DeleteUserResult
	err := s.publish(ctx, meta.Change{Topic: meta.TopicUser, Key: id}, func() (err error) {
		res, err = s.meta.DeleteUser(ctx, id, purge)
		return err
	})
	return res, err
}

// DeleteAccount is a user deleting their own account: DeleteUser after
// checking the password (as ChangePassword does).
func (s *Users) DeleteAccount(ctx context.Context, id, password string, purge bool, clientIP string) (_ meta.DeleteUserResult, err error) {
	defer func() { s.auditSecret(ctx, audit.AccountDelete, id, err) }()
	u, err := s.meta.GetUser(ctx, id)
	if err != nil {
		return meta.DeleteUserResult{}, err
	}
	if err := s.checkPassword(ctx, u, password, clientIP); err != nil {
		return meta.DeleteUserResult{}, err
	}
	return s.deleteUser(ctx, id, purge)
}

// auditSecret records user id's own action that checked their password:
// a wrong one is a failure with reason wrong_credentials.
func (s *Users) auditSecret(ctx context.Context, action audit.Action, id string, err error) {
	if s.cfg.Audit == nil {
		return
	}
	e := audit.Event{Action: action, Actor: audit.User(id), Target: audit.Target{User: id}}.Result(err)
	if errcode.Is(err, errcode.Unauthenticated) {
		e.Outcome, e.Reason = audit.Failure, audit.ReasonWrongSecret
	}
	s.cfg.Audit.Log(ctx, e)
}

// UserActive reports whether user id exists and is enabled, from the
// cached account state (the state every authenticated request checks, so
// a disabled owner's share links stop within the cache's bound, on every
// node).
func (s *Users) UserActive(ctx context.Context, id string) (bool, error) {
	st, err := s.state(ctx, id)
	if err != nil {
		return false, err
	}
	return st.found && !st.disabled, nil
}

// Unlimited reports whether user id exists and has no quota, from the
// cached account state: SetQuota publishes its change, so within this
// process a quota set is seen by the next call; another process's (the
// admin CLI's on SQLite) within the cache's TTL. The object service asks
// it before a small upload's quota check: an owner without a quota needs
// no read of the user row before the body (the commit checks the quota
// exactly, whatever this said).
func (s *Users) Unlimited(ctx context.Context, id string) (bool, error) {
	st, err := s.state(ctx, id)
	if err != nil {
		return false, err
	}
	return st.found && st.quota == 0, nil
}
