// Package blobtest is the conformance suite of blob.Store. Every backend runs
// it from its own tests:
//
//	func TestConformance(t *testing.T) {
//		blobtest.Run(t, func(t *testing.T) blob.Store { return memblob.New() })
//	}
//
//	func TestLargeStreamed(t *testing.T) {
//		if testing.Short() {
//			t.Skip("256 MiB object skipped in -short mode")
//		}
//		blobtest.RunLarge(t, memblob.New())
//	}
//
// A backend is done when Run passes, with and without -race, and RunLarge
// passes. (RunLarge is a Test function of its own in each backend, with
// its testing.Short check there: scripts/test.sh runs the tests -short
// skips, and only those, without the race detector, finding them by the
// Test function that calls testing.Short.)
//
// # What it checks
//
// Round trips of many sizes (known and unknown), ranged reads, size
// enforcement, cancellation and reader failures, atomic visibility of
// in-progress writes, concurrency, awkward and invalid keys, Delete while a
// reader is open, List order and prefix filtering; and, in RunLarge, a 256 MiB
// streamed object.
//
// # Decisions the contract leaves open
//
// The suite pins down a few behaviours blob.Store's comments do not spell
// out, because callers depend on them:
//   - Info.Key is the key asked for, in Put, Stat and List.
//   - A write aborted by its context fails with a code of errcode.Canceled
//     (errcode.Of sees context.Canceled in the chain).
//   - A write aborted by its reader's error returns an error wrapping it, so
//     errors.Is finds the reader's error.
//   - An invalid key is errcode.InvalidArgument from Get, Stat and Delete too,
//     not only from Put.
//   - A negative offset, or a length below -1, is errcode.InvalidArgument.
//   - List calls fn without holding locks: fn may call the store.
//
// Each subtest gets a fresh store from newStore, so backends need no cleanup
// between subtests; newStore should register its own cleanup with t.Cleanup.
package blobtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/coffer-storage/coffer/internal/blob"
	"github.com/coffer-storage/coffer/internal/errcode"
)

// Run runs the conformance suite against the stores newStore returns. Each
// subtest calls newStore once for a fresh, empty store.
func Run(t *testing.T, newStore func(t *testing.T) blob.Store) {
	RunWith(t, newStore, Options{})
}

// Options adapt the suite to a backend's documented limits.
type Options struct {
	// NoNestedKeys leaves out keys that are the "directory" of another
	// key of the same test ("a" and "a/b"). Object stores that map keys
	// onto a file system (MinIO) cannot hold both; Coffer never makes such
	// keys (its blob keys are o/<shard>/<random>), so such a backend is
	// usable, and every other case still runs.
	NoNestedKeys bool
}

// RunWith is Run with Options.
func RunWith(t *testing.T, newStore func(t *testing.T) blob.Store, opts Options) {
	flat := func(keys []string) []string {
		if !opts.NoNestedKeys {
			return keys
		}
		return dropNested(keys)
	}
	testWeirdKeys := func(t *testing.T, s blob.Store) { testWeirdKeysOf(t, s, flat(WeirdKeys())) }
	testDelete := func(t *testing.T, s blob.Store) {
		if opts.NoNestedKeys {
			testDeleteOf(t, s, "a", "a.b", "a.b.c")
		} else {
			testDeleteOf(t, s, "a", "a/b", "a/b/c")
		}
	}
	testListOrder := func(t *testing.T, s blob.Store) { testListOrderOf(t, s, flat) }
	testListPrefix := func(t *testing.T, s blob.Store) { testListPrefixOf(t, s, flat) }
	tests := []struct {
		name string
		fn   func(t *testing.T, s blob.Store)
	}{
		{"RoundTrip", testRoundTrip},
		{"Range", testRange},
		{"NotFound", testNotFound},
		{"SizeMismatch", testSizeMismatch},
		{"CancelledPut", testCancelledPut},
		{"ReaderError", testReaderError},
		{"NoPartialVisibility", testNoPartialVisibility},
		{"ConcurrentPuts", testConcurrentPuts},
		{"ConcurrentReaders", testConcurrentReaders},
		{"WeirdKeys", testWeirdKeys},
		{"InvalidKeys", testInvalidKeys},
		{"Delete", testDelete},
		{"DeleteWhileReading", testDeleteWhileReading},
		{"ListOrder", testListOrder},
		{"ListPrefix", testListPrefix},
		{"ListStops", testListStops},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.fn(t, newStore(t))
		})
	}
}

// slack is how far a ModTime may lie outside the window of the call that
// produced it: file systems with coarse timestamps and clocks that step.
const slack = 2 * time.Second

// maxReadAfterCancel is how much a Put may read after its context is
// cancelled: room for a backend that reads ahead a few upload parts.
const maxReadAfterCancel = 32 << 20

// waitLimit bounds every wait on a goroutine, so a store that hangs fails
// the test instead of the whole binary.
const waitLimit = 20 * time.Second

