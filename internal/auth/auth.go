// Package auth owns accounts and credentials: password hashing (argon2id in
// a bounded pool), access tokens (JWT), rotating refresh tokens with reuse
// detection, failed-login throttling, the signup policy with its invites
// and per-address throttle, the Principal a request acts as, and
// the account lifecycle (disable, enable, password change and reset,
// deletion).
//
// # Every request checks the account
//
// Authenticate (access tokens) and LookupKey (S3 keys, presigned URLs,
// direct-upload part URLs) refuse a user who is disabled or deleted, and
// an access token issued before the user's SessionsAfter, on every
// request. The state they check (disabled, admin, SessionsAfter) and the
// access keys' secrets come from per-node caches (package metacache) bounded
// in entries and in age (Config.Cache.TTL, 1 s): a change made through
// this Service is seen by the next request on this node, one made on
// another node sharing a PostgreSQL store as soon as its announcement
// arrives, and any change within the TTL at worst.
//
// # Considerations
//
// Password hashing is expensive on purpose. Clients keep a session alive
// with refresh tokens (one SHA-256 and one metadata write), never by logging
// in again; the hashing pool refuses excess logins with 503 + Retry-After so
// uploads keep flowing during a login storm. Every throttle counts an
// attempt before its hash, so a flood of logins or signups is refused
// without hashing.
//
// Failed logins are limited per (account, client address) and per client
// address; the per-account ceiling is far higher and backs off instead of
// locking, so a stranger cannot lock an owner out (LoginLimits). Throttle
// state is in memory, per node.
package auth

import (
	"context"
	"crypto/rand"
	"net/mail"
	"strings"
	"sync"
	"time"

	"github.com/coffer-storage/coffer/internal/config"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/metacache"
)

// Principal is who a request acts as. The zero value is anonymous.
type Principal struct {
	UserID string
}

// Anonymous reports whether p carries no identity.
func (p Principal) Anonymous() bool { return p.UserID == "" }

// Config of the account service. NewService takes it as given:
// ConfigFrom fills it from config.Config (config.Defaults() for the
// defaults); the server adds Bus.
type Config struct {
	AccessTTL    time.Duration // lifetime of an access token
	RefreshTTL   time.Duration // lifetime of a refresh token
	DefaultQuota int64         // bytes for new accounts; 0 = unlimited
	// Logins bound failed logins (see LoginLimits, throttle.go).
	Logins LoginLimits
	// Signup is who may sign up through SelfSignup (signup.go): only
	// SignupInvite and SignupClosed restrict it.
	Signup SignupPolicy
	// SignupLimit is how many self-service signups one client address
	// may attempt in SignupWindow (--signup-rate); 0: unlimited.
	SignupLimit  int
	SignupWindow time.Duration
	Params       Params
	Pool         PoolConfig
	// Bus carries invalidations of the account caches: the server feeds
	// it the store's change announcements. Nil: a bus of the Service's
	// own (changes made through it are still seen at once).
	Bus *metacache.Bus
	// Cache bounds the caches of account state and access keys (default
	// 100 000 entries each, TTL 1s).
	Cache metacache.Options
}

// Service implements signup, login, refresh, logout and token checks.
type Service struct {
	meta    Stores
	cfg     Config
	hasher  *Hasher
	tokens  *Tokens
	logins  *loginGuard
	signups *Throttle // nil: unlimited
	now     func() time.Time
	newName func(email, userID string) []string
	sealer  *keySealer
	// shareKey signs the grants of unlocked password-protected share
	// links (see shares.go).
	shareKey []byte

	bus    *metacache.Bus
	states *metacache.Map[userState]
	keys   *metacache.Map[keyEntry]

	touchMu    sync.Mutex
	touched    map[string]time.Time
	internalMu sync.Mutex
	internal   map[string][2]string // userID -> internal key id, secret
}

