package kms

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
)

func openLocalKeys(t *testing.T, url string, opts Options) *Keys {
	t.Helper()
	k, err := Open(context.Background(), url, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	return k
}

func roundTrip(t *testing.T, k *Keys, keyID string) DataKey {
	t.Helper()
	ctx := context.Background()
	dk, err := k.GenerateDataKey(ctx, keyID)
	if err != nil {
		t.Fatal(err)
	}
	if len(dk.Plaintext) != DataKeySize {
		t.Fatalf("data key of %d bytes", len(dk.Plaintext))
	}
	if bytes.Contains(dk.Wrapped.Ciphertext, dk.Plaintext) {
		t.Fatal("the wrapped key holds the data key in the clear")
	}
	got, err := k.Unwrap(ctx, dk.Wrapped)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, dk.Plaintext) {
		t.Fatal("unwrapped another key")
	}
	return dk
}

func TestDefaultKeyringCreated(t *testing.T) {
	dir := t.TempDir()
	k := openLocalKeys(t, "", Options{DataDir: dir})
	dk := roundTrip(t, k, "")
	if got, want := dk.Wrapped.KEK, (KeyRef{ID: "local:default", Version: "1"}); got != want {
		t.Fatalf("KEK %v, want %v", got, want)
	}
	st, err := os.Stat(filepath.Join(dir, DefaultKeyringName))
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Mode().Perm(); got != 0o600 {
		t.Fatalf("keyring mode %v, want 0600", got)
	}
	// A restart (a new Keys, cold caches) reads the same key.
	k2 := openLocalKeys(t, "local:", Options{DataDir: dir})
	got, err := k2.Unwrap(context.Background(), dk.Wrapped)
	if err != nil || !bytes.Equal(got, dk.Plaintext) {
		t.Fatalf("after reopening: %v", err)
	}
}

func TestKeyringForms(t *testing.T) {
	key := bytes.Repeat([]byte{9}, 32)
	b64 := base64.StdEncoding.EncodeToString(key)
	write := func(t *testing.T, content []byte, mode os.FileMode) string {
		p := filepath.Join(t.TempDir(), "ring")
		if err := os.WriteFile(p, content, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	env := map[string]string{"RING": "a 1 " + b64 + "\nb 3 " + b64 + "\n", "ONE": b64}
	opts := Options{Env: func(k string) string { return env[k] }}
	for _, tc := range []struct {
		name    string
		url     func(t *testing.T) string
		wantDef KeyRef
	}{
		{"raw 32 bytes", func(t *testing.T) string { return "local://" + write(t, key, 0o600) }, KeyRef{"local:default", "1"}},
		{"one base64 key", func(t *testing.T) string { return "local://" + write(t, []byte(b64+"\n"), 0o600) }, KeyRef{"local:default", "1"}},
		{"keyring lines, first is default", func(t *testing.T) string {
			return "local://" + write(t, []byte("# c\n\nx 1 "+b64+"\nx 2 "+b64+"\ny 1 "+b64+"\n"), 0o600)
		}, KeyRef{"local:x", "2"}},
		{"key= picks the default", func(t *testing.T) string {
			return "local://" + write(t, []byte("x 1 "+b64+"\ny 7 "+b64+"\n"), 0o600) + "?key=y"
		}, KeyRef{"local:y", "7"}},
		{"env keyring", func(*testing.T) string { return "local:?env=RING" }, KeyRef{"local:a", "1"}},
		{"env single key", func(*testing.T) string { return "local:?env=ONE" }, KeyRef{"local:default", "1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := openLocalKeys(t, tc.url(t), opts)
			if got := k.Default(); got != tc.wantDef {
				t.Fatalf("default %v, want %v", got, tc.wantDef)
			}
			roundTrip(t, k, "")
		})
	}
	for _, tc := range []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"readable by others", func(t *testing.T) string { return "local://" + write(t, key, 0o644) }},
		{"explicit path missing", func(t *testing.T) string { return "local://" + filepath.Join(t.TempDir(), "none") }},
		{"relative path", func(*testing.T) string { return "local:ring" }},
		{"no data folder", func(*testing.T) string { return "local:" }},
		{"short key", func(t *testing.T) string { return "local://" + write(t, []byte("default 1 AAAA\n"), 0o600) }},
		{"bad version", func(t *testing.T) string { return "local://" + write(t, []byte("default v1 "+b64+"\n"), 0o600) }},
		{"duplicate version", func(t *testing.T) string {
			return "local://" + write(t, []byte("d 1 "+b64+"\nd 1 "+b64+"\n"), 0o600)
		}},
		{"empty", func(t *testing.T) string { return "local://" + write(t, []byte("# nothing\n"), 0o600) }},
		{"unknown key=", func(t *testing.T) string { return "local://" + write(t, key, 0o600) + "?key=other" }},
		{"unknown parameter", func(t *testing.T) string { return "local://" + write(t, key, 0o600) + "?create=1" }},
		{"empty env", func(*testing.T) string { return "local:?env=UNSET" }},
		{"unknown scheme", func(*testing.T) string { return "vault://x" }},
	} {
		t.Run("refused: "+tc.name, func(t *testing.T) {
			_, err := Open(context.Background(), tc.url(t), opts)
			if !errcode.Is(err, errcode.InvalidArgument) {
				t.Fatalf("err = %v, want InvalidArgument", err)
			}
			if err != nil && strings.Contains(err.Error(), b64) {
				t.Fatal("the error shows key material")
			}
		})
	}
}

