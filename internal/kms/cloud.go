//go:build !coffer_no_cloudkms

package kms

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"
	"sync"
	"time"

	"gocloud.dev/gcerrors"
	"gocloud.dev/secrets"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// Cloud is a key service reached through gocloud.dev/secrets: AWS KMS,
// GCP KMS, Azure Key Vault, Vault/OpenBao Transit. The URL names the
// default key; other key ids (a client's SSE-KMS key, the key of an older
// envelope) are opened with the same scheme and parameters.
type Cloud struct {
	scheme  string
	query   string // the URL's raw query, reused for every key
	def     string // the default key's name
	timeout time.Duration
	retry   time.Duration

	mu      sync.Mutex
	keepers map[string]*secrets.Keeper
	version string // Vault: the default key's latest version seen
}

var _ Provider = (*Cloud)(nil)

func openCloud(ctx context.Context, u *url.URL, opts Options) (Provider, error) {
	if cloudOpeners[u.Scheme] == nil {
		return nil, errcode.New(errcode.InvalidArgument,
			"KMS URL %q: this coffer was built without the %s driver (build tag coffer_no_%s)", redact(u.String()), u.Scheme, u.Scheme)
	}
	c := &Cloud{scheme: u.Scheme, query: u.RawQuery, timeout: opts.Timeout, retry: opts.RetryAfter,
		keepers: map[string]*secrets.Keeper{}}
	c.def = strings.TrimPrefix(path.Join(u.Host, u.Path), "/")
	if u.Opaque != "" {
		c.def = u.Opaque
	}
	if !validCloudKeyName(c.def) {
		return nil, errcode.New(errcode.InvalidArgument, "KMS URL %q names no key", redact(u.String()))
	}
	// Open the default keeper now, so a malformed URL fails at start.
	if _, err := c.keeper(ctx, c.def); err != nil {
		return nil, err
	}
	return c, nil
}

// cloudOpeners holds the opener of each key-service driver this build
// links, by scheme; the files driver_*.go fill it, one a driver (build
// tags: see drivers.go).
var cloudOpeners = map[string]func(context.Context, *url.URL) (*secrets.Keeper, error){}

// vaultStatus, set by the Vault driver, returns the HTTP status of a
// Vault/OpenBao error answer (0 if err is none).
var vaultStatus func(err error) int

// openKeeper opens a gocloud keeper for u with its scheme's driver.
func openKeeper(ctx context.Context, u *url.URL) (*secrets.Keeper, error) {
	return cloudOpeners[u.Scheme](ctx, u)
}