func testRoundTrip(t *testing.T, s blob.Store) {
	ctx := t.Context()
	sizes := []int{0, 1, 4 << 10, 1<<20 + 13}
	for _, size := range sizes {
		data := pattern(size, uint64(size))
		readers := []struct {
			name string
			r    func() io.Reader
			size int64
		}{
			{"known", func() io.Reader { return bytes.NewReader(data) }, int64(size)},
			{"unknown", func() io.Reader { return opaque{bytes.NewReader(data)} }, -1},
			// Small reads, and data delivered together with io.EOF.
			{"half-data-eof", func() io.Reader {
				return iotest.DataErrReader(iotest.HalfReader(bytes.NewReader(data)))
			}, int64(size)},
			{"one-byte-unknown", func() io.Reader {
				if size > 64<<10 {
					return opaque{bytes.NewReader(data)} // keep the test fast
				}
				return iotest.OneByteReader(bytes.NewReader(data))
			}, -1},
		}
		for _, rd := range readers {
			t.Run(fmt.Sprintf("%d/%s", size, rd.name), func(t *testing.T) {
				key := fmt.Sprintf("rt/%d/%s", size, rd.name)
				before := time.Now()
				info, err := s.Put(ctx, key, rd.r(), rd.size)
				after := time.Now()
				if err != nil {
					t.Fatalf("Put(%q, %d bytes, size %d): %v", key, size, rd.size, err)
				}
				checkInfo(t, "Put", info, key, int64(size), before, after)

				got := mustGet(t, s, key, 0, -1)
				if !bytes.Equal(got, data) {
					t.Fatalf("Get(%q) returned %d bytes that differ from the %d put", key, len(got), len(data))
				}
				st, err := s.Stat(ctx, key)
				if err != nil {
					t.Fatalf("Stat(%q): %v", key, err)
				}
				checkInfo(t, "Stat", st, key, int64(size), before, time.Now())
			})
		}
	}
}

func checkInfo(t *testing.T, op string, info blob.Info, key string, size int64, before, after time.Time) {
	t.Helper()
	if got, want := info.Key, key; got != want {
		t.Errorf("%s: Info.Key = %q, want %q", op, got, want)
	}
	if got, want := info.Size, size; got != want {
		t.Errorf("%s: Info.Size = %d, want %d", op, got, want)
	}
	if info.ModTime.Before(before.Add(-slack)) || info.ModTime.After(after.Add(slack)) {
		t.Errorf("%s: Info.ModTime = %v, want between %v and %v", op, info.ModTime, before, after)
	}
}

func testRange(t *testing.T, s blob.Store) {
	ctx := t.Context()
	const size = 10_000
	data := pattern(size, 7)
	mustPut(t, s, "r", data)
	mustPut(t, s, "empty", nil)

	tests := []struct {
		key            string
		offset, length int64
		want           []byte
	}{
		{"r", 0, -1, data},
		{"r", 0, size, data},
		{"r", 1234, 100, data[1234:1334]},
		{"r", 1234, -1, data[1234:]},
		{"r", 1234, 0, nil},
		{"r", 0, 1, data[:1]},
		{"r", size - 1, 1, data[size-1:]},
		{"r", size - 10, 100, data[size-10:]},           // runs past the end: truncated
		{"r", 5000, 1 << 40, data[5000:]},               // far past the end
		{"r", size, -1, nil},                            // offset == size: empty
		{"r", size, 10, nil},                            // offset == size with a length: empty
		{"empty", 0, -1, nil},                           // empty blob, whole
		{"empty", 0, 5, nil},                            // empty blob, any length
		{"r", size/2 - 1, 3, data[size/2-1 : size/2+2]}, // crosses the middle
	}
	for _, tt := range tests {
		got := mustGet(t, s, tt.key, tt.offset, tt.length)
		if !bytes.Equal(got, tt.want) {
			t.Errorf("Get(%q, %d, %d) = %d bytes %s, want %d bytes %s",
				tt.key, tt.offset, tt.length, len(got), preview(got), len(tt.want), preview(tt.want))
		}
	}

	bad := []struct {
		key            string
		offset, length int64
		code           errcode.Code
	}{
		{"r", size + 1, -1, errcode.RangeNotSatisfiable},
		{"r", size + 1, 0, errcode.RangeNotSatisfiable},
		{"r", 1 << 50, 1, errcode.RangeNotSatisfiable},
		{"empty", 1, -1, errcode.RangeNotSatisfiable},
		{"r", -1, 10, errcode.InvalidArgument},
		{"r", 0, -2, errcode.InvalidArgument},
		{"missing", 0, -1, errcode.NotFound},
		{"missing", 5, 10, errcode.NotFound}, // a missing key is NotFound, whatever the range
	}
	for _, tt := range bad {
		rc, err := s.Get(ctx, tt.key, tt.offset, tt.length)
		if err == nil {
			rc.Close()
		}
		wantCode(t, fmt.Sprintf("Get(%q, %d, %d)", tt.key, tt.offset, tt.length), err, tt.code)
	}
}