// ConfigFrom returns the account service's configuration in c: token
// lifetimes, the default quota, the failed-login limits, the signup policy
// and rate, the argon2id parameters and the hashing pool. Bus is the
// caller's to add.
func ConfigFrom(c config.Config) Config {
	return Config{
		AccessTTL: c.AccessTokenTTL, RefreshTTL: c.RefreshTokenTTL, DefaultQuota: c.DefaultQuota,
		Logins: LoginLimits{PerPair: c.LoginPerPair, PerAddress: c.LoginPerAddress, Window: c.LoginWindow,
			PerAccount: c.LoginPerAccount, AccountWindow: c.LoginAccountWindow,
			BackoffBase: c.LoginBackoffBase, BackoffMax: c.LoginBackoffMax, KnownFor: c.LoginKnownFor},
		Signup: SignupPolicy(c.Signup), SignupLimit: c.SignupRate.N, SignupWindow: c.SignupRate.Per,
		Params: Params{Memory: c.Argon2Memory, Time: c.Argon2Time},
		Pool:   PoolConfig{Slots: c.LoginSlots(), MaxQueue: c.PasswordQueue, MaxWait: c.PasswordWait},
	}
}

// NewService returns a Service whose keys (access-token signing, access
// key secret encryption) derive from the server's master key. A nil
// master is a service without the server key, for the admin commands that
// need none (accounts, invites): it refuses to seal or open S3 secrets,
// and what it could sign is under a throwaway key no node accepts. It
// takes cfg as it is (see ConfigFrom).
func NewService(m Stores, master []byte, cfg Config) *Service {
	sealer := newKeySealer(master)
	if master == nil {
		master = make([]byte, 32)
		rand.Read(master)
	}
	var signups *Throttle
	if cfg.SignupLimit > 0 {
		signups = NewThrottle(cfg.SignupLimit, cfg.SignupWindow)
	}
	if cfg.Bus == nil {
		cfg.Bus = metacache.NewBus()
	}
	s := &Service{
		meta:     m,
		cfg:      cfg,
		hasher:   NewHasher(cfg.Params, cfg.Pool),
		tokens:   NewTokens(DeriveKey(master, "access-token"), cfg.AccessTTL),
		sealer:   sealer,
		shareKey: DeriveKey(master, "share-grant"),
		touched:  map[string]time.Time{},
		internal: map[string][2]string{},
		logins:   newLoginGuard(cfg.Logins),
		signups:  signups,
		now:      time.Now,
		newName:  DefaultBucketNames,
		bus:      cfg.Bus,
		states:   metacache.NewMap[userState](cfg.Bus, meta.TopicUser, cfg.Cache),
		keys:     metacache.NewMap[keyEntry](cfg.Bus, meta.TopicAccessKey, cfg.Cache),
	}
	// A deleted user's internal key goes with it.
	cfg.Bus.Subscribe(meta.TopicUser, func(id string) {
		s.internalMu.Lock()
		delete(s.internal, id)
		s.internalMu.Unlock()
	}, func() {
		s.internalMu.Lock()
		clear(s.internal)
		s.internalMu.Unlock()
	})
	return s
}

// CacheStats returns the counters of the caches of users' state and of
// access keys (for metrics).
func (s *Service) CacheStats() (users, keys metacache.Stats) {
	return s.states.Stats(), s.keys.Stats()
}

// TokenCacheStats returns the counters of the cache of verified access
// tokens (for metrics).
func (s *Service) TokenCacheStats() metacache.Stats { return s.tokens.Stats() }

// Hasher exposes the password pool (for metrics).
func (s *Service) Hasher() *Hasher { return s.hasher }

