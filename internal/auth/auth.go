// Package auth owns accounts and credentials: password hashing (argon2id in
// a bounded pool), access tokens (JWT), rotating refresh tokens with reuse
// detection, failed-login throttling, the signup policy with its invites
// and per-address throttle, the Principal a request acts as, and
// the account lifecycle (disable, enable, password change and reset,
// deletion).
//
// Service is one value per area over a shared core (see Service):
// Sessions, Users, Keys, Shares and Signups; each consumer is handed the
// areas it calls.
//
// # Every request checks the account
//
// Sessions.Authenticate (access tokens) and Keys.LookupKey (S3 keys,
// presigned URLs, direct-upload part URLs) refuse a user who is disabled
// or deleted, and an access token issued before the user's SessionsAfter,
// on every request. The state they check (disabled, admin, SessionsAfter)
// and the access keys' secrets come from per-node caches (package
// metacache) bounded in entries and in age (Config.Cache.TTL, 1 s): a
// change made through this Service (any of its areas) is seen by the next
// request on this node, one made on another node sharing a PostgreSQL
// store as soon as its announcement arrives, and any change within the
// TTL at worst.
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
// locking, so a stranger cannot lock an owner out (LoginLimits). On a
// store several nodes share (Stores.Changes set: PostgreSQL) the login and
// signup throttles keep their state in it (meta.Limits' UpdateThrottles),
// so every node counts together; otherwise (SQLite, one process), and
// while the store cannot be reached, in this node's memory. The hashing
// pool stays per node: it guards this node's CPU.
package auth

import (
	"context"
	"crypto/rand"
	"net/mail"
	"strings"
	"time"

	"github.com/coffer-storage/coffer/internal/audit"
	"github.com/coffer-storage/coffer/internal/config"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/metacache"
	"github.com/coffer-storage/coffer/internal/policy"
)

// Principal is who a request acts as. The zero value is anonymous.
type Principal struct {
	UserID string
	// KeyID is the access key or app token the request presented, if any;
	// Scope narrows what it may do (nil: unscoped; see ScopeOf).
	KeyID string
	Scope policy.Evaluator
	// Internal says KeyID is the user's internal key (Keys.InternalKey),
	// whose secret never leaves the server: a request signed with it
	// comes from a URL Coffer presigned for a direct upload.
	Internal bool
	// first records the key's first verified use (Verified).
	first *firstUse
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
	// Signup is who may sign up through Signups.SelfSignup (signup.go):
	// only SignupInvite and SignupClosed restrict it.
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
	// ClockOffset skews the clock of sessions, tokens and accounts (TEST
	// ONLY, the fault harness: config.Config.ClockOffset).
	ClockOffset time.Duration
	// Audit receives the events of sign-ins, signups, password changes,
	// keys and tokens, share-link passwords and account administration
	// (the server sets it; nil: the audit log off).
	Audit *audit.Logger
}

// Service is the account service, one value per area, each holding only
// what it uses over one shared core (the store, the clock, the password
// pool, the token signer, the login throttles, the bus and the cache of
// users' state): sessions and the per-request account check (Sessions,
// sessions.go), accounts and their lifecycle (Users, accounts.go,
// limits.go), S3 access keys (Keys, keys.go), share link passwords and
// grants (Shares, shares.go), and signups and invites (Signups,
// signup.go). A change one area makes reaches the others through the
// core's bus: disabling a user (Users) drops its cached state, which
// Sessions and Keys check on every request, and its internal key (Keys).
type Service struct {
	Sessions *Sessions
	Users    *Users
	Keys     *Keys
	Shares   *Shares
	Signups  *Signups

	core *core
}

