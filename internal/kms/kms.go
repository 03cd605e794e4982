// Package kms holds the key-encryption keys (KEKs) of encryption at rest:
// key providers behind one small interface (Provider), chosen by URL, and
// Keys, the front the object service uses: it issues data keys, opens
// wrapped ones, and caches so that a key service round trip is not paid per
// request.
//
// # Providers and their URLs
//
//	""  or  local:                   the keyring file kms.keyring in the data folder (created 0600 if missing)
//	local:///path/to/keyring         a keyring file given by path (must exist; for clusters, the same file on every node)
//	local:?env=NAME                  a keyring (or one base64 key) in environment variable NAME
//	(any local URL) &key=ID          which key of the keyring is the default KEK (default: "default", else the first)
//	awskms:///KEY?region=R           AWS KMS (key id, ARN, alias/NAME or alias ARN); &endpoint=URL for a
//	                                 KMS-compatible server; credentials from the usual AWS environment
//	gcpkms://projects/P/locations/L/keyRings/R/cryptoKeys/K     Google Cloud KMS (application default credentials)
//	azurekeyvault://VAULT.vault.azure.net/keys/NAME              Azure Key Vault (default Azure credentials)
//	hashivault://NAME                Vault or OpenBao Transit key NAME; server and token from VAULT_ADDR
//	                                 (or VAULT_SERVER_URL) and VAULT_TOKEN
//
// The key services go through gocloud.dev/secrets: one portable client
// instead of four hand-written ones.
//
// A keyring is text, one key a line: "ID VERSION BASE64KEY" (32-byte keys,
// VERSION a positive integer; blank lines and # comments are ignored). The
// highest version of a key wraps new data keys; every version listed can
// unwrap. A file holding exactly one base64 key, or 32 raw bytes, is key
// "default" version 1.
//
// # Key hierarchy and caching
//
// Keys never sends data keys to the key service one by one. It draws a
// random intermediate key (IK), has the provider wrap it once, and wraps
// the data keys it issues with the IK locally (AES-256-GCM) for
// Options.IntermediateKeyTTL (5 minutes); the stored wrapped form holds
// both (see Wrapped). Opening a wrapped key unwraps its IK through the
// provider once and keeps it for Options.CacheTTL (5 minutes, at most
// Options.CacheEntries IKs); concurrent misses for one IK make one call.
// In steady state a node calls the key service about once per key per
// IntermediateKeyTTL for writes, and once per IK it has not seen for reads —
// not per request. This is what AWS S3 Bucket Keys do.
//
// # Failures
//
// Every error is an errcode error: an unknown key id is errcode.NotFound
// with Detail["resource"] = "kms_key" (S3: KMS.NotFoundException); a key the
// service refuses (disabled, no permission) errcode.PermissionDenied with the
// same resource; a key service that cannot be reached or answers with a
// server error errcode.Unavailable with RetryAfter set (HTTP 503 +
// Retry-After). A wrapped key that does not unwrap is errcode.Internal with
// Detail["reason"] = "integrity". Nothing ever falls back to storing
// plaintext: a caller that cannot get a data key cannot encrypt, and must
// refuse the write.
//
// # Rotation
//
// Rotate makes a new KEK version the one new data keys are wrapped under;
// older versions keep unwrapping. Rewrap moves a stored wrapped key to the
// current version without touching the object's bytes (the data key stays
// the same); once nothing refers to an old version it can be removed from
// the keyring or disabled in the key service.
package kms

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// KeyRef names one version of a KEK. ID is "scheme:name" (local:default,
// awskms:alias/coffer, hashivault:coffer, ...). Version is empty for key
// services that keep the version inside their ciphertext and never need a
// re-wrap for it (AWS KMS, GCP KMS, Azure Key Vault).
type KeyRef struct {
	ID      string
	Version string
}

func (r KeyRef) String() string {
	if r.Version == "" {
		return r.ID
	}
	return r.ID + "#" + r.Version
}

// Name is the ID without its scheme: the key id a client named.
func (r KeyRef) Name() string {
	if _, name, ok := strings.Cut(r.ID, ":"); ok {
		return name
	}
	return r.ID
}

// Provider is a key service: it wraps and unwraps small secrets under
// its KEKs. Implementations must be safe for concurrent use and classify
// their errors as the package doc says. Keys is the only caller.
type Provider interface {
	// Default returns the KEK Wrap uses for keyID "".
	Default() KeyRef
	// Wrap encrypts plaintext (a 32-byte key) under the current version
	// of keyID (the name without scheme; "" = Default) and returns the
	// ciphertext and the KEK version that made it. An unknown keyID is
	// NotFound (resource kms_key).
	Wrap(ctx context.Context, keyID string, plaintext []byte) ([]byte, KeyRef, error)
	// Unwrap decrypts what Wrap returned under kek.
	Unwrap(ctx context.Context, kek KeyRef, ciphertext []byte) ([]byte, error)
	// Rotate makes a new version of the default KEK current and returns
	// it; Unwrap keeps accepting the old versions. Providers whose service
	// rotates by itself (AWS, GCP, Azure: versions are inside the
	// ciphertext) return the default unchanged; Vault/OpenBao re-read the
	// key's latest version after it was rotated in Vault.
	Rotate(ctx context.Context) (KeyRef, error)
	Close() error
}

