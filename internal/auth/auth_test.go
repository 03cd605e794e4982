package auth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/coffer-storage/coffer/internal/config"
	"github.com/coffer-storage/coffer/internal/errcode"
)

// cheap parameters keep tests fast; the pool logic does not depend on them.
var testParams = Params{Memory: 8 * 1024, Time: 1}

func TestHashVerify(t *testing.T) {
	h := NewHasher(testParams, ConfigFrom(config.Defaults()).Pool)
	ctx := context.Background()
	enc, err := h.Hash(ctx, "correct horse")
	if err != nil || !strings.HasPrefix(enc, "$argon2id$v=19$m=8192,t=1,p=1$") {
		t.Fatalf("Hash = %q, %v", enc, err)
	}
	if ok, err := h.Verify(ctx, "correct horse", enc); !ok || err != nil {
		t.Errorf("right password: %v %v", ok, err)
	}
	if ok, _ := h.Verify(ctx, "wrong horse", enc); ok {
		t.Error("wrong password verified")
	}
	if ok, _ := h.Verify(ctx, "anything", ""); ok {
		t.Error("unknown user verified")
	}
	if _, err := h.Verify(ctx, "x", "$argon2id$garbage"); !errcode.Is(err, errcode.Internal) {
		t.Errorf("malformed hash: %v", err)
	}
}