// core is what the areas share.
type core struct {
	meta    Stores
	cfg     Config
	hasher  *Hasher
	tokens  *Tokens
	logins  *loginGuard
	shared  sharedThrottles // nil: the throttles are this node's
	now     func() time.Time
	newName func(email, userID string) []string

	bus    *metacache.Bus
	states *metacache.Map[userState]
	// stateLoader is loadState as a func value, made once (the method
	// value s.loadState would be allocated on every state lookup, which
	// every authenticated request makes).
	stateLoader func(ctx context.Context, id string) (userState, error)
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
		Params:      Params{Memory: c.Argon2Memory, Time: c.Argon2Time},
		Pool:        PoolConfig{Slots: c.LoginSlots(), MaxQueue: c.PasswordQueue, MaxWait: c.PasswordWait},
		ClockOffset: c.ClockOffset,
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
	if cfg.Bus == nil {
		cfg.Bus = metacache.NewBus()
	}
	var shared sharedThrottles
	if m.Changes != nil && m.Limits != nil {
		// Several nodes share the store: they throttle together.
		shared = m.Limits.UpdateThrottles
	}
	c := &core{
		meta:    m,
		cfg:     cfg,
		hasher:  NewHasher(cfg.Params, cfg.Pool),
		tokens:  NewTokens(DeriveKey(master, "access-token"), cfg.AccessTTL),
		shared:  shared,
		logins:  newLoginGuard(cfg.Logins, shared),
		now:     time.Now,
		newName: DefaultBucketNames,
		bus:     cfg.Bus,
		states:  metacache.NewMap[userState](cfg.Bus, meta.TopicUser, cfg.Cache),
	}
	c.stateLoader = c.loadState
	if off := cfg.ClockOffset; off != 0 {
		c.now = func() time.Time { return time.Now().Add(off) }
		c.tokens.now = c.now
	}
	return &Service{
		Sessions: &Sessions{c},
		Users:    &Users{c},
		Keys:     newKeys(c, sealer),
		Shares:   &Shares{core: c, key: DeriveKey(master, "share-grant")},
		Signups:  newSignups(c),
		core:     c,
	}
}

// CacheStats returns the counters of the caches of users' state and of
// access keys (for metrics).
func (s *Service) CacheStats() (users, keys metacache.Stats) {
	return s.core.states.Stats(), s.Keys.keys.Stats()
}

// TokenCacheStats returns the counters of the cache of verified access
// tokens (for metrics).
func (s *Service) TokenCacheStats() metacache.Stats { return s.core.tokens.Stats() }

// Hasher exposes the password pool (for metrics).
func (s *Service) Hasher() *Hasher { return s.core.hasher }

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

// createUser creates an account (an administrator if admin) with quota
// and its default bucket.
func (s *core) createUser(ctx context.Context, email, password string, admin bool, quota int64) (meta.User, meta.Bucket, error) {
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
func (s *core) createAccount(ctx context.Context, email, password, inviteHash string, admin bool, quota int64) (meta.User, meta.Bucket, error) {
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

// publish runs write, a change of c in the store, then publishes c on
// this process's bus and, on a store shared by listening nodes, waits (at
// most the bus's SyncBound) until every node has handled the store's
// announcement of it: the client's next request sees the change on
// whichever node it reaches (a node that did not answer has stopped
// trusting its caches by then: its lease ran out).
func (s *core) publish(ctx context.Context, c meta.Change, write func() error) error {
	wait, cancel := func(context.Context, time.Duration) {}, func() {}
	if s.meta.Changes != nil {
		wait, cancel = s.meta.Changes.ExpectChange(c)
	}
	if err := write(); err != nil {
		cancel()
		return err
	}
	s.bus.Publish(c)
	if s.meta.Changes != nil {
		s.bus.Await(ctx, s.bus.SyncBound(), wait)
	}
	return nil
}

// userState is what every authenticated request checks of its user.
type userState struct {
	found, disabled, admin bool
	sessionsAfter          time.Time
	quota                  int64 // QuotaBytes (0: unlimited), for Users.Unlimited
}

// state returns the cached state of user id.
func (s *core) state(ctx context.Context, id string) (userState, error) {
	return s.states.Get(ctx, id, s.stateLoader)
}

func (s *core) loadState(ctx context.Context, id string) (userState, error) {
	u, err := s.meta.GetUser(ctx, id)
	if errcode.Is(err, errcode.NotFound) {
		// IDs are random and never reused: a deleted user stays deleted.
		return userState{}, nil
	}
	if err != nil {
		return userState{}, err
	}
	return userState{found: true, disabled: u.Disabled, admin: u.Admin, sessionsAfter: u.SessionsAfter, quota: u.QuotaBytes}, nil
}

// auditEmail is what a failed login or signup may record of the e-mail
// address typed: the address if it is one, else nothing (a password typed
// into the e-mail field must not reach the audit log).
func auditEmail(email string) string {
	if validEmail(email) != nil {
		return ""
	}
	return email
}

// audit records e with the outcome of err (nil: success).
func (s *core) audit(ctx context.Context, e audit.Event, err error) {
	if s.cfg.Audit != nil {
		s.cfg.Audit.Log(ctx, e.Result(err))
	}
}