func TestUnknownKeyID(t *testing.T) {
	k := openLocalKeys(t, "", Options{DataDir: t.TempDir()})
	ctx := context.Background()
	if err := k.KeyExists(ctx, "default"); err != nil {
		t.Fatalf("default: %v", err)
	}
	for _, f := range []func() error{
		func() error { return k.KeyExists(ctx, "nope") },
		func() error { _, err := k.GenerateDataKey(ctx, "nope"); return err },
	} {
		err := f()
		if e := errcode.As(err); e == nil || e.Code != errcode.NotFound || e.Detail["resource"] != "kms_key" {
			t.Fatalf("err = %v, want NotFound with resource kms_key", err)
		}
	}
	// A wrapped key naming a KEK that is not in the keyring.
	dk := roundTrip(t, k, "")
	w := dk.Wrapped
	w.KEK.Version = "9"
	k2 := openLocalKeys(t, "", Options{DataDir: t.TempDir()})
	if _, err := k2.Unwrap(ctx, w); !errcode.Is(err, errcode.NotFound) {
		t.Fatalf("unknown KEK version: %v", err)
	}
}

func TestTamperedWrappedKey(t *testing.T) {
	dir := t.TempDir()
	k := openLocalKeys(t, "", Options{DataDir: dir})
	dk := roundTrip(t, k, "")
	cold := openLocalKeys(t, "", Options{DataDir: dir}) // nothing cached
	for i := range dk.Wrapped.Ciphertext {
		w := dk.Wrapped
		w.Ciphertext = bytes.Clone(w.Ciphertext)
		w.Ciphertext[i] ^= 0x10
		_, err := cold.Unwrap(context.Background(), w)
		if e := errcode.As(err); e == nil || e.Code != errcode.Internal || e.Detail["reason"] != "integrity" {
			t.Fatalf("byte %d flipped: %v, want an integrity error", i, err)
		}
	}
	// Another KEK version than the one that wrapped it.
	if _, err := cold.Rotate(context.Background()); err != nil {
		t.Fatal(err)
	}
	w := dk.Wrapped
	w.KEK.Version = "2"
	if _, err := cold.Unwrap(context.Background(), w); errcode.Of(err) != errcode.Internal {
		t.Fatalf("wrong KEK version: %v", err)
	}
}

