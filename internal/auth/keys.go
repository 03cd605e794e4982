package auth

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base32"
	"encoding/base64"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coffer-storage/coffer/internal/audit"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/metacache"
	"github.com/coffer-storage/coffer/internal/policy"
)

// AccessKey is an S3 credential as shown to its owner. Secret is set only
// when the key is created: it is shown once.
type AccessKey struct {
	ID     string
	Secret string // for an app token: the bearer token
	Name   string
	// Scope narrows the key (the zero KeyScope: unscoped); ExpiresAt is
	// when it stops working (zero: never).
	Scope     meta.KeyScope
	ExpiresAt time.Time
	CreatedAt time.Time
	LastUsed  time.Time
}

// Expired reports whether k has expired at now.
func (k AccessKey) Expired(now time.Time) bool { return expired(k.ExpiresAt, now) }

func expired(at, now time.Time) bool { return !at.IsZero() && !now.Before(at) }

// KeyOptions are what a new access key or app token carries besides its
// user.
type KeyOptions struct {
	Name      string        // at most 128 bytes
	Scope     meta.KeyScope // see ScopeOf; zero: unscoped
	ExpiresAt time.Time     // zero: never; else in the future
}

// check refuses options a key cannot be made with.
func (o KeyOptions) check(now time.Time) error {
	if len(o.Name) > 128 {
		return errcode.New(errcode.InvalidArgument, "key name is longer than 128 bytes")
	}
	if !o.ExpiresAt.IsZero() && !o.ExpiresAt.After(now) {
		return errcode.New(errcode.InvalidArgument, "the key's expiry %s is not in the future", o.ExpiresAt.UTC().Format(time.RFC3339))
	}
	_, err := ScopeOf(o.Scope)
	return err
}

// errExpired refuses an expired key or app token: S3's ExpiredToken (the
// answer to expired temporary credentials), 401 on the file API.
func errExpired(id string) error {
	return &errcode.Error{Code: errcode.Unauthenticated, Message: "the access key " + id + " has expired",
		Detail: map[string]any{"s3_code": "ExpiredToken"}}
}

// keySealer encrypts access-key secrets at rest with AES-256-GCM under a
// key derived from the server key; the access key ID is the associated
// data, so a sealed secret cannot be moved to another key ID.
type keySealer struct {
	aead cipher.AEAD
}

