package audit

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// waitFor polls cond for up to 10 s (the writer is asynchronous).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func readLines(t *testing.T, path string) []Event {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []Event
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l == "" {
			continue
		}
		var e Event
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		out = append(out, e)
	}
	return out
}

func TestOffIsNil(t *testing.T) {
	l, err := New(Options{})
	if l != nil || err != nil {
		t.Fatalf("New without a sink: %v %v, want nil, nil", l, err)
	}
	l.Log(context.Background(), Event{Action: SignIn}) // no panic
	if ev, d := l.Stats(); ev != [4]uint64{} || d != 0 {
		t.Errorf("Stats of nil: %v %d", ev, d)
	}
	if got := l.Recent(Filter{}); got != nil {
		t.Errorf("Recent of nil: %v", got)
	}
}

func TestFileLineAndOrigin(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	origin := func(ctx context.Context) Origin {
		return Origin{RequestID: "REQ1", Client: netip.MustParseAddr("192.0.2.7"), UserID: "u1", KeyID: "AK1"}
	}
	l, err := New(Options{File: path, Origin: origin})
	if err != nil {
		t.Fatal(err)
	}
	l.Log(context.Background(), Event{Action: ObjectDelete, Target: Target{Bucket: "b", Key: "k"}}.Result(nil))
	l.Log(context.Background(), Event{Action: SignIn, Actor: Anonymous("a@example.com")}.Result(errcode.Retry(errcode.RateLimited, time.Second, "slow down")))
	l.Log(WithActor(context.Background(), System()), Event{Action: KeyRotate}.Result(errcode.New(errcode.PermissionDenied, "secret message")))
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := readLines(t, path)
	if len(got) != 3 {
		t.Fatalf("%d lines, want 3", len(got))
	}
	if e := got[0]; e.Actor != Key("AK1", "u1") || e.Client != "192.0.2.7" || e.RequestID != "REQ1" || e.Outcome != Success || e.Target.Key != "k" || e.Time.IsZero() {
		t.Errorf("line 1: %+v", e)
	}
	if e := got[1]; e.Actor.Type != ActorAnonymous || e.Outcome != Throttled || e.Reason != "rate_limited" {
		t.Errorf("line 2: %+v", e)
	}
	if e := got[2]; e.Actor.Type != ActorSystem || e.Outcome != Denied || e.Reason != "permission_denied" {
		t.Errorf("line 3: %+v", e)
	}
	b, _ := os.ReadFile(path)
	if strings.Contains(string(b), "secret message") {
		t.Error("an error's message reached the log: only its code may")
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
	ev, dropped := l.Stats()
	if ev != [4]uint64{1, 0, 1, 1} || dropped != 0 {
		t.Errorf("Stats: %v %d", ev, dropped)
	}
}

// TestNoSecretField fails when Event gains a field of a type that could
// carry free text (anything but the typed sets, identifiers and the
// time): a new field must be thought about.
func TestNoSecretField(t *testing.T) {
	allowed := map[string]bool{
		"Event.Time": true, "Event.Action": true, "Event.Client": true, "Event.RequestID": true, "Event.Outcome": true, "Event.Reason": true,
		"Actor.Type": true, "Actor.ID": true, "Actor.User": true, "Actor.Name": true,
		"Target.Bucket": true, "Target.Key": true, "Target.VersionID": true, "Target.Share": true, "Target.User": true, "Target.Email": true,
		"Target.AccessKey": true, "Target.KMSKey": true, "Target.Invite": true, "Target.Job": true,
	}
	var walk func(rt reflect.Type)
	walk = func(rt reflect.Type) {
		for i := range rt.NumField() {
			f := rt.Field(i)
			if f.Type.Kind() == reflect.Struct && f.Type.Name() != "Time" {
				walk(f.Type)
				continue
			}
			name := rt.Name() + "." + f.Name
			if !allowed[name] {
				t.Errorf("Event has a new field %s (%s): make sure no secret can go into it, then list it here", name, f.Type)
			}
		}
	}
	walk(reflect.TypeOf(Event{}))
}

func TestRotationKeepsMaxFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	l, err := New(Options{File: path, MaxSize: 4096, MaxFiles: 3})
	if err != nil {
		t.Fatal(err)
	}
	const n = 400 // ~200 bytes a line: ~20 files' worth
	for i := range n {
		l.Log(context.Background(), Event{Action: ObjectDelete, Target: Target{Bucket: "bucket", Key: strings.Repeat("k", 100)}})
		if i%50 == 0 {
			waitFor(t, "the queue to drain", func() bool { return len(l.queue) == 0 })
		}
	}
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(path + "*")
	if len(files) != 3 {
		t.Fatalf("files %v, want 3 (FILE, FILE.1, FILE.2)", files)
	}
	for _, f := range files {
		st, _ := os.Stat(f)
		if st.Size() > 4096 {
			t.Errorf("%s: %d bytes, over the 4096 bound", f, st.Size())
		}
		readLines(t, f) // whole lines only
	}
	if _, err := os.Stat(path + ".3"); !os.IsNotExist(err) {
		t.Errorf("%s.3 exists", path)
	}
	// The newest lines are in FILE, the older in FILE.1.
	cur, old := readLines(t, path), readLines(t, path+".1")
	if len(cur) == 0 || len(old) == 0 || cur[0].Time.Before(old[len(old)-1].Time) {
		t.Errorf("FILE is not newer than FILE.1")
	}
}