func testNotFound(t *testing.T, s blob.Store) {
	ctx := t.Context()
	mustPut(t, s, "p/q", []byte("pq"))
	mustPut(t, s, "r", []byte("r"))
	// Neighbours of stored keys, including their "directories" and
	// "children", are not stored keys.
	for _, key := range []string{"missing", "p", "p/q/r", "r/s", "P/q", "p/Q", "r.blob", "q"} {
		_, err := s.Stat(ctx, key)
		wantCode(t, fmt.Sprintf("Stat(%q)", key), err, errcode.NotFound)
		rc, err := s.Get(ctx, key, 0, -1)
		if err == nil {
			rc.Close()
		}
		wantCode(t, fmt.Sprintf("Get(%q)", key), err, errcode.NotFound)
	}
}

func testSizeMismatch(t *testing.T, s blob.Store) {
	ctx := t.Context()
	tests := []struct {
		name     string
		actual   int
		declared int64
		code     errcode.Code
	}{
		{"short-by-one", 100, 101, errcode.IncompleteBody},
		{"empty-body", 0, 10, errcode.IncompleteBody},
		{"short-large", 300 << 10, 1 << 20, errcode.IncompleteBody},
		{"long-by-one", 101, 100, errcode.TooLarge},
		{"declared-zero", 1, 0, errcode.TooLarge},
		{"long-large", 1 << 20, 300 << 10, errcode.TooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := "mismatch/" + tt.name
			data := pattern(tt.actual, 3)
			_, err := s.Put(ctx, key, bytes.NewReader(data), tt.declared)
			wantCode(t, fmt.Sprintf("Put(%d bytes, declared %d)", tt.actual, tt.declared), err, tt.code)
			// The same through a reader that hides its length.
			_, err = s.Put(ctx, key, opaque{bytes.NewReader(data)}, tt.declared)
			wantCode(t, fmt.Sprintf("Put(opaque %d bytes, declared %d)", tt.actual, tt.declared), err, tt.code)
			checkAbsent(t, s, key)
		})
	}
	if keys := listKeys(t, s, ""); len(keys) != 0 {
		t.Errorf("after failed Puts, List = %q, want nothing", keys)
	}
}

func testCancelledPut(t *testing.T, s blob.Store) {
	const tailSize = 128 << 20
	for _, declared := range []int64{300<<10 + tailSize, -1} {
		t.Run(fmt.Sprintf("size=%d", declared), func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			// The reader blocks after 300 KiB until the cancel, then keeps
			// yielding data up to a correct EOF: only the store's own
			// checks of ctx can stop it.
			head := newGatedReader(pattern(300<<10, 11), 300<<10, ctx.Done())
			tail := &fillReader{left: tailSize}
			key := fmt.Sprintf("cancel/%d", declared)
			done := goPut(ctx, s, key, io.MultiReader(head, tail), declared)

			waitFor(t, head.reached, "the store to read up to the gate")
			cancel()
			res := wait(t, done)
			if res.err == nil {
				t.Fatalf("Put with a context cancelled mid-way succeeded (%+v)", res.info)
			}
			if got := errcode.Of(res.err); got != errcode.Canceled {
				t.Errorf("Put with a cancelled context: code %v (%v), want %v", got, res.err, errcode.Canceled)
			}
			if read := tailSize - tail.left; read > maxReadAfterCancel {
				t.Errorf("Put read %d bytes after its context was cancelled, want at most %d: it must check ctx between reads",
					read, maxReadAfterCancel)
			}
			checkAbsent(t, s, key)
			if keys := listKeys(t, s, ""); len(keys) != 0 {
				t.Errorf("after a cancelled Put, List = %q, want nothing", keys)
			}
		})
	}

	t.Run("before-start", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := s.Put(ctx, "cancel/early", bytes.NewReader([]byte("x")), 1)
		if err == nil {
			t.Fatal("Put with an already cancelled context succeeded")
		}
		checkAbsent(t, s, "cancel/early")
	})
}

var errBoom = errors.New("blobtest: reader exploded")

func testReaderError(t *testing.T, s blob.Store) {
	ctx := t.Context()
	for _, declared := range []int64{1 << 20, -1} {
		for _, at := range []int{0, 100 << 10, 700 << 10} {
			key := fmt.Sprintf("readerr/%d/%d", declared, at)
			r := io.MultiReader(bytes.NewReader(pattern(at, 5)), iotest.ErrReader(errBoom))
			_, err := s.Put(ctx, key, r, declared)
			if err == nil {
				t.Fatalf("Put(%q) with a reader failing after %d bytes succeeded", key, at)
			}
			if !errors.Is(err, errBoom) {
				t.Errorf("Put(%q) with a failing reader: %v, want an error wrapping %v", key, err, errBoom)
			}
			checkAbsent(t, s, key)
		}
	}
	if keys := listKeys(t, s, ""); len(keys) != 0 {
		t.Errorf("after failed Puts, List = %q, want nothing", keys)
	}
}