func TestRotate(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	k := openLocalKeys(t, "", Options{DataDir: dir})
	// A second node on the same keyring file, issuing with short-lived
	// intermediate keys.
	other := openLocalKeys(t, "", Options{DataDir: dir, IntermediateKeyTTL: -1})
	old := roundTrip(t, k, "")
	ref, err := k.Rotate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := (KeyRef{"local:default", "2"}); ref != want {
		t.Fatalf("rotated to %v, want %v", ref, want)
	}
	cur := roundTrip(t, k, "")
	if cur.Wrapped.KEK != ref {
		t.Fatalf("new data key under %v, want %v", cur.Wrapped.KEK, ref)
	}
	// Old wrapped keys still open, here and on the other node.
	for _, kk := range []*Keys{k, other} {
		if got, err := kk.Unwrap(ctx, old.Wrapped); err != nil || !bytes.Equal(got, old.Plaintext) {
			t.Fatalf("old key after rotation: %v", err)
		}
		if got, err := kk.Unwrap(ctx, cur.Wrapped); err != nil || !bytes.Equal(got, cur.Plaintext) {
			t.Fatalf("new key on another node: %v", err)
		}
	}
	// The other node issues under the new version (it reads the changed file).
	if dk := roundTrip(t, other, ""); dk.Wrapped.KEK != ref {
		t.Fatalf("other node issues under %v, want %v", dk.Wrapped.KEK, ref)
	}
	// Rewrap moves the old key to the new version, same data key.
	rw, changed, err := k.Rewrap(ctx, old.Wrapped, "")
	if err != nil || !changed || rw.KEK != ref {
		t.Fatalf("rewrap: %v changed=%v KEK=%v", err, changed, rw.KEK)
	}
	cold := openLocalKeys(t, "", Options{DataDir: dir})
	if got, err := cold.Unwrap(ctx, rw); err != nil || !bytes.Equal(got, old.Plaintext) {
		t.Fatalf("rewrapped key: %v", err)
	}
	if _, changed, err := k.Rewrap(ctx, rw, ""); err != nil || changed {
		t.Fatalf("rewrap of a current key: changed=%v %v", changed, err)
	}
	// Only version 2 left: old wrapped keys fail, rewrapped ones open.
	b, _ := os.ReadFile(filepath.Join(dir, DefaultKeyringName))
	var keep []string
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(l, "default 1 ") {
			keep = append(keep, l)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, DefaultKeyringName), []byte(strings.Join(keep, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	cold = openLocalKeys(t, "", Options{DataDir: dir})
	if _, err := cold.Unwrap(ctx, old.Wrapped); !errcode.Is(err, errcode.NotFound) {
		t.Fatalf("old version removed: %v", err)
	}
	if _, err := cold.Unwrap(ctx, rw); err != nil {
		t.Fatalf("rewrapped key after removing the old version: %v", err)
	}
}

func TestRotateEnvKeyringRefused(t *testing.T) {
	key := base64.StdEncoding.EncodeToString(make([]byte, 32))
	k := openLocalKeys(t, "local:?env=K", Options{Env: func(string) string { return key }})
	if _, err := k.Rotate(context.Background()); !errcode.Is(err, errcode.NotImplemented) {
		t.Fatalf("err = %v, want NotImplemented", err)
	}
}

// counting counts provider calls and can fail them (fault injection).
type counting struct {
	Provider
	wraps, unwraps atomic.Int64
	down           atomic.Bool
}

func (c *counting) Wrap(ctx context.Context, keyID string, pt []byte) ([]byte, KeyRef, error) {
	c.wraps.Add(1)
	if c.down.Load() {
		return nil, KeyRef{}, unavailable(nil, 7*time.Second)
	}
	return c.Provider.Wrap(ctx, keyID, pt)
}

func (c *counting) Unwrap(ctx context.Context, kek KeyRef, ct []byte) ([]byte, error) {
	c.unwraps.Add(1)
	if c.down.Load() {
		time.Sleep(10 * time.Millisecond)
		return nil, unavailable(nil, 7*time.Second)
	}
	return c.Provider.Unwrap(ctx, kek, ct)
}

func countingKeys(t *testing.T, dir string, opts Options) (*Keys, *counting) {
	t.Helper()
	opts.DataDir = dir
	p, err := OpenProvider(context.Background(), "", opts)
	if err != nil {
		t.Fatal(err)
	}
	c := &counting{Provider: p}
	k := New(c, opts)
	t.Cleanup(func() { k.Close() })
	return k, c
}

// TestCaching: data keys cost no provider call per request.
func TestCaching(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	k, c := countingKeys(t, dir, Options{})
	var dks []DataKey
	for range 100 {
		dk, err := k.GenerateDataKey(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		dks = append(dks, dk)
	}
	for _, dk := range dks {
		if _, err := k.Unwrap(ctx, dk.Wrapped); err != nil {
			t.Fatal(err)
		}
	}
	if got := c.wraps.Load() + c.unwraps.Load(); got != 1 {
		t.Fatalf("100 data keys issued and opened with %d provider calls, want 1", got)
	}
	// A cold node opening them all concurrently unwraps the shared
	// intermediate key once.
	cold, cc := countingKeys(t, dir, Options{})
	var wg sync.WaitGroup
	for _, dk := range dks {
		wg.Go(func() {
			got, err := cold.Unwrap(ctx, dk.Wrapped)
			if err != nil || !bytes.Equal(got, dk.Plaintext) {
				t.Errorf("unwrap: %v", err)
			}
		})
	}
	wg.Wait()
	if got := cc.unwraps.Load(); got != 1 {
		t.Fatalf("cold node: %d provider unwraps, want 1", got)
	}
	// Intermediate keys expire: a new one is drawn.
	short, sc := countingKeys(t, dir, Options{IntermediateKeyTTL: 50 * time.Millisecond})
	a, _ := short.GenerateDataKey(ctx, "")
	time.Sleep(150 * time.Millisecond)
	b, _ := short.GenerateDataKey(ctx, "")
	if got := sc.wraps.Load(); got != 2 || bytes.Equal(a.Wrapped.Ciphertext[:20], b.Wrapped.Ciphertext[:20]) {
		t.Fatalf("%d wraps after the intermediate key expired, want 2 and another key", got)
	}
}

// TestProviderOutage: an unreachable provider is Unavailable with a retry
// hint for what needs it, cached keys keep working, and it recovers by
// itself.
func TestProviderOutage(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	k, c := countingKeys(t, dir, Options{})
	hot := roundTrip(t, k, "")
	coldDK := roundTrip(t, openLocalKeys(t, "", Options{DataDir: dir}), "") // an IK k never saw
	c.down.Store(true)
	if _, err := k.Unwrap(ctx, hot.Wrapped); err != nil {
		t.Fatalf("cached key during the outage: %v", err)
	}
	_, err := k.Unwrap(ctx, coldDK.Wrapped)
	if e := errcode.As(err); e == nil || e.Code != errcode.Unavailable || e.RetryAfter <= 0 {
		t.Fatalf("cache miss during the outage: %v, want Unavailable with RetryAfter", err)
	}
	if _, err := k.GenerateDataKey(ctx, "other"); !errcode.Is(err, errcode.Unavailable) {
		t.Fatalf("new key id during the outage: %v", err)
	}
	// The metrics' counters: the hot key's one wrap; the cold unwrap and
	// the other key's wrap failed (the cached unwrap made no call).
	st := k.Stats()
	if w, we, u, ue := st.Wraps.Load(), st.WrapErrors.Load(), st.Unwraps.Load(), st.UnwrapErrors.Load(); w != 2 || we != 1 || u != 1 || ue != 1 {
		t.Errorf("stats: wraps %d (%d failed), unwraps %d (%d failed); want 2 (1), 1 (1)", w, we, u, ue)
	}
	// Errors are not cached: it works again as soon as the provider does.
	c.down.Store(false)
	if got, err := k.Unwrap(ctx, coldDK.Wrapped); err != nil || !bytes.Equal(got, coldDK.Plaintext) {
		t.Fatalf("after the outage: %v", err)
	}
	// Without intermediate key caching every new data key needs the provider.
	strict, sc := countingKeys(t, dir, Options{IntermediateKeyTTL: -1, CacheTTL: -1})
	sc.down.Store(true)
	if _, err := strict.GenerateDataKey(ctx, ""); !errcode.Is(err, errcode.Unavailable) {
		t.Fatalf("uncached issue during the outage: %v", err)
	}
}

func FuzzParseKeyring(f *testing.F) {
	b64 := base64.StdEncoding.EncodeToString(make([]byte, 32))
	f.Add([]byte("default 1 " + b64 + "\nx 2 " + b64 + "\n"))
	f.Add([]byte(b64))
	f.Add(make([]byte, 32))
	f.Add([]byte("# c\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, first, err := parseKeyring(b)
		if err != nil {
			if !errcode.Is(err, errcode.InvalidArgument) {
				t.Fatalf("error %v is not InvalidArgument", err)
			}
			return
		}
		if _, ok := r[first]; !ok {
			t.Fatalf("first key %q not in the keyring", first)
		}
		for id, vs := range r {
			for v, k := range vs {
				if len(k) != 32 || v < 1 || !validKeyName(id) {
					t.Fatalf("bad entry %q %d (%d bytes)", id, v, len(k))
				}
			}
		}
	})
}

// FuzzUnwrap: a garbage wrapped key never panics and never opens.
func FuzzUnwrap(f *testing.F) {
	k, err := Open(context.Background(), "", Options{DataDir: f.TempDir()})
	if err != nil {
		f.Fatal(err)
	}
	dk, err := k.GenerateDataKey(context.Background(), "")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(dk.Wrapped.Ciphertext, "local:default", "1")
	f.Add([]byte{1, 0, 1, 0}, "local:default", "1")
	f.Fuzz(func(t *testing.T, ct []byte, id, version string) {
		w := Wrapped{KEK: KeyRef{id, version}, Ciphertext: ct}
		got, err := k.Unwrap(context.Background(), w)
		if err == nil {
			if !bytes.Equal(ct, dk.Wrapped.Ciphertext) || !bytes.Equal(got, dk.Plaintext) {
				t.Fatal("a changed wrapped key opened")
			}
			return
		}
		if c := errcode.Of(err); c != errcode.Internal && c != errcode.NotFound {
			t.Fatalf("error %v: want integrity or NotFound", err)
		}
	})
}
