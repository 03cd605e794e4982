package kms

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coffer-storage/coffer/internal/atomicfile"
	"github.com/coffer-storage/coffer/internal/errcode"
)

// Local is the local master key provider: KEKs from a keyring file or an
// environment variable, wrapping with AES-256-GCM under the KEK with
// "id, version" as associated data.
type Local struct {
	path     string // keyring file, or "" for a keyring from the environment
	source   string // for messages: the file or the variable
	wantName string // ?key=, or "" for the default choice

	mu      sync.RWMutex
	ring    keyring
	def     string    // the default key's id
	modTime time.Time // of the file when loaded
	size    int64
}

var _ Provider = (*Local)(nil)

// keyring maps id → version → key.
type keyring map[string]map[int][]byte

// latest returns the highest version of id.
func (r keyring) latest(id string) (int, []byte, bool) {
	vs := r[id]
	best := 0
	for v := range vs {
		best = max(best, v)
	}
	return best, vs[best], best > 0
}

const maxKeyringSize = 1 << 20

// parseKeyring parses a keyring (see the package doc) and returns its keys
// and the id of its first line. Every malformed line is an
// InvalidArgument naming the line, never echoing key material.
func parseKeyring(b []byte) (keyring, string, error) {
	if len(b) > maxKeyringSize {
		return nil, "", errcode.New(errcode.InvalidArgument, "keyring larger than %d bytes", maxKeyringSize)
	}
	if len(b) == 32 { // no text keyring is this short: a raw key
		return keyring{"default": {1: bytes.Clone(b)}}, "default", nil
	}
	text := strings.TrimSpace(string(b))
	if k, err := base64.StdEncoding.DecodeString(text); err == nil && !strings.ContainsAny(text, " \t\n") {
		if len(k) != 32 {
			return nil, "", errcode.New(errcode.InvalidArgument, "keyring: a key must be 32 bytes, not %d", len(k))
		}
		return keyring{"default": {1: k}}, "default", nil
	}
	r, first := keyring{}, ""
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		bad := func(why string) (keyring, string, error) {
			return nil, "", errcode.New(errcode.InvalidArgument, "keyring line %d: %s (want \"ID VERSION BASE64KEY\")", i+1, why)
		}
		if len(f) != 3 {
			return bad("not three fields")
		}
		id := f[0]
		if !validKeyName(id) {
			return bad("bad key id")
		}
		v, err := strconv.Atoi(f[1])
		if err != nil || v < 1 || f[1] != strconv.Itoa(v) {
			return bad("version is not a positive integer")
		}
		k, err := base64.StdEncoding.DecodeString(f[2])
		if err != nil || len(k) != 32 {
			return bad("key is not 32 bytes in base64")
		}
		if r[id] == nil {
			r[id] = map[int][]byte{}
		}
		if _, dup := r[id][v]; dup {
			return bad("duplicate version")
		}
		r[id][v] = k
		if first == "" {
			first = id
		}
	}
	if first == "" {
		return nil, "", errcode.New(errcode.InvalidArgument, "keyring holds no key")
	}
	return r, first, nil
}