func testNoPartialVisibility(t *testing.T, s blob.Store) {
	ctx := t.Context()
	mustPut(t, s, "slow/neighbour", []byte("n"))
	release := make(chan struct{})
	data := pattern(1<<20, 13)
	r := newGatedReader(data, 600<<10, release)
	done := goPut(ctx, s, "slow/key", r, int64(len(data)))
	waitFor(t, r.reached, "the store to read up to the gate")

	checkAbsent(t, s, "slow/key")
	if got, want := listKeys(t, s, ""), []string{"slow/neighbour"}; !slices.Equal(got, want) {
		t.Errorf("during a Put, List = %q, want %q", got, want)
	}
	if got, want := listKeys(t, s, "slow/k"), []string(nil); !slices.Equal(got, want) {
		t.Errorf("during a Put, List(%q) = %q, want %q", "slow/k", got, want)
	}

	close(release)
	res := wait(t, done)
	if res.err != nil {
		t.Fatalf("Put after release: %v", res.err)
	}
	if got := mustGet(t, s, "slow/key", 0, -1); !bytes.Equal(got, data) {
		t.Errorf("Get after a slow Put returned %d bytes that differ from the %d put", len(got), len(data))
	}
	if got, want := listKeys(t, s, ""), []string{"slow/key", "slow/neighbour"}; !slices.Equal(got, want) {
		t.Errorf("after the Put, List = %q, want %q", got, want)
	}
}

func testConcurrentPuts(t *testing.T, s blob.Store) {
	ctx := t.Context()
	const n = 32
	var wg sync.WaitGroup
	want := make([]string, 0, n)
	for i := range n {
		key := fmt.Sprintf("conc/%02d/k", i)
		want = append(want, key)
		wg.Go(func() {
			data := pattern(4<<10+i*97, uint64(i))
			info, err := s.Put(ctx, key, bytes.NewReader(data), int64(len(data)))
			if err != nil {
				t.Errorf("Put(%q): %v", key, err)
				return
			}
			if info.Size != int64(len(data)) {
				t.Errorf("Put(%q).Size = %d, want %d", key, info.Size, len(data))
			}
			got, err := getAll(ctx, s, key, 0, -1)
			if err != nil {
				t.Errorf("Get(%q): %v", key, err)
				return
			}
			if !bytes.Equal(got, data) {
				t.Errorf("Get(%q) returned other bytes than were put", key)
			}
		})
	}
	wg.Wait()
	if got := listKeys(t, s, ""); !slices.Equal(got, want) {
		t.Errorf("after concurrent Puts, List = %q, want %q", got, want)
	}
}

func testConcurrentReaders(t *testing.T, s blob.Store) {
	ctx := t.Context()
	hot := pattern(64<<10, 99)
	mustPut(t, s, "hot", hot)

	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 4 {
				key := fmt.Sprintf("cold/%d/%d", w, i)
				data := pattern(8<<10, uint64(w*100+i))
				if _, err := s.Put(ctx, key, bytes.NewReader(data), -1); err != nil {
					t.Errorf("Put(%q): %v", key, err)
				}
			}
		})
	}
	for r := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(r), 1))
			for range 20 {
				off := rng.Int64N(int64(len(hot)) + 1)
				length := rng.Int64N(int64(len(hot))) - 1 // -1 included
				got, err := getAll(ctx, s, "hot", off, length)
				if err != nil {
					t.Errorf("Get(hot, %d, %d): %v", off, length, err)
					return
				}
				end := int64(len(hot))
				if length >= 0 && off+length < end {
					end = off + length
				}
				if !bytes.Equal(got, hot[off:end]) {
					t.Errorf("Get(hot, %d, %d) returned other bytes than hot[%d:%d]", off, length, off, end)
					return
				}
				if _, err := s.Stat(ctx, "hot"); err != nil {
					t.Errorf("Stat(hot): %v", err)
				}
			}
		})
	}
	wg.Wait()
	if got, want := len(listKeys(t, s, "cold/")), 16; got != want {
		t.Errorf("List(cold/) has %d keys, want %d", got, want)
	}
}