// TestPoolBounds saturates a one-slot pool: the queue is bounded, excess
// callers are refused, and refusals are Unavailable with a Retry-After.
// (How long a caller waits is not asserted: it depends on the machine.)
func TestPoolBounds(t *testing.T) {
	h := NewHasher(Params{Memory: 64 * 1024, Time: 3}, PoolConfig{Slots: 1, MaxQueue: 2, MaxWait: 50 * time.Millisecond})
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Go(func() {
			_, err := h.Hash(context.Background(), "pw")
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	ok, refused := 0, 0
	for err := range errs {
		switch {
		case err == nil:
			ok++
		case errcode.Is(err, errcode.Unavailable) && errcode.As(err).RetryAfter > 0:
			refused++
		default:
			t.Errorf("unexpected error %v", err)
		}
	}
	if ok == 0 || refused == 0 || ok+refused != 20 {
		t.Errorf("ok %d refused %d", ok, refused)
	}
	if st := h.Stats(); st.Rejected != int64(refused) || st.InUse != 0 || st.Waiting != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestHasherReturnsArena: after a burst of hashes the pool, once idle,
// collects argon2id's arenas and returns them to the OS (one trim for the
// burst), so a server does not sit on Memory KiB per recent login.
func TestHasherReturnsArena(t *testing.T) {
	const arena = 32 << 20
	pool := ConfigFrom(config.Defaults()).Pool
	pool.TrimAfter = 20 * time.Millisecond
	h := NewHasher(Params{Memory: arena >> 10, Time: 1}, pool)
	waitTrims := func(want int64) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); h.trims.Load() < want; {
			if time.Now().After(deadline) {
				t.Fatalf("trims %d, want %d", h.trims.Load(), want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitTrims(1) // the dummy hash of NewHasher
	for range 3 {
		if _, err := h.Hash(t.Context(), "pw"); err != nil {
			t.Fatal(err)
		}
	}
	waitTrims(2)
	time.Sleep(100 * time.Millisecond)
	if got := h.trims.Load(); got != 2 {
		t.Errorf("trims after one burst: %d, want 2 (one per burst)", got)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if retained := ms.HeapSys - ms.HeapReleased; retained >= arena {
		t.Errorf("heap retained after the trim: %d MiB, want less than one %d MiB arena", retained>>20, arena>>20)
	}
}

func TestTokens(t *testing.T) {
	key := DeriveKey([]byte("master"), "access-token")
	tok := NewTokens(key, time.Minute)
	at := time.Now().Add(-time.Second).Truncate(time.Second).Add(123456789 * time.Nanosecond)
	s, _, err := tok.IssueAt("user-1", at)
	if err != nil {
		t.Fatal(err)
	}
	if sub, issued, err := tok.Verify(s); err != nil || sub != "user-1" || !issued.Equal(at) {
		t.Fatalf("Verify = %q, %v, %v; want user-1 issued at %v to the nanosecond", sub, issued, err, at)
	}
	// Tampered payload, other key, expired, alg none.
	parts := strings.Split(s, ".")
	tampered := parts[0] + "." + parts[1] + "x." + parts[2]
	other := NewTokens(DeriveKey([]byte("other"), "access-token"), time.Minute)
	expired := NewTokens(key, time.Minute)
	expired.now = func() time.Time { return time.Now().Add(-time.Hour) }
	old, _, _ := expired.Issue("user-1")
	none, _ := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.MapClaims{"sub": "user-1", "iss": issuer, "typ": "access", "exp": time.Now().Add(time.Hour).Unix()}).SignedString(jwt.UnsafeAllowNoneSignatureType)
	for name, bad := range map[string]string{"tampered": tampered, "expired": old, "alg none": none, "garbage": "x.y.z"} {
		if _, _, err := tok.Verify(bad); !errcode.Is(err, errcode.Unauthenticated) {
			t.Errorf("%s token: %v", name, err)
		}
	}
	if _, _, err := other.Verify(s); !errcode.Is(err, errcode.Unauthenticated) {
		t.Errorf("token verified with another key")
	}
	if string(DeriveKey([]byte("m"), "a")) == string(DeriveKey([]byte("m"), "b")) {
		t.Error("purposes derive the same key")
	}
}

// TestMalformedClaims: tokens signed with the right key whose registered
// claims have the wrong JSON types (a string exp, which jwt's NumericDate
// would read as a number), are missing, or carry an audience are refused;
// the same claims well typed are accepted.
func TestMalformedClaims(t *testing.T) {
	key := DeriveKey([]byte("master"), "access-token")
	now := time.Now()
	good := func() map[string]any {
		return map[string]any{"iss": issuer, "sub": "user-1", "typ": "access", "iat": now.Unix(), "exp": now.Add(time.Minute).Unix()}
	}
	sign := func(c map[string]any) string {
		s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims(c)).SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if _, _, err := NewTokens(key, time.Minute).Verify(sign(good())); err != nil {
		t.Fatalf("well-typed hand-signed token: %v", err)
	}
	far := fmt.Sprint(now.Add(time.Hour).Unix())
	for name, change := range map[string]func(map[string]any){
		"exp string":    func(c map[string]any) { c["exp"] = far },
		"EXP string":    func(c map[string]any) { c["EXP"] = far },
		"exp missing":   func(c map[string]any) { delete(c, "exp") },
		"exp null":      func(c map[string]any) { c["exp"] = nil },
		"exp object":    func(c map[string]any) { c["exp"] = map[string]any{} },
		"nbf string":    func(c map[string]any) { c["nbf"] = fmt.Sprint(now.Unix()) },
		"iat string":    func(c map[string]any) { c["iat"] = fmt.Sprint(now.Unix()) },
		"iat missing":   func(c map[string]any) { delete(c, "iat") },
		"iat_ns string": func(c map[string]any) { c["iat_ns"] = fmt.Sprint(now.UnixNano()) },
		"sub number":    func(c map[string]any) { c["sub"] = 1 },
		"sub missing":   func(c map[string]any) { delete(c, "sub") },
		"iss array":     func(c map[string]any) { c["iss"] = []string{issuer} },
		"iss other":     func(c map[string]any) { c["iss"] = "someone-else" },
		"typ number":    func(c map[string]any) { c["typ"] = 1 },
		"aud string":    func(c map[string]any) { c["aud"] = "coffer" },
		"Aud array":     func(c map[string]any) { c["Aud"] = []string{"coffer"} },
		"not an object": nil,
	} {
		t.Run(name, func(t *testing.T) {
			var tok string
			if change == nil {
				tok = jwtOf(t, key, `["exp"]`)
			} else {
				c := good()
				change(c)
				tok = sign(c)
			}
			if sub, _, err := NewTokens(key, time.Minute).Verify(tok); !errcode.Is(err, errcode.Unauthenticated) {
				t.Errorf("Verify = %q, %v; want Unauthenticated", sub, err)
			}
		})
	}
}

// jwtOf signs payload, raw JSON, as an HS256 JWT under key.
func jwtOf(t *testing.T, key []byte, payload string) string {
	t.Helper()
	enc := base64.RawURLEncoding
	head := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." + enc.EncodeToString([]byte(payload))
	sig, err := jwt.SigningMethodHS256.Sign(head, key)
	if err != nil {
		t.Fatal(err)
	}
	return head + "." + enc.EncodeToString(sig)
}

// TestVerifiedTokenCache: a token verified once is answered from the
// cache (no second signature check), yet still refused once it expires;
// a token differing in one byte is verified afresh.
func TestVerifiedTokenCache(t *testing.T) {
	now := time.Now()
	tok := NewTokens(DeriveKey([]byte("master"), "access-token"), time.Minute)
	tok.now = func() time.Time { return now }
	s, _, err := tok.Issue("user-1")
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if sub, _, err := tok.Verify(s); err != nil || sub != "user-1" {
			t.Fatalf("Verify = %q, %v", sub, err)
		}
	}
	if st := tok.Stats(); st.Hits != 2 || st.Misses != 1 {
		t.Errorf("3 Verify of one token: %d hits, %d misses; want 2, 1", st.Hits, st.Misses)
	}
	i, c := len(s)-5, byte('A')
	if s[i] == c {
		c = 'B'
	}
	if _, _, err := tok.Verify(s[:i] + string(c) + s[i+1:]); !errcode.Is(err, errcode.Unauthenticated) {
		t.Errorf("a token with one signature byte changed: %v, want Unauthenticated", err)
	}
	now = now.Add(time.Minute + tokenLeeway)
	if _, _, err := tok.Verify(s); !errcode.Is(err, errcode.Unauthenticated) {
		t.Errorf("a cached token past its expiry: %v, want Unauthenticated", err)
	}
}

func TestThrottle(t *testing.T) {
	th := NewThrottle(3, time.Minute)
	now := time.Unix(1000, 0)
	th.now = func() time.Time { return now }
	for range 3 {
		if th.Take("k") != 0 {
			t.Fatal("throttled too early")
		}
	}
	if d := th.Take("k"); d <= 0 || d > time.Minute {
		t.Fatalf("after 3 attempts Take = %v", d)
	}
	if th.Take("other") != 0 {
		t.Error("other key throttled")
	}
	th.Release("k")
	if th.Take("k") != 0 {
		t.Error("released attempt not given back")
	}
	now = now.Add(time.Minute)
	if th.Take("k") != 0 {
		t.Error("still throttled after the window")
	}
	th.Reset("k")
	if len(th.m) != 1 {
		t.Errorf("reset left %d keys", len(th.m))
	}
	// Bounded: a full table evicts rather than growing or locking out.
	small := NewThrottle(1, time.Minute)
	small.MaxKeys = 2
	for _, k := range []string{"a", "b", "c", "d"} {
		small.Take(k)
	}
	if len(small.m) > 2 {
		t.Errorf("table grew to %d entries", len(small.m))
	}
	if small.Take("d") == 0 {
		t.Error("newest key not throttled")
	}
}

func TestIPKey(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.1":            "192.0.2.1",
		"2001:db8:1:2:3:4:5:6": "2001:db8:1:2::/64",
		"2001:db8:1:2:ffff::1": "2001:db8:1:2::/64",
		"::ffff:192.0.2.1":     "::ffff:192.0.2.1",
		"not an address":       "not an address",
	} {
		if got := IPKey(in); got != want {
			t.Errorf("IPKey(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestParallelGuessesThrottled fires many wrong passwords for one account
// at once: no more than the limit may be verified.
func TestParallelGuessesThrottled(t *testing.T) {
	th := NewThrottle(10, time.Minute)
	var wg sync.WaitGroup
	var mu sync.Mutex
	passed := 0
	for range 60 {
		wg.Go(func() {
			if th.Take("victim@example.com") == 0 {
				time.Sleep(10 * time.Millisecond) // the slow verification
				mu.Lock()
				passed++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if passed != 10 {
		t.Errorf("%d parallel attempts passed, want 10", passed)
	}
}

// FuzzAccessClaims: whatever claims a token signed with the right key
// carries, Verify accepts it only with exp, iat and sub present and every
// registered claim Coffer reads well typed, in any spelling.
func FuzzAccessClaims(f *testing.F) {
	key := DeriveKey([]byte("master"), "access-token")
	now := time.Now().Unix()
	f.Add(fmt.Sprintf(`{"iss":"coffer","sub":"u","typ":"access","iat":%d,"exp":%d}`, now, now+60))
	f.Add(fmt.Sprintf(`{"iss":"coffer","sub":"u","typ":"access","iat":%d,"exp":"%d"}`, now, now+60))
	f.Add(fmt.Sprintf(`{"iss":"coffer","sub":"u","typ":"access","iat":%d,"exp":%d,"EXP":"%d","aud":[]}`, now, now+60, now+6000))
	f.Add(`{"iss":"coffer","sub":"u","typ":"access","iat":1e9,"exp":1e10,"iat_ns":-1}`)
	f.Fuzz(func(t *testing.T, payload string) {
		tok := NewTokens(key, time.Minute)
		if _, _, err := tok.Verify(jwtOf(t, key, payload)); err != nil {
			return
		}
		var raw map[string]json.RawMessage
		if err := json.Unmarshal([]byte(payload), &raw); err != nil {
			t.Fatalf("accepted claims that are not a JSON object: %q", payload)
		}
		seen := map[string]bool{}
		for name, v := range raw {
			lower := strings.ToLower(name)
			seen[lower] = true
			kind, known := claimKinds[lower]
			switch {
			case lower == "aud":
				t.Fatalf("accepted an audience: %q", payload)
			case known && kind == '"' && (len(v) == 0 || v[0] != '"'):
				t.Fatalf("accepted %s of the wrong type: %q", name, payload)
			case known && kind == '0' && (len(v) == 0 || v[0] != '-' && (v[0] < '0' || v[0] > '9')):
				t.Fatalf("accepted %s of the wrong type: %q", name, payload)
			}
		}
		for _, need := range []string{"exp", "iat", "sub"} {
			if !seen[need] {
				t.Fatalf("accepted without %s: %q", need, payload)
			}
		}
	})
}