// newKeySealer returns the sealer of master; nil master: a sealer that
// refuses to seal or open (a service without the server key).
func newKeySealer(master []byte) *keySealer {
	if master == nil {
		return &keySealer{}
	}
	block, err := aes.NewCipher(DeriveKey(master, "access-key-secret"))
	if err != nil {
		panic(err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	return &keySealer{aead: aead}
}

// errNoServerKey refuses sealing and opening without the server key.
var errNoServerKey = errcode.New(errcode.Internal, "no server key: S3 secrets cannot be sealed or opened")

func (k *keySealer) seal(id, secret string) ([]byte, error) {
	if k.aead == nil {
		return nil, errNoServerKey
	}
	nonce := make([]byte, k.aead.NonceSize())
	rand.Read(nonce)
	return k.aead.Seal(nonce, nonce, []byte(secret), []byte(id)), nil
}

func (k *keySealer) open(id string, sealed []byte) (string, error) {
	if k.aead == nil {
		return "", errNoServerKey
	}
	n := k.aead.NonceSize()
	if len(sealed) < n {
		return "", errcode.New(errcode.Internal, "sealed secret is malformed")
	}
	pt, err := k.aead.Open(nil, sealed[:n], sealed[n:], []byte(id))
	if err != nil {
		return "", errcode.Wrap(errcode.Internal, err, "cannot decrypt access key secret (server key changed?)")
	}
	return string(pt), nil
}

func newKeyID() string {
	b := make([]byte, 12)
	rand.Read(b)
	return "CF" + strings.ToUpper(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b))[:18]
}

// newSecret returns a random secret access key that does not start with
// '-', which command lines take for an option (aws configure set
// aws_secret_access_key -… fails), as newUploadID.
func newSecret() string {
	b := make([]byte, 30)
	for {
		rand.Read(b)
		if s := base64.RawURLEncoding.EncodeToString(b); s[0] != '-' {
			return s
		}
	}
}

// Keys is the S3 access keys: creating, listing and revoking a user's
// keys, finding a key's secret and owner for signature checks (from a
// cache, refusing keys of disabled or deleted users), and each user's
// internal key for presigned direct uploads.
type Keys struct {
	*core
	sealer *keySealer
	keys   *metacache.Map[keyEntry]
	// keyLoader is loadKey as a func value, made once (see
	// core.stateLoader).
	keyLoader func(ctx context.Context, id string) (keyEntry, error)

	touchMu    sync.Mutex
	touched    map[string]time.Time
	internalMu sync.Mutex
	internal   map[string][2]string // userID -> internal key id, secret
}

func newKeys(c *core, sealer *keySealer) *Keys {
	k := &Keys{core: c, sealer: sealer,
		keys:     metacache.NewMap[keyEntry](c.bus, meta.TopicAccessKey, c.cfg.Cache),
		touched:  map[string]time.Time{},
		internal: map[string][2]string{},
	}
	k.keyLoader = k.loadKey
	// A deleted user's internal key goes with it.
	c.bus.Subscribe(meta.TopicUser, func(id string) {
		k.internalMu.Lock()
		delete(k.internal, id)
		k.internalMu.Unlock()
	}, func() {
		k.internalMu.Lock()
		clear(k.internal)
		k.internalMu.Unlock()
	})
	return k
}

// maxKeysPerUser bounds how many (visible) access keys a user may hold.
const maxKeysPerUser = 100

// CreateAccessKey makes a new S3 key pair for userID, scoped and expiring
// as o says. The secret is in the result and nowhere else in clear.
func (s *Keys) CreateAccessKey(ctx context.Context, userID string, o KeyOptions) (k AccessKey, err error) {
	defer func() {
		s.audit(ctx, audit.Event{Action: audit.KeyCreate, Target: audit.Target{User: userID, AccessKey: k.ID}}, err)
	}()
	if err := s.checkNew(ctx, userID, o); err != nil {
		return AccessKey{}, err
	}
	return s.createKey(ctx, userID, o, false)
}

// checkNew refuses options a key cannot be made with, and a user's key
// beyond maxKeysPerUser.
func (s *Keys) checkNew(ctx context.Context, userID string, o KeyOptions) error {
	if err := o.check(s.now()); err != nil {
		return err
	}
	keys, err := s.meta.ListAccessKeys(ctx, userID)
	if err != nil {
		return err
	}
	if len(keys) >= maxKeysPerUser {
		return errcode.New(errcode.Conflict, "at most %d access keys and app tokens per user", maxKeysPerUser)
	}
	return nil
}

func (s *Keys) createKey(ctx context.Context, userID string, o KeyOptions, internal bool) (AccessKey, error) {
	id, secret := newKeyID(), newSecret()
	now := s.now().UTC()
	sealed, err := s.sealer.seal(id, secret)
	if err != nil {
		return AccessKey{}, err
	}
	err = s.meta.CreateAccessKey(ctx, meta.AccessKey{
		ID: id, UserID: userID, SecretEnc: sealed, Name: o.Name, Internal: internal, CreatedAt: now,
		Scope: o.Scope, ExpiresAt: o.ExpiresAt,
	})
	if err != nil {
		return AccessKey{}, err
	}
	return AccessKey{ID: id, Secret: secret, Name: o.Name, Scope: o.Scope, ExpiresAt: meta.StoredTime(o.ExpiresAt), CreatedAt: now}, nil
}

// ListAccessKeys returns the user's keys without secrets (internal keys
// and app tokens excluded).
func (s *Keys) ListAccessKeys(ctx context.Context, userID string) ([]AccessKey, error) {
	return s.listShown(ctx, userID, func(k meta.AccessKey) bool { return !k.Internal && !k.Token })
}

// listShown returns the user's keys that keep says, as shown (no secrets).
func (s *Keys) listShown(ctx context.Context, userID string, keep func(meta.AccessKey) bool) ([]AccessKey, error) {
	keys, err := s.meta.ListAccessKeys(ctx, userID)
	if err != nil {
		return nil, err
	}
	out := make([]AccessKey, 0, len(keys))
	for _, k := range keys {
		if keep(k) {
			out = append(out, shown(k))
		}
	}
	return out, nil
}

// DeleteAccessKey revokes one of the user's keys; it stops working at once
// (on other nodes, when the store's announcement arrives; within the
// cache TTL at worst).
func (s *Keys) DeleteAccessKey(ctx context.Context, userID, id string) error {
	err := s.deleteKey(ctx, userID, id, "access key", func(k meta.AccessKey) bool { return !k.Internal && !k.Token })
	s.audit(ctx, audit.Event{Action: audit.KeyDelete, Target: audit.Target{User: userID, AccessKey: id}}, err)
	return err
}

// deleteKey deletes the user's key or app token id if it is one of what
// deletable says (NotFound "no such what" otherwise), once every node
// dropped it from its cache.
func (s *Keys) deleteKey(ctx context.Context, userID, id, what string, deletable func(meta.AccessKey) bool) error {
	k, err := s.meta.GetAccessKey(ctx, id)
	if errcode.Is(err, errcode.NotFound) || err == nil && (k.UserID != userID || !deletable(k)) {
		return errcode.New(errcode.NotFound, "no such %s", what)
	}
	if err != nil {
		return err
	}
	return s.publish(ctx, meta.Change{Topic: meta.TopicAccessKey, Key: id}, func() error {
		return s.meta.DeleteAccessKey(ctx, userID, id)
	})
}

// shown is k as its owner sees it (no secret).
func shown(k meta.AccessKey) AccessKey {
	return AccessKey{ID: k.ID, Name: k.Name, Scope: k.Scope, ExpiresAt: k.ExpiresAt, CreatedAt: k.CreatedAt, LastUsed: k.LastUsed}
}

// keyEntry is a cached access key or app token: its owner, its secret in
// clear (an app token's: the SHA-256 of its secret), its scope and
// expiry. A key never changes once made (it is only deleted), so the
// cache holds it until its deletion is announced; the expiry is checked
// on every use.
type keyEntry struct {
	userID, secret string
	token          bool
	internal       bool // Coffer's own key for presigned direct uploads
	scope          policy.Evaluator
	expires        time.Time
	// first is set while the key has never been used (audit on): its
	// first verified use is recorded once (Principal.Verified).
	first *firstUse
}

// firstUse records the first verified use of a key or app token that had
// never been used when it was loaded, once per load: at least once (a
// node that loads the key again before the use is stored records it
// again).
type firstUse struct {
	done   atomic.Bool
	log    *audit.Logger
	action audit.Action
	id     string
	user   string
}

// Verified tells that p's credentials held (its signature verified): the
// first verified use of a key is audited (audit.KeyFirstUse,
// audit.TokenFirstUse). A no-op for other principals and later uses.
func (p Principal) Verified(ctx context.Context) {
	if f := p.first; f != nil && !f.done.Load() && f.done.CompareAndSwap(false, true) {
		f.log.Log(ctx, audit.Event{Action: f.action, Actor: audit.Key(f.id, f.user), Target: audit.Target{User: f.user, AccessKey: f.id}})
	}
}

func (s *Keys) loadKey(ctx context.Context, id string) (keyEntry, error) {
	k, err := s.meta.GetAccessKey(ctx, id)
	if err != nil {
		return keyEntry{}, err // NotFound too: unknown IDs are not cached
	}
	e := keyEntry{userID: k.UserID, token: k.Token, internal: k.Internal, expires: k.ExpiresAt, secret: string(k.SecretEnc)}
	if !k.Token {
		if e.secret, err = s.sealer.open(k.ID, k.SecretEnc); err != nil {
			return keyEntry{}, err
		}
	}
	if e.scope, err = ScopeOf(k.Scope); err != nil {
		return keyEntry{}, errcode.Wrap(errcode.Internal, err, "access key %s: stored scope", id)
	}
	if s.cfg.Audit != nil && k.LastUsed.IsZero() && !k.Internal {
		e.first = &firstUse{log: s.cfg.Audit, action: audit.KeyFirstUse, id: id, user: k.UserID}
		if k.Token {
			e.first.action = audit.TokenFirstUse
		}
	}
	return e, nil
}

// LookupKey returns the secret and owner of an access key, for SigV4 and
// SigV2 verification (headers and presigned URLs alike), and the key's
// scope (and whether it is the user's internal key) in the Principal. Unknown keys, app tokens and keys of disabled
// or deleted users are NotFound; an expired key is Unauthenticated with
// S3 code ExpiredToken. Keys and their owners' state come from the caches
// (see the package doc).
func (s *Keys) LookupKey(ctx context.Context, id string) (secret string, p Principal, err error) {
	k, err := s.use(ctx, id)
	if err != nil {
		return "", Principal{}, err
	}
	if k.token {
		return "", Principal{}, errcode.New(errcode.NotFound, "access key %q not found", id)
	}
	s.touch(id)
	return k.secret, Principal{UserID: k.userID, KeyID: id, Scope: k.scope, Internal: k.internal, first: k.first}, nil
}

// use returns the cached key or app token id if it may be used now: its
// user exists and is enabled, and it has not expired.
func (s *Keys) use(ctx context.Context, id string) (keyEntry, error) {
	k, err := s.keys.Get(ctx, id, s.keyLoader)
	if err != nil {
		return keyEntry{}, err
	}
	st, err := s.state(ctx, k.userID)
	if err != nil {
		return keyEntry{}, err
	}
	if !st.found || st.disabled {
		return keyEntry{}, errcode.New(errcode.NotFound, "access key %q not found", id)
	}
	if expired(k.expires, s.now()) {
		return keyEntry{}, errExpired(id)
	}
	return k, nil
}

// touch records a key's last use, at most once a minute per key.
func (s *Keys) touch(id string) {
	now := s.now()
	s.touchMu.Lock()
	last, ok := s.touched[id]
	if ok && now.Sub(last) < time.Minute {
		s.touchMu.Unlock()
		return
	}
	if len(s.touched) > 10000 {
		clear(s.touched)
	}
	s.touched[id] = now
	s.touchMu.Unlock()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.meta.TouchAccessKey(ctx, id, now.UTC())
	}()
}

// InternalKey returns the user's internal key pair, used by Coffer to
// presign direct-upload URLs on its own S3 endpoint; it is created on
// first use and hidden from the user's key list.
func (s *Keys) InternalKey(ctx context.Context, userID string) (id, secret string, err error) {
	s.internalMu.Lock()
	defer s.internalMu.Unlock()
	if k, ok := s.internal[userID]; ok {
		return k[0], k[1], nil
	}
	keys, err := s.meta.ListAccessKeys(ctx, userID)
	if err != nil {
		return "", "", err
	}
	for _, k := range keys {
		if k.Internal {
			secret, err := s.sealer.open(k.ID, k.SecretEnc)
			if err != nil {
				return "", "", err
			}
			s.internal[userID] = [2]string{k.ID, secret}
			return k.ID, secret, nil
		}
	}
	k, err := s.createKey(ctx, userID, KeyOptions{Name: "coffer direct uploads"}, true)
	if err != nil {
		return "", "", err
	}
	s.internal[userID] = [2]string{k.ID, k.Secret}
	return k.ID, k.Secret, nil
}