// WeirdKeys are valid keys that trip naive backends: characters with
// meaning in URLs, shells and file systems, dots, deep nesting, maximal
// length, and keys that are both a blob and the "directory" of other blobs.
func WeirdKeys() []string {
	var deep []string
	for i := range 50 {
		deep = append(deep, fmt.Sprintf("d%d", i))
	}
	// 1024 bytes: ten 100-byte segments, then 14 bytes, joined by 10 slashes.
	var long []string
	for i := range 10 {
		long = append(long, strings.Repeat(string(rune('a'+i)), 99)+"Z")
	}
	long = append(long, "the-last-seg_x")

	return []string{
		"é", "日本/語", "emoji-😀", "😀/🎉.txt",
		"with space", " leading and trailing ", "a b/c d",
		"100%", "%41", "A", "%2e%2E", "a%2Eb", "plus+sign", "hash#tag", "what?", "this&that", "tilde~", `back\slash`, `\`,
		"...", "a/.../b", "..a", "a..", "a.b", ".hidden", "dir/.hidden", "x.blob", "x.blob/y", "x%2Eblob",
		"a", "a/b", "a/b/c", // a key that is also the "directory" of others
		"A/B", "a/B",
		"tab\there", "newline\nhere", "colon:semi;", "quote\"'`", "<angle>|pipe*star",
		"CON", "nul", "aux.txt", // reserved names on some systems
		strings.Join(deep, "/"),
		strings.Join(long, "/"),
	}
}

// dropNested removes every key that lies "under" another key of keys
// (starts with it and a slash).
func dropNested(keys []string) []string {
	return slices.DeleteFunc(slices.Clone(keys), func(k string) bool {
		for _, p := range keys {
			if strings.HasPrefix(k, p+"/") {
				return true
			}
		}
		return false
	})
}