// TestFullQueueDropsWithoutBlocking: with the webhook stuck, Log returns at
// once and what the queues cannot hold is dropped and counted.
func TestFullQueueDropsWithoutBlocking(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-block }))
	defer srv.Close()
	defer close(block)
	l, err := New(Options{Webhook: srv.URL, Queue: 4, Hook: WebhookOptions{Queue: 2, Batch: 1, Retries: -1}})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for range 1000 {
		l.Log(context.Background(), Event{Action: SignIn})
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("1000 Logs took %v: Log blocked", d)
	}
	_, dropped := l.Stats()
	if dropped < 990 {
		t.Errorf("dropped %d of 1000 with a queue of 4 and a stuck webhook, want at least 990", dropped)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	l.Close(ctx)
}

func TestWebhookBatchesAndRetries(t *testing.T) {
	var mu sync.Mutex
	var batches [][]Event
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		if n%2 == 1 { // every first attempt fails
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		if r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("Content-Type %q", r.Header.Get("Content-Type"))
		}
		var b []Event
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &b); err != nil {
			t.Errorf("body %q: %v", body, err)
		}
		mu.Lock()
		batches = append(batches, b)
		mu.Unlock()
	}))
	defer srv.Close()
	l, err := New(Options{Webhook: srv.URL, Hook: WebhookOptions{Batch: 10, Interval: 50 * time.Millisecond, Backoff: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 25 {
		l.Log(context.Background(), Event{Action: ObjectDelete, Target: Target{Key: string(rune('a' + i))}})
	}
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	total := 0
	for _, b := range batches {
		if len(b) > 10 {
			t.Errorf("a batch of %d, over 10", len(b))
		}
		total += len(b)
	}
	if total != 25 {
		t.Errorf("%d events delivered in %d batches, want 25", total, len(batches))
	}
	if _, d := l.Stats(); d != 0 {
		t.Errorf("dropped %d", d)
	}
}

func TestWebhookGivesUpCounted(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, "down", http.StatusInternalServerError)
	}))
	defer srv.Close()
	l, err := New(Options{Webhook: srv.URL, Hook: WebhookOptions{Batch: 5, Interval: 5 * time.Second, Retries: 2, Backoff: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		l.Log(context.Background(), Event{Action: SignIn})
	}
	waitFor(t, "the batch to be dropped", func() bool { _, d := l.Stats(); return d == 5 })
	if got := calls.Load(); got != 3 {
		t.Errorf("%d attempts, want 3 (1 + 2 retries)", got)
	}
	l.Close(context.Background())

	// A 4xx other than 429 is not retried.
	calls.Store(0)
	srv4 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, "no", http.StatusBadRequest)
	}))
	defer srv4.Close()
	l, _ = New(Options{Webhook: srv4.URL, Hook: WebhookOptions{Batch: 1, Retries: 3, Backoff: time.Millisecond}})
	l.Log(context.Background(), Event{Action: SignIn})
	waitFor(t, "the refused batch to be dropped", func() bool { _, d := l.Stats(); return d == 1 })
	if got := calls.Load(); got != 1 {
		t.Errorf("%d attempts on 400, want 1", got)
	}
	l.Close(context.Background())
}