// validCloudKeyName accepts key ids, ARNs, aliases and resource paths,
// and nothing that could change the meaning of the keeper URL.
var cloudKeyName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9:/_.\-+=@]*$`)

func validCloudKeyName(s string) bool {
	return len(s) <= 2048 && cloudKeyName.MatchString(s) && !strings.Contains(s, "..")
}

// keeperURL is the URL of key name under c's scheme and parameters.
func (c *Cloud) keeperURL(name string) string {
	sep := "://"
	if c.scheme == schemeAWS {
		sep = ":///" // ARNs hold ':', which the host part cannot
	}
	s := c.scheme + sep + name
	if c.query != "" {
		s += "?" + c.query
	}
	return s
}

func (c *Cloud) keeper(ctx context.Context, name string) (*secrets.Keeper, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if k, ok := c.keepers[name]; ok {
		return k, nil
	}
	if len(c.keepers) >= 1000 {
		return nil, errcode.New(errcode.Unavailable, "too many distinct KMS keys in use")
	}
	u, err := url.Parse(c.keeperURL(name))
	if err != nil {
		return nil, notFound(name)
	}
	k, err := openKeeper(ctx, u)
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidArgument, err, "opening KMS key %q", name)
	}
	c.keepers[name] = k
	return k, nil
}

// forget drops the keeper of a key the service does not know, so that
// clients naming made-up keys (SSE-KMS) cannot fill the keeper map.
func (c *Cloud) forget(name string, err error) {
	if name == c.def || !errcode.Is(err, errcode.NotFound) {
		return
	}
	c.mu.Lock()
	k := c.keepers[name]
	delete(c.keepers, name)
	c.mu.Unlock()
	if k != nil {
		k.Close()
	}
}

// Default implements Provider.
func (c *Cloud) Default() KeyRef {
	c.mu.Lock()
	defer c.mu.Unlock()
	return KeyRef{ID: c.scheme + ":" + c.def, Version: c.version}
}

// call runs f with the provider's timeout. It runs f on its own goroutine
// so that a driver that ignores its context (gocloud's Vault keeper does)
// cannot hold the request past the timeout, and turns a driver panic
// (on a malformed service answer) into an error.
func (c *Cloud) call(ctx context.Context, f func(ctx context.Context) ([]byte, error)) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	type result struct {
		b   []byte
		err error
	}
	ch := make(chan result, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				ch <- result{err: fmt.Errorf("key service driver: %v", r)}
			}
		}()
		b, err := f(ctx)
		ch <- result{b, err}
	}()
	select {
	case r := <-ch:
		return r.b, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Wrap implements Provider.
func (c *Cloud) Wrap(ctx context.Context, keyID string, plaintext []byte) ([]byte, KeyRef, error) {
	name := keyID
	if name == "" {
		name = c.def
	}
	if !validCloudKeyName(name) {
		return nil, KeyRef{}, notFound(keyID)
	}
	k, err := c.keeper(ctx, name)
	if err != nil {
		return nil, KeyRef{}, err
	}
	ct, err := c.call(ctx, func(ctx context.Context) ([]byte, error) { return k.Encrypt(ctx, plaintext) })
	if err != nil {
		err = c.classify(ctx, err, name, false)
		c.forget(name, err)
		return nil, KeyRef{}, err
	}
	ref := KeyRef{ID: c.scheme + ":" + name, Version: c.versionOf(ct)}
	if name == c.def && ref.Version != "" {
		c.mu.Lock()
		c.version = ref.Version
		c.mu.Unlock()
	}
	return ct, ref, nil
}

// Unwrap implements Provider.
func (c *Cloud) Unwrap(ctx context.Context, kek KeyRef, ciphertext []byte) ([]byte, error) {
	name, ok := strings.CutPrefix(kek.ID, c.scheme+":")
	if !ok || !validCloudKeyName(name) {
		return nil, notFound(kek.ID)
	}
	k, err := c.keeper(ctx, name)
	if err != nil {
		return nil, err
	}
	pt, err := c.call(ctx, func(ctx context.Context) ([]byte, error) { return k.Decrypt(ctx, ciphertext) })
	if err != nil {
		err = c.classify(ctx, err, name, true)
		c.forget(name, err)
		return nil, err
	}
	return pt, nil
}

// vaultVersion reads the key version Vault/OpenBao Transit writes at the
// start of its ciphertexts ("vault:v3:...").
var vaultVersion = regexp.MustCompile(`^vault:v([0-9]+):`)

func (c *Cloud) versionOf(ct []byte) string {
	if c.scheme != schemeVault {
		return ""
	}
	if m := vaultVersion.FindSubmatch(ct); m != nil {
		return string(m[1])
	}
	return ""
}

// Rotate implements Provider: for Vault/OpenBao (rotate the key with
// "vault write -f transit/keys/NAME/rotate" first) it learns the new latest
// version with one probe wrap; other services version keys inside their
// ciphertext, so there is nothing to switch.
func (c *Cloud) Rotate(ctx context.Context) (KeyRef, error) {
	if c.scheme == schemeVault {
		if _, _, err := c.Wrap(ctx, "", make([]byte, 32)); err != nil {
			return KeyRef{}, err
		}
	}
	return c.Default(), nil
}

// classify maps a driver error into the package's codes. The caller's own
// cancellation stays a cancellation; everything the service did not
// answer clearly (network errors, timeouts, 5xx, throttling) is
// Unavailable.
func (c *Cloud) classify(ctx context.Context, err error, name string, unwrapping bool) error {
	if ctx.Err() != nil {
		return ctx.Err() // the caller went away or ran out of time
	}
	code := gcerrors.Code(err)
	if vaultStatus != nil {
		switch vaultStatus(err) {
		case 400:
			code = gcerrors.InvalidArgument
		case 403:
			code = gcerrors.PermissionDenied
		case 404:
			code = gcerrors.NotFound
		}
	}
	if code == gcerrors.Unknown {
		// gocloud leaves some refusals unclassified (AWS's
		// AccessDeniedException, anything from Vault): a 4xx answer is the
		// service refusing, not the service down.
		var status interface{ HTTPStatusCode() int }
		if errors.As(err, &status) {
			if s := status.HTTPStatusCode(); s >= 400 && s < 500 && s != 408 && s != 429 {
				code = gcerrors.PermissionDenied
			}
		}
	}
	switch code {
	case gcerrors.NotFound:
		return notFound(name)
	case gcerrors.InvalidArgument:
		if unwrapping {
			return integrity(err)
		}
		return notFound(name)
	case gcerrors.PermissionDenied, gcerrors.FailedPrecondition:
		return denied(name, err)
	}
	return unavailable(err, c.retry)
}

// denied is the error of a key the service refuses (disabled, no
// permission).
func denied(keyID string, err error) error {
	return &errcode.Error{Code: errcode.PermissionDenied, Message: fmt.Sprintf("KMS key %q cannot be used", keyID),
		Err: err, Detail: map[string]any{"resource": "kms_key", "key_id": keyID}}
}

// Close implements Provider.
func (c *Cloud) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, k := range c.keepers {
		errs = append(errs, k.Close())
	}
	c.keepers = nil
	return errors.Join(errs...)
}