func testWeirdKeysOf(t *testing.T, s blob.Store, keys []string) {
	ctx := t.Context()
	if got, want := len(keys[len(keys)-1]), blob.MaxKeyLen; got != want {
		t.Fatalf("suite bug: long key is %d bytes, want %d", got, want)
	}
	for i, key := range keys {
		if err := blob.ValidKey(key); err != nil {
			t.Fatalf("suite bug: ValidKey(%q) = %v", key, err)
		}
		data := append([]byte(key), byte(i))
		info, err := s.Put(ctx, key, bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Errorf("Put(%q): %v", key, err)
			continue
		}
		if info.Key != key {
			t.Errorf("Put(%q).Key = %q", key, info.Key)
		}
	}
	for i, key := range keys {
		want := append([]byte(key), byte(i))
		got, err := getAll(ctx, s, key, 0, -1)
		if err != nil {
			t.Errorf("Get(%q): %v", key, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("Get(%q) = %q, want %q", key, got, want)
		}
		st, err := s.Stat(ctx, key)
		if err != nil {
			t.Errorf("Stat(%q): %v", key, err)
		} else if st.Key != key || st.Size != int64(len(want)) {
			t.Errorf("Stat(%q) = {Key %q, Size %d}, want {Key %q, Size %d}", key, st.Key, st.Size, key, len(want))
		}
	}

	want := slices.Clone(keys)
	slices.Sort(want)
	var got []string
	err := s.List(ctx, "", func(info blob.Info) error {
		got = append(got, info.Key)
		if i := slices.Index(keys, info.Key); i >= 0 && info.Size != int64(len(keys[i])+1) {
			t.Errorf("List: %q has Size %d, want %d", info.Key, info.Size, len(keys[i])+1)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("List returned\n%q\nwant\n%q", got, want)
	}
	// Each key is found by a prefix equal to itself.
	for _, key := range keys {
		if got := listKeys(t, s, key); len(got) == 0 || got[0] != key {
			t.Errorf("List(%q) starts with %q, want the key itself first", key, got[:min(len(got), 2)])
		}
	}
}

// InvalidKeys are keys every Store must refuse with errcode.InvalidArgument.
func InvalidKeys() []string {
	return []string{
		"", "../x", "..", ".", "a/../b", "a/./b", "a/..", "./a", "/a", "a/", "/", "a//b",
		"a\x00b", "\x00",
		strings.Repeat("a/", blob.MaxKeyLen/2) + "a", // 1025 bytes
		"a\xffb", "\xc3", "\xed\xa0\x80", // invalid UTF-8 (truncated, surrogate)
	}
}

func testInvalidKeys(t *testing.T, s blob.Store) {
	ctx := t.Context()
	for _, key := range InvalidKeys() {
		if blob.ValidKey(key) == nil {
			t.Fatalf("suite bug: ValidKey(%q) = nil", key)
		}
		_, err := s.Put(ctx, key, bytes.NewReader([]byte("x")), 1)
		wantCode(t, fmt.Sprintf("Put(%q)", key), err, errcode.InvalidArgument)
		_, err = s.Stat(ctx, key)
		wantCode(t, fmt.Sprintf("Stat(%q)", key), err, errcode.InvalidArgument)
		rc, err := s.Get(ctx, key, 0, -1)
		if err == nil {
			rc.Close()
		}
		wantCode(t, fmt.Sprintf("Get(%q)", key), err, errcode.InvalidArgument)
		err = s.Delete(ctx, key)
		wantCode(t, fmt.Sprintf("Delete(%q)", key), err, errcode.InvalidArgument)
	}
	if keys := listKeys(t, s, ""); len(keys) != 0 {
		t.Errorf("after Puts of invalid keys, List = %q, want nothing", keys)
	}
}

// testDeleteOf runs the Delete checks with keys parent, mid and child,
// each a prefix of the next.
func testDeleteOf(t *testing.T, s blob.Store, parent, mid, child string) {
	ctx := t.Context()
	for _, key := range []string{parent, mid, child, "keep"} {
		mustPut(t, s, key, []byte(key))
	}
	if err := s.Delete(ctx, mid); err != nil {
		t.Fatalf("Delete(%s): %v", mid, err)
	}
	checkAbsent(t, s, mid)
	// Neither the "parent" nor the "child" of a deleted key goes with it.
	for _, key := range []string{parent, child, "keep"} {
		if got := mustGet(t, s, key, 0, -1); string(got) != key {
			t.Errorf("after Delete(%s), Get(%q) = %q, want %q", mid, key, got, key)
		}
	}
	if got, want := listKeys(t, s, ""), []string{parent, child, "keep"}; !slices.Equal(got, want) {
		t.Errorf("after Delete(%s), List = %q, want %q", mid, got, want)
	}

	for _, key := range []string{mid, "missing", child + "/d", "never/was"} {
		if err := s.Delete(ctx, key); err != nil {
			t.Errorf("Delete(%q) of a missing key: %v, want nil", key, err)
		}
	}
	for _, key := range []string{parent, child} {
		if err := s.Delete(ctx, key); err != nil {
			t.Fatalf("Delete(%q): %v", key, err)
		}
		checkAbsent(t, s, key)
	}
	if got, want := listKeys(t, s, ""), []string{"keep"}; !slices.Equal(got, want) {
		t.Errorf("after Deletes, List = %q, want %q", got, want)
	}
	// The key can be written again after Delete.
	mustPut(t, s, mid, []byte("again"))
	if got := mustGet(t, s, mid, 0, -1); string(got) != "again" {
		t.Errorf("Get(%s) after re-Put = %q, want %q", mid, got, "again")
	}
}

func testDeleteWhileReading(t *testing.T, s blob.Store) {
	ctx := t.Context()
	old := pattern(1<<20+13, 21)
	mustPut(t, s, "del/k", old)

	for _, offset := range []int64{0, 1000} {
		rc, err := s.Get(ctx, "del/k", offset, -1)
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		head := make([]byte, 10)
		if _, err := io.ReadFull(rc, head); err != nil {
			rc.Close()
			t.Fatalf("reading the head: %v", err)
		}
		if err := s.Delete(ctx, "del/k"); err != nil {
			rc.Close()
			t.Fatalf("Delete: %v", err)
		}
		checkAbsent(t, s, "del/k")
		// Reuse the key with other bytes: a reader that reopens by name
		// would now see them.
		mustPut(t, s, "del/k", pattern(len(old), 22))

		rest, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Logf("reader opened before Delete failed: %v (allowed)", err)
		} else if got := append(head, rest...); !bytes.Equal(got, old[offset:]) {
			t.Errorf("reader opened before Delete returned %d bytes other than the %d it was opened on", len(got), len(old)-int(offset))
		}
		// Overwriting is backend-defined: delete before writing the key again.
		if err := s.Delete(ctx, "del/k"); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		mustPut(t, s, "del/k", old)
	}
}

func testListOrderOf(t *testing.T, s blob.Store, flat func([]string) []string) {
	keys := flat([]string{
		"x-y", "x/z", "x.y", "x", "X", "é", "z", "x0", "x!y", "xx", "x/a/b", "x/a", "x.y/z", "a",
		"Z", "_", "-", "~", "x\ty", "😀", "日本", "ÿ",
	})
	for _, k := range keys {
		mustPut(t, s, k, []byte(k))
	}
	want := slices.Clone(keys)
	slices.Sort(want) // Go compares strings bytewise: exactly the order List must use.
	if got := listKeys(t, s, ""); !slices.Equal(got, want) {
		t.Errorf("List order\n got %q\nwant %q", got, want)
	}
	wantX := slices.DeleteFunc(slices.Clone(want), func(k string) bool { return !strings.HasPrefix(k, "x") })
	if got := listKeys(t, s, "x"); !slices.Equal(got, wantX) {
		t.Errorf("List(x)\n got %q\nwant %q", got, wantX)
	}
}

func testListPrefixOf(t *testing.T, s blob.Store, flat func([]string) []string) {
	ctx := t.Context()
	keys := flat([]string{"a", "a/b", "aa", "ab", "abc/d", "abc/d/e", "abd", "b", "ab/x"})
	sizes := map[string]int64{}
	for i, k := range keys {
		data := pattern(i*10, uint64(i))
		mustPut(t, s, k, data)
		sizes[k] = int64(len(data))
	}
	tests := []struct {
		prefix string
		want   []string
	}{
		{"", []string{"a", "a/b", "aa", "ab", "ab/x", "abc/d", "abc/d/e", "abd", "b"}},
		{"a", []string{"a", "a/b", "aa", "ab", "ab/x", "abc/d", "abc/d/e", "abd"}},
		{"ab", []string{"ab", "ab/x", "abc/d", "abc/d/e", "abd"}},
		{"ab/", []string{"ab/x"}},
		{"abc", []string{"abc/d", "abc/d/e"}},
		{"abc/", []string{"abc/d", "abc/d/e"}},
		{"abc/d", []string{"abc/d", "abc/d/e"}},
		{"abc/d/", []string{"abc/d/e"}},
		{"abc/d/e", []string{"abc/d/e"}},
		{"abc/d/e/", nil},
		{"a/", []string{"a/b"}},
		{"a/b", []string{"a/b"}},
		{"b", []string{"b"}},
		{"c", nil},
		{"A", nil},
		{"zz/top", nil},
		{"../", nil},
	}
	for _, tt := range tests {
		// Only the keys the backend was given.
		tt.want = slices.DeleteFunc(tt.want, func(k string) bool { return !slices.Contains(keys, k) })
		if len(tt.want) == 0 {
			tt.want = nil
		}
		var got []string
		err := s.List(ctx, tt.prefix, func(info blob.Info) error {
			got = append(got, info.Key)
			if info.Size != sizes[info.Key] {
				t.Errorf("List(%q): %q has Size %d, want %d", tt.prefix, info.Key, info.Size, sizes[info.Key])
			}
			// fn may call back into the store.
			if _, err := s.Stat(ctx, info.Key); err != nil {
				t.Errorf("Stat(%q) inside List: %v", info.Key, err)
			}
			return nil
		})
		if err != nil {
			t.Errorf("List(%q): %v", tt.prefix, err)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("List(%q) = %q, want %q", tt.prefix, got, tt.want)
		}
	}
}

func testListStops(t *testing.T, s blob.Store) {
	ctx := t.Context()
	for i := range 5 {
		mustPut(t, s, fmt.Sprintf("k/%d", i), []byte{byte(i)})
	}
	errStop := errors.New("blobtest: stop here")
	var seen []string
	err := s.List(ctx, "", func(info blob.Info) error {
		seen = append(seen, info.Key)
		if len(seen) == 2 {
			return errStop
		}
		return nil
	})
	if !errors.Is(err, errStop) {
		t.Errorf("List returned %v, want the error fn returned (%v)", err, errStop)
	}
	if want := []string{"k/0", "k/1"}; !slices.Equal(seen, want) {
		t.Errorf("List called fn with %q, want %q and then stop", seen, want)
	}
}

// RunLarge streams a 256 MiB object through s and reads it back, in
// pieces and whole, without either side holding it. The caller skips it
// with -short (see the package comment).
func RunLarge(t *testing.T, s blob.Store) {
	ctx := t.Context()
	const size = 256 << 20
	const seed = 42
	h := sha256.New()
	r := io.TeeReader(io.LimitReader(newStream(seed), size), h)
	info, err := s.Put(ctx, "large", opaque{r}, size)
	if err != nil {
		t.Fatalf("Put of %d bytes: %v", size, err)
	}
	if info.Size != size {
		t.Fatalf("Put.Size = %d, want %d", info.Size, size)
	}
	want := h.Sum(nil)

	rc, err := s.Get(ctx, "large", 0, -1)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	defer rc.Close()
	h.Reset()
	n, err := io.Copy(h, rc)
	if err != nil {
		t.Fatalf("reading the large blob: %v after %d bytes", err, n)
	}
	if n != size {
		t.Fatalf("read %d bytes, want %d", n, size)
	}
	if got := h.Sum(nil); !bytes.Equal(got, want) {
		t.Fatalf("SHA-256 of the read bytes %x, want %x", got, want)
	}

	// A range near the end, checked against the same stream regenerated.
	const off, length = size - 3<<20 - 5, 1<<20 + 7
	rc2, err := s.Get(ctx, "large", off, length)
	if err != nil {
		t.Fatalf("Get(large, %d, %d): %v", off, length, err)
	}
	defer rc2.Close()
	wantRange := newStream(seed)
	if _, err := io.CopyN(io.Discard, wantRange, off); err != nil {
		t.Fatal(err)
	}
	hw, hg := sha256.New(), sha256.New()
	io.CopyN(hw, wantRange, length)
	n, err = io.Copy(hg, rc2)
	if err != nil || n != length {
		t.Fatalf("reading the range: %d bytes, %v; want %d bytes", n, err, length)
	}
	if !bytes.Equal(hg.Sum(nil), hw.Sum(nil)) {
		t.Fatalf("range [%d, +%d) of the large blob differs from what was put", off, length)
	}
}

// Helpers.

// pattern returns n deterministic, non-repeating bytes for seed, so that an
// off-by-one in a range shows as different bytes.
func pattern(n int, seed uint64) []byte {
	b := make([]byte, n)
	rand.NewChaCha8(seedBytes(seed)).Read(b)
	return b
}

// newStream returns an endless deterministic byte stream for seed.
func newStream(seed uint64) io.Reader { return rand.NewChaCha8(seedBytes(seed)) }

func seedBytes(seed uint64) [32]byte {
	var s [32]byte
	for i := range 8 {
		s[i] = byte(seed >> (8 * i))
	}
	return s
}

// opaque hides every method of the reader but Read, so a store cannot learn
// the length or take a WriterTo shortcut.
type opaque struct{ r io.Reader }

func (o opaque) Read(p []byte) (int, error) { return o.r.Read(p) }

// gatedReader yields data, but blocks once gate bytes have been read until
// release is closed; then it yields the rest and io.EOF.
type gatedReader struct {
	data    []byte
	pos     int
	gate    int
	reached chan struct{} // closed when the gate is reached
	release <-chan struct{}
	once    sync.Once
}

func newGatedReader(data []byte, gate int, release <-chan struct{}) *gatedReader {
	return &gatedReader{data: data, gate: gate, reached: make(chan struct{}), release: release}
}

func (g *gatedReader) Read(p []byte) (int, error) {
	if g.pos == g.gate {
		g.once.Do(func() { close(g.reached) })
		<-g.release
	}
	if g.pos >= len(g.data) {
		return 0, io.EOF
	}
	end := len(g.data)
	if g.pos < g.gate {
		end = g.gate
	}
	n := copy(p, g.data[g.pos:end])
	g.pos += n
	return n, nil
}

// fillReader yields left bytes of filler, then io.EOF.
type fillReader struct{ left int64 }

func (f *fillReader) Read(p []byte) (int, error) {
	if f.left <= 0 {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), f.left))
	for i := range p[:n] {
		p[i] = byte(i)
	}
	f.left -= int64(n)
	return n, nil
}