func TestRecentFilters(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	path := filepath.Join(t.TempDir(), "a.log")
	l, err := New(Options{File: path, Ring: 5, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	evs := []Event{
		{Time: now, Action: SignIn, Actor: User("u1")},
		{Time: now.Add(time.Minute), Action: ShareOpen, Actor: Anonymous("")},
		{Time: now.Add(2 * time.Minute), Action: ShareCreate, Actor: User("u2")},
		{Time: now.Add(3 * time.Minute), Action: ObjectDelete, Actor: Key("AK", "u1")},
		{Time: now.Add(4 * time.Minute), Action: SignIn, Actor: Actor{Type: ActorUser, ID: "u3", Name: "x@example.com"}},
		{Time: now.Add(5 * time.Minute), Action: SignIn, Actor: User("u1")},
	}
	for _, e := range evs {
		l.Log(context.Background(), e)
	}
	waitFor(t, "the ring", func() bool { return len(l.Recent(Filter{Limit: 10})) == 5 })
	ids := func(es []Event) []time.Duration {
		var out []time.Duration
		for _, e := range es {
			out = append(out, e.Time.Sub(now)/time.Minute)
		}
		return out
	}
	for _, tc := range []struct {
		f    Filter
		want []time.Duration
	}{
		{Filter{Limit: 10}, []time.Duration{5, 4, 3, 2, 1}}, // the first fell out of the ring of 5
		{Filter{Limit: 2}, []time.Duration{5, 4}},
		{Filter{Action: "auth.signin"}, []time.Duration{5, 4}},
		{Filter{Action: "share."}, []time.Duration{2, 1}},
		{Filter{Actor: "u1"}, []time.Duration{5, 3}}, // the key's owner too
		{Filter{Actor: "x@example.com"}, []time.Duration{4}},
		{Filter{Since: now.Add(3 * time.Minute)}, []time.Duration{5, 4, 3}},
	} {
		if got := ids(l.Recent(tc.f)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Recent(%+v) = %v, want %v", tc.f, got, tc.want)
		}
	}
	l.Close(context.Background())
}

// BenchmarkLogFile is the cost of one event, queued and written to the
// file (Close waits for the writer): what a request that emits pays in
// CPU, on its goroutine and the writer's.
func BenchmarkLogFile(b *testing.B) {
	path := filepath.Join(b.TempDir(), "audit.log")
	origin := func(ctx context.Context) Origin {
		return Origin{RequestID: "7F3A9C0D11E2B4A6", Client: netip.MustParseAddr("127.0.0.1"), UserID: "76d5b4da999224309100e530a635bca3", KeyID: "CFIMQAORKJHVOEWMYV6K"}
	}
	l, err := New(Options{File: path, Origin: origin, Queue: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		l.Log(ctx, Event{Action: ObjectDelete, Target: Target{Bucket: "bench-delete-0", Key: "del/123456"}}.Result(errcode.New(errcode.NotFound, "no such key")))
	}
	if err := l.Close(ctx); err != nil {
		b.Fatal(err)
	}
	if _, d := l.Stats(); d > 0 {
		b.Logf("dropped %d", d)
	}
}

func TestAppendJSONMatchesMarshal(t *testing.T) {
	odd := "a\"b\\c\n\r\t\b\f\x01<>&\u2028\u2029é\xff日本"
	for _, e := range []Event{
		{},
		{Time: time.Date(2026, 11, 28, 4, 8, 45, 126957977, time.UTC), Action: ObjectDelete, Actor: Key("AK", "u"), Client: "127.0.0.1", RequestID: "R",
			Target: Target{Bucket: "b", Key: "k", VersionID: "v"}, Outcome: Success, Reason: ReasonDeleteMarker},
		{Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600)), Action: Action(odd), Actor: Actor{Type: ActorType(odd), ID: odd, User: odd, Name: odd},
			Client: odd, RequestID: odd, Target: Target{odd, odd, odd, odd, odd, odd, odd, odd, odd, odd}, Outcome: Outcome(odd), Reason: Reason(odd)},
		{Action: SignIn, Target: Target{Email: "a@example.com", Job: "j"}},
	} {
		want, err := json.Marshal(&e)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendJSON(nil, &e); string(got) != string(want) {
			t.Errorf("appendJSON:\n got %s\nwant %s", got, want)
		}
	}
}