// validKeyName: printable ASCII without spaces, '#' or ':' leading, at most
// 256 bytes.
func validKeyName(s string) bool {
	if s == "" || len(s) > 256 || strings.HasPrefix(s, "#") {
		return false
	}
	for _, c := range []byte(s) {
		if c <= 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

func openLocal(u *url.URL, opts Options) (*Local, error) {
	q := u.Query()
	l := &Local{wantName: q.Get("key")}
	for k := range q {
		if k != "env" && k != "key" {
			return nil, errcode.New(errcode.InvalidArgument, "local KMS URL: unknown parameter %q", k)
		}
	}
	path := u.Path
	if u.Opaque != "" || u.Host != "" {
		return nil, errcode.New(errcode.InvalidArgument, "local KMS URL: want local:///absolute/path, local: or local:?env=NAME")
	}
	switch env := q.Get("env"); {
	case env != "" && path != "":
		return nil, errcode.New(errcode.InvalidArgument, "local KMS URL: a path or env=, not both")
	case env != "":
		v := opts.Env(env)
		if v == "" {
			return nil, errcode.New(errcode.InvalidArgument, "local KMS: environment variable %s is empty", env)
		}
		l.source = "environment variable " + env
		if err := l.load([]byte(v)); err != nil {
			return nil, err
		}
		return l, nil
	case path == "":
		p, err := defaultKeyringPath(opts)
		if err != nil {
			return nil, err
		}
		if err := createKeyring(p); err != nil {
			return nil, err
		}
		path = p
	}
	if !filepath.IsAbs(path) {
		return nil, errcode.New(errcode.InvalidArgument, "local KMS URL: the keyring path must be absolute")
	}
	l.path, l.source = path, path
	if err := l.reload(); err != nil {
		return nil, err
	}
	return l, nil
}

// createKeyring creates a keyring with one fresh key at path if there is
// no file there (the default keyring only: an explicit path must exist, or
// a node of a cluster would silently make a key of its own). It is
// written whole or not at all (atomicfile): a start that crashes or fails
// right after never leaves a half-written keyring for the next one.
func createKeyring(path string) error {
	line := fmt.Sprintf("# Coffer KMS keyring: ID VERSION BASE64KEY per line; the highest version of a key wraps new data keys.\n"+
		"# Losing this file loses every encrypted object. Back it up apart from the data.\ndefault 1 %s\n", newKeyBase64())
	err := atomicfile.Create(path, []byte(line), 0o600)
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return errcode.Wrap(errcode.Internal, err, "creating the KMS keyring")
	}
	return nil
}

func newKeyBase64() string {
	k := make([]byte, 32)
	rand.Read(k)
	return base64.StdEncoding.EncodeToString(k)
}

// reload re-reads the keyring file.
func (l *Local) reload() error {
	st, err := os.Stat(l.path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return errcode.Wrap(errcode.InvalidArgument, err, "KMS keyring %s does not exist", l.path)
		}
		return errcode.Wrap(errcode.Internal, err, "reading KMS keyring %s", l.path)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return errcode.New(errcode.InvalidArgument, "KMS keyring %s is readable by others (mode %v); chmod 600 it", l.path, st.Mode().Perm())
	}
	b, err := os.ReadFile(l.path)
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "reading KMS keyring %s", l.path)
	}
	if err := l.load(b); err != nil {
		return err
	}
	l.mu.Lock()
	l.modTime, l.size = st.ModTime(), st.Size()
	l.mu.Unlock()
	return nil
}

// refresh re-reads a keyring file that changed since it was loaded (another
// node or process rotated it).
func (l *Local) refresh() error {
	if l.path == "" {
		return nil
	}
	st, err := os.Stat(l.path)
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "reading KMS keyring %s", l.path)
	}
	l.mu.RLock()
	same := st.ModTime().Equal(l.modTime) && st.Size() == l.size
	l.mu.RUnlock()
	if same {
		return nil
	}
	return l.reload()
}

func (l *Local) load(b []byte) error {
	r, first, err := parseKeyring(b)
	if err != nil {
		return errcode.Wrap(errcode.InvalidArgument, err, "KMS keyring %s: %s", l.source, errcode.Message(err))
	}
	def := first
	if _, ok := r["default"]; ok {
		def = "default"
	}
	if l.wantName != "" {
		if _, ok := r[l.wantName]; !ok {
			return errcode.New(errcode.InvalidArgument, "KMS keyring %s has no key %q", l.source, l.wantName)
		}
		def = l.wantName
	}
	l.mu.Lock()
	l.ring, l.def = r, def
	l.mu.Unlock()
	return nil
}

// Default implements Provider.
func (l *Local) Default() KeyRef {
	l.mu.RLock()
	defer l.mu.RUnlock()
	v, _, _ := l.ring.latest(l.def)
	return KeyRef{ID: "local:" + l.def, Version: strconv.Itoa(v)}
}

// Fingerprint returns a non-secret fingerprint of a KEK version (hex
// HMAC-SHA256 of a label under the key), for checking that the nodes of a
// cluster hold the same keys; "" if the version is unknown.
func (l *Local) Fingerprint(ref KeyRef) string {
	k, ok := l.key(ref)
	if !ok {
		return ""
	}
	m := hmac.New(sha256.New, k)
	m.Write([]byte("coffer kms local key fingerprint v1"))
	return hex.EncodeToString(m.Sum(nil))
}