type putResult struct {
	info blob.Info
	err  error
}

func goPut(ctx context.Context, s blob.Store, key string, r io.Reader, size int64) <-chan putResult {
	done := make(chan putResult, 1)
	go func() {
		info, err := s.Put(ctx, key, r, size)
		done <- putResult{info, err}
	}()
	return done
}

func wait(t *testing.T, done <-chan putResult) putResult {
	t.Helper()
	select {
	case res := <-done:
		return res
	case <-time.After(waitLimit):
		t.Fatalf("Put did not return within %v", waitLimit)
		return putResult{}
	}
}

func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitLimit):
		t.Fatalf("timed out after %v waiting for %s", waitLimit, what)
	}
}

func mustPut(t *testing.T, s blob.Store, key string, data []byte) blob.Info {
	t.Helper()
	info, err := s.Put(t.Context(), key, bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatalf("Put(%q, %d bytes): %v", key, len(data), err)
	}
	return info
}

func mustGet(t *testing.T, s blob.Store, key string, offset, length int64) []byte {
	t.Helper()
	b, err := getAll(t.Context(), s, key, offset, length)
	if err != nil {
		t.Fatalf("Get(%q, %d, %d): %v", key, offset, length, err)
	}
	return b
}

func getAll(ctx context.Context, s blob.Store, key string, offset, length int64) ([]byte, error) {
	rc, err := s.Get(ctx, key, offset, length)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(rc)
	if cerr := rc.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("closing the reader: %w", cerr)
	}
	return b, err
}