// Options configure Open and New. Zero values take the defaults.
type Options struct {
	// DataDir is the data folder, where the default local keyring lives.
	DataDir string
	// Env looks up environment variables for local:?env=NAME (default
	// os.Getenv).
	Env func(string) string
	// CacheTTL is how long an unwrapped intermediate key is kept
	// (default 5 min; negative: not kept).
	CacheTTL time.Duration
	// CacheEntries bounds the unwrapped intermediate keys kept (default
	// 10000).
	CacheEntries int
	// IntermediateKeyTTL is how long one intermediate key wraps new data
	// keys (default 5 min; negative: a fresh one, i.e. one key service
	// call, per data key). Writes keep working this long into a key
	// service outage.
	IntermediateKeyTTL time.Duration
	// Timeout bounds each key service call (default 10 s).
	Timeout time.Duration
	// RetryAfter is the hint on Unavailable errors (default 5 s).
	RetryAfter time.Duration
}

func (o Options) withDefaults() Options {
	if o.Env == nil {
		o.Env = os.Getenv
	}
	if o.CacheTTL == 0 {
		o.CacheTTL = 5 * time.Minute
	}
	if o.CacheEntries <= 0 {
		o.CacheEntries = 10000
	}
	if o.IntermediateKeyTTL == 0 {
		o.IntermediateKeyTTL = 5 * time.Minute
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.RetryAfter <= 0 {
		o.RetryAfter = 5 * time.Second
	}
	return o
}

// DefaultKeyringName is the keyring file of "local:" in the data folder.
const DefaultKeyringName = "kms.keyring"

// Open opens the provider rawURL names (see the package doc) and returns
// Keys over it.
func Open(ctx context.Context, rawURL string, opts Options) (*Keys, error) {
	p, err := OpenProvider(ctx, rawURL, opts)
	if err != nil {
		return nil, err
	}
	return New(p, opts), nil
}

// InDataDir reports whether rawURL names the default keyring in the data
// folder ("" or "local:", with or without ?key=), which Open makes on
// first use; every other provider exists already and Open makes nothing.
func InDataDir(rawURL string) bool {
	if rawURL == "" {
		return true
	}
	u, err := url.Parse(rawURL)
	return err == nil && u.Scheme == "local" && u.Opaque == "" && u.Host == "" && u.Path == "" && u.Query().Get("env") == ""
}

// OpenProvider opens the bare provider rawURL names, without Keys' caching.
func OpenProvider(ctx context.Context, rawURL string, opts Options) (Provider, error) {
	opts = opts.withDefaults()
	if rawURL == "" {
		rawURL = "local:"
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidArgument, err, "KMS URL %q is malformed", redact(rawURL))
	}
	switch u.Scheme {
	case "local":
		return openLocal(u, opts)
	case schemeAWS, schemeGCP, schemeAzure, schemeVault:
		return openCloud(ctx, u, opts)
	}
	return nil, errcode.New(errcode.InvalidArgument,
		"KMS URL %q: unknown scheme %q (want local, awskms, gcpkms, azurekeyvault or hashivault)", redact(rawURL), u.Scheme)
}

// redact drops a URL's query (it may name credentials) for messages.
func redact(raw string) string {
	if i := strings.IndexByte(raw, '?'); i >= 0 {
		return raw[:i] + "?…"
	}
	return raw
}

// defaultKeyringPath is the default local keyring of opts.
func defaultKeyringPath(opts Options) (string, error) {
	if opts.DataDir == "" {
		return "", errcode.New(errcode.InvalidArgument, "the local KMS needs a data folder or a keyring path")
	}
	return filepath.Join(opts.DataDir, DefaultKeyringName), nil
}

// ---------------------------------------------------------------- errors

// ErrKeyNotFound is the cause of NotFound errors for unknown key ids.
var ErrKeyNotFound = errors.New("KMS key not found")

func notFound(keyID string) error {
	return &errcode.Error{Code: errcode.NotFound, Message: fmt.Sprintf("KMS key %q does not exist", keyID),
		Err: ErrKeyNotFound, Detail: map[string]any{"resource": "kms_key", "key_id": keyID}}
}

func unavailable(err error, retry time.Duration) error {
	return &errcode.Error{Code: errcode.Unavailable, Message: "the key service is unavailable; retry",
		Err: err, RetryAfter: retry, Detail: map[string]any{"resource": "kms"}}
}

// ErrUnwrap is the cause of integrity errors: a wrapped key that does not
// unwrap under the key that supposedly wrapped it.
var ErrUnwrap = errors.New("wrapped key failed authentication")

func integrity(err error) error {
	if err == nil {
		err = ErrUnwrap
	} else {
		err = fmt.Errorf("%w: %v", ErrUnwrap, err)
	}
	return &errcode.Error{Code: errcode.Internal, Message: "a stored data key failed its integrity check",
		Err: err, Detail: map[string]any{"reason": "integrity"}}
}