func (l *Local) key(ref KeyRef) ([]byte, bool) {
	name, ok := strings.CutPrefix(ref.ID, "local:")
	v, err := strconv.Atoi(ref.Version)
	if !ok || err != nil {
		return nil, false
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	k, ok := l.ring[name][v]
	return k, ok
}

func localAD(ref KeyRef) []byte {
	return []byte("coffer/kms local wrap v1\x00" + ref.ID + "\x00" + ref.Version)
}

func gcm(key []byte) cipher.AEAD {
	b, err := aes.NewCipher(key)
	if err != nil {
		panic(err) // keys are 32 bytes by construction
	}
	a, err := cipher.NewGCM(b)
	if err != nil {
		panic(err)
	}
	return a
}

// Wrap implements Provider. A keyring file that changed since it was read
// is read again first (Keys calls Wrap once per intermediate key, rarely).
func (l *Local) Wrap(ctx context.Context, keyID string, plaintext []byte) ([]byte, KeyRef, error) {
	if err := l.refresh(); err != nil {
		return nil, KeyRef{}, err
	}
	l.mu.RLock()
	name := keyID
	if name == "" {
		name = l.def
	}
	v, k, ok := l.ring.latest(name)
	l.mu.RUnlock()
	if !ok {
		return nil, KeyRef{}, notFound(keyID)
	}
	ref := KeyRef{ID: "local:" + name, Version: strconv.Itoa(v)}
	a := gcm(k)
	nonce := make([]byte, a.NonceSize(), a.NonceSize()+len(plaintext)+a.Overhead())
	rand.Read(nonce)
	return a.Seal(nonce, nonce, plaintext, localAD(ref)), ref, nil
}

// Unwrap implements Provider. A version the keyring does not hold makes a
// file keyring re-read once (another node may have rotated).
func (l *Local) Unwrap(ctx context.Context, kek KeyRef, ciphertext []byte) ([]byte, error) {
	if !strings.HasPrefix(kek.ID, "local:") {
		return nil, notFound(kek.ID)
	}
	k, ok := l.key(kek)
	if !ok && l.path != "" {
		if err := l.reload(); err != nil {
			return nil, err
		}
		k, ok = l.key(kek)
	}
	if !ok {
		return nil, notFound(kek.String())
	}
	a := gcm(k)
	if len(ciphertext) < a.NonceSize()+a.Overhead() {
		return nil, integrity(errors.New("wrapped key too short"))
	}
	n := a.NonceSize()
	pt, err := a.Open(nil, ciphertext[:n], ciphertext[n:], localAD(kek))
	if err != nil {
		return nil, integrity(err)
	}
	return pt, nil
}

// Rotate implements Provider: it appends a new version of the default key
// to the keyring file (atomically: a new file renamed over the old one).
// A keyring from the environment cannot be rotated from here.
func (l *Local) Rotate(ctx context.Context) (KeyRef, error) {
	if l.path == "" {
		return KeyRef{}, errcode.New(errcode.NotImplemented,
			"the KMS keyring comes from %s: add a line \"ID VERSION BASE64KEY\" with a higher version there on every node and restart", l.source)
	}
	if err := l.reload(); err != nil {
		return KeyRef{}, err
	}
	old, err := os.ReadFile(l.path)
	if err != nil {
		return KeyRef{}, errcode.Wrap(errcode.Internal, err, "reading KMS keyring %s", l.path)
	}
	l.mu.RLock()
	def := l.def
	v, _, _ := l.ring.latest(def)
	raw := len(old) == 32
	single := !raw && !strings.ContainsAny(strings.TrimSpace(string(old)), " \t\n")
	l.mu.RUnlock()
	var out []byte
	switch {
	case raw || single: // rewrite a bare key as keyring lines
		l.mu.RLock()
		k := l.ring[def][1]
		l.mu.RUnlock()
		out = fmt.Appendf(nil, "%s 1 %s\n", def, base64.StdEncoding.EncodeToString(k))
	default:
		out = append(bytes.TrimRight(old, "\n"), '\n')
	}
	out = fmt.Appendf(out, "%s %d %s\n", def, v+1, newKeyBase64())
	if err := atomicfile.Replace(l.path, out, 0o600); err != nil {
		return KeyRef{}, errcode.Wrap(errcode.Internal, err, "rotating the KMS keyring")
	}
	if err := l.reload(); err != nil {
		return KeyRef{}, err
	}
	return l.Default(), nil
}

// Keys returns the keyring's key ids, sorted.
func (l *Local) Keys() []string {
	l.mu.RLock()
	defer l.mu.RUnlock()
	ids := make([]string, 0, len(l.ring))
	for id := range l.ring {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Close implements Provider.
func (l *Local) Close() error { return nil }