func listKeys(t *testing.T, s blob.Store, prefix string) []string {
	t.Helper()
	var keys []string
	err := s.List(t.Context(), prefix, func(info blob.Info) error {
		keys = append(keys, info.Key)
		return nil
	})
	if err != nil {
		t.Fatalf("List(%q): %v", prefix, err)
	}
	return keys
}

// checkAbsent fails unless key is invisible to Stat, Get and List.
func checkAbsent(t *testing.T, s blob.Store, key string) {
	t.Helper()
	ctx := t.Context()
	_, err := s.Stat(ctx, key)
	wantCode(t, fmt.Sprintf("Stat(%q)", key), err, errcode.NotFound)
	rc, err := s.Get(ctx, key, 0, -1)
	if err == nil {
		rc.Close()
	}
	wantCode(t, fmt.Sprintf("Get(%q)", key), err, errcode.NotFound)
	if slices.Contains(listKeys(t, s, key), key) {
		t.Errorf("List(%q) shows %q, want it absent", key, key)
	}
}

func wantCode(t *testing.T, op string, err error, want errcode.Code) {
	t.Helper()
	if err == nil {
		t.Errorf("%s succeeded, want %v", op, want)
		return
	}
	if got := errcode.Of(err); got != want {
		t.Errorf("%s: code %v (%v), want %v", op, got, err, want)
	}
}

func preview(b []byte) string {
	if len(b) > 8 {
		return fmt.Sprintf("%x…", b[:8])
	}
	return fmt.Sprintf("%x", b)
}