// DefaultBucketNames are the names a new user's first bucket may take, in
// order of preference: the email's local part made a valid S3 bucket name
// ("Jane.Doe+x@example.com" → "jane.doe-x"), then that name with a piece
// of the user's ID ("jane.doe-x-1f0e980c") in case someone has the first,
// then "u-" and 16 hex digits of the ID, which is unique. Every name is
// 3 to 63 lower-case letters, digits, '-' and '.', starts and ends with a
// letter or digit, has no two punctuation marks in a row, and avoids S3's
// reserved prefixes and suffixes and the shape of an IP address.
func DefaultBucketNames(email, userID string) []string {
	fallback := "u-" + userID[:16]
	local, _, _ := strings.Cut(email, "@")
	var b strings.Builder
	for _, r := range strings.ToLower(local) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		case r == '.' && b.Len() > 0 && !strings.HasSuffix(b.String(), ".") && !strings.HasSuffix(b.String(), "-"):
			b.WriteRune('.')
		case b.Len() > 0 && !strings.HasSuffix(b.String(), ".") && !strings.HasSuffix(b.String(), "-"):
			b.WriteRune('-') // '+', '_' and anything else
		}
	}
	name := strings.TrimRight(b.String(), ".-")
	if len(name) > 50 { // room for the suffix below
		name = strings.TrimRight(name[:50], ".-")
	}
	for _, p := range []string{"xn--", "sthree-", "amzn-s3-demo-"} {
		if strings.HasPrefix(name, p) {
			name = "u-" + name
		}
	}
	if len(name) < 3 || looksLikeIP(name) || reservedSuffix(name) {
		return []string{fallback}
	}
	return []string{name, name + "-" + userID[:8], fallback}
}

func looksLikeIP(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return false
	}
	for _, p := range parts {
		if p == "" || strings.Trim(p, "0123456789") != "" {
			return false
		}
	}
	return true
}

func reservedSuffix(s string) bool {
	for _, suf := range []string{"-s3alias", "--ol-s3", ".mrap", "--x-s3"} {
		if strings.HasSuffix(s, suf) {
			return true
		}
	}
	return false
}

// Session is the result of a login or refresh.
type Session struct {
	UserID       string
	AccessToken  string
	ExpiresIn    time.Duration
	RefreshToken string
	RefreshTTL   time.Duration
}

// NormalizeEmail lower-cases and trims an email address.
func NormalizeEmail(email string) string { return strings.ToLower(strings.TrimSpace(email)) }

func validEmail(email string) error {
	if len(email) > 254 {
		return errcode.New(errcode.InvalidArgument, "email is too long")
	}
	a, err := mail.ParseAddress(email)
	if err != nil || a.Address != email || a.Name != "" {
		return errcode.New(errcode.InvalidArgument, "email is not a valid address")
	}
	return nil
}

func validPassword(pw string) error {
	switch {
	case len(pw) < 8:
		return errcode.New(errcode.InvalidArgument, "password must be at least 8 bytes")
	case len(pw) > 1024:
		return errcode.New(errcode.InvalidArgument, "password must be at most 1024 bytes")
	}
	return nil
}

// Signup creates an account and its default bucket, whatever the signup
// policy and unthrottled: it is for administrators and the CLI. The
// public route calls SelfSignup.
func (s *Service) Signup(ctx context.Context, email, password string) (meta.User, meta.Bucket, error) {
	return s.createUser(ctx, email, password, false, s.cfg.DefaultQuota)
}

// createUser creates an account (an administrator if admin) with quota
// and its default bucket.
func (s *Service) createUser(ctx context.Context, email, password string, admin bool, quota int64) (meta.User, meta.Bucket, error) {
	email = NormalizeEmail(email)
	if err := validEmail(email); err != nil {
		return meta.User{}, meta.Bucket{}, err
	}
	if err := validPassword(password); err != nil {
		return meta.User{}, meta.Bucket{}, err
	}
	return s.createAccount(ctx, email, password, "", admin, quota)
}

// createAccount creates the account of a valid email (an administrator if
// admin, with quota), redeeming the invite whose code has hash inviteHash
// in the same transaction if it is not "".
func (s *Service) createAccount(ctx context.Context, email, password, inviteHash string, admin bool, quota int64) (meta.User, meta.Bucket, error) {
	if _, err := s.meta.GetUserByEmail(ctx, email); err == nil {
		return meta.User{}, meta.Bucket{}, errcode.New(errcode.AlreadyExists, "an account with this email exists")
	} else if !errcode.Is(err, errcode.NotFound) {
		return meta.User{}, meta.Bucket{}, err
	}
	hash, err := s.hasher.Hash(ctx, password)
	if err != nil {
		return meta.User{}, meta.Bucket{}, err
	}
	now := s.now().UTC()
	u := meta.User{ID: NewID(), Email: email, PasswordHash: hash, QuotaBytes: quota, Admin: admin, CreatedAt: now}
	// The first free name of the candidates: a taken one fails the
	// creation with AlreadyExists, as a taken email does; the email is
	// then told apart by looking it up.
	for _, name := range s.newName(email, u.ID) {
		b := meta.Bucket{Name: name, OwnerID: u.ID, Visibility: meta.Private, CreatedAt: now}
		if inviteHash != "" {
			err = s.meta.CreateInvitedUser(ctx, u, b, inviteHash, now)
		} else {
			err = s.meta.CreateUser(ctx, u, b)
		}
		if err == nil {
			return u, b, nil
		}
		if !errcode.Is(err, errcode.AlreadyExists) {
			return meta.User{}, meta.Bucket{}, err
		}
		if _, gerr := s.meta.GetUserByEmail(ctx, email); gerr == nil {
			break
		} else if !errcode.Is(gerr, errcode.NotFound) {
			return meta.User{}, meta.Bucket{}, gerr
		}
	}
	return meta.User{}, meta.Bucket{}, errcode.New(errcode.AlreadyExists, "an account with this email exists")
}

// Login checks a password and opens a session. clientIP keys the login
// throttles (verifyCounted).
func (s *Service) Login(ctx context.Context, email, password, clientIP string) (Session, error) {
	u, err := s.verifyCounted(ctx, email, password, clientIP)
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

// verifyCounted is a password check that counts as a login attempt of
// email from clientIP: the login throttles (LoginLimits) count it before
// the slow hash, so parallel guesses cannot all pass, and refuse it with
// RateLimited and a Retry-After when a limit is reached. It returns the
// account if the password is right and the account enabled, and otherwise
// Unauthenticated "wrong email or password" — the same for an unknown
// account, which is verified against a dummy hash so that the answer
// takes as long. Login uses it, and so must every other check of a
// password a client sends (changing one's password).
func (s *Service) verifyCounted(ctx context.Context, email, password, clientIP string) (meta.User, error) {
	email = NormalizeEmail(email)
	a, wait := s.logins.begin(email, clientIP)
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

func (s *Service) session(userID, refresh string) (Session, error) {
	access, ttl, err := s.tokens.Issue(userID)
	if err != nil {
		return Session{}, err
	}
	return Session{UserID: userID, AccessToken: access, ExpiresIn: ttl, RefreshToken: refresh, RefreshTTL: s.cfg.RefreshTTL}, nil
}

// Refresh rotates a refresh token. Presenting a token that was already
// rotated revokes its whole family (a stolen token is useless after the
// legitimate client's next refresh, and vice versa).
func (s *Service) Refresh(ctx context.Context, refreshToken string) (Session, error) {
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
	u, err := s.meta.GetUser(ctx, next.UserID)
	if err != nil {
		return Session{}, err
	}
	if u.Disabled {
		return Session{}, errcode.New(errcode.Unauthenticated, "account disabled")
	}
	return s.session(next.UserID, token)
}

// Logout revokes the refresh token's family.
func (s *Service) Logout(ctx context.Context, refreshToken string) error {
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
func (s *Service) Authenticate(ctx context.Context, token string) (Principal, error) {
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

// userState is what every authenticated request checks of its user.
type userState struct {
	found, disabled, admin bool
	sessionsAfter          time.Time
}

// state returns the cached state of user id.
func (s *Service) state(ctx context.Context, id string) (userState, error) {
	return s.states.Get(ctx, id, s.loadState)
}

func (s *Service) loadState(ctx context.Context, id string) (userState, error) {
	u, err := s.meta.GetUser(ctx, id)
	if errcode.Is(err, errcode.NotFound) {
		// IDs are random and never reused: a deleted user stays deleted.
		return userState{}, nil
	}
	if err != nil {
		return userState{}, err
	}
	return userState{found: true, disabled: u.Disabled, admin: u.Admin, sessionsAfter: u.SessionsAfter}, nil
}

// RequireAdmin returns nil if p is an enabled administrator, Unauthenticated
// if p is anonymous, and PermissionDenied otherwise. It is the one check of
// the admin role; the admin API and admin-only actions call it.
func (s *Service) RequireAdmin(ctx context.Context, p Principal) error {
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
