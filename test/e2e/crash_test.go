package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/test/testenv"
)

// content returns the deterministic bytes of an upload attempt.
func content(seed uint64, size int) []byte {
	b := make([]byte, size)
	r := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), byte(seed >> 16), byte(seed >> 24)})
	r.Read(b)
	return b
}

type attempt struct {
	key    string
	size   int
	sha    string
	acked  bool
	ackSHA string
}

// TestCrashDurability runs rounds of 200 concurrent uploads, kills the
// server with SIGKILL mid-way, restarts it, and checks invariants 1 and 2:
// every acknowledged upload reads back with its SHA-256, and no listed or
// readable object is partial.
func TestCrashDurability(t *testing.T) {
	rounds := 5
	if testing.Short() {
		rounds = 2
	}
	srv := testenv.Start(t)
	c := srv.NewUser(t)
	c.HTTP.Timeout = 30 * time.Second
	all := map[string]*attempt{}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	for round := range rounds {
		attempts := make([]*attempt, 200)
		for i := range attempts {
			size := rng.IntN(64 << 10)
			switch rng.IntN(10) {
			case 0:
				size = 0
			case 1, 2:
				size = 256<<10 + rng.IntN(4<<20)
			}
			key := fmt.Sprintf("round-%d/file-%03d.bin", round, i)
			s := sha256.Sum256(content(seedOf(key), size))
			attempts[i] = &attempt{key: key, size: size, sha: hex.EncodeToString(s[:])}
			all[key] = attempts[i]
		}
		killAfter := 20 + rng.IntN(100)
		killer := newMidwayKill(srv, killAfter)
		var wg sync.WaitGroup
		for _, a := range attempts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				data := content(seedOf(a.key), a.size)
				resp, err := c.DoErr(ctx, "PUT", testenv.FileURL(c.Bucket, a.key), bytes.NewReader(data), int64(len(data)))
				if err != nil {
					return
				}
				defer resp.Body.Close()
				body, err := io.ReadAll(resp.Body)
				if err != nil || resp.StatusCode != 201 {
					return
				}
				var f fileJSON
				if json.Unmarshal(body, &f) != nil {
					return
				}
				a.acked, a.ackSHA = true, f.SHA256
				killer.ack()
			}()
		}
		wg.Wait()
		killer.wait()
		nAcked := 0
		for _, a := range attempts {
			if a.acked {
				nAcked++
				if a.ackSHA != a.sha {
					t.Errorf("round %d: %s acknowledged with sha %s, want %s", round, a.key, a.ackSHA, a.sha)
				}
			}
		}
		t.Logf("round %d: killed after %d of 200 acknowledged (target %d)", round, nAcked, killAfter)
		if nAcked == 200 {
			t.Logf("round %d: every upload finished before the kill; the round proves less", round)
		}
		srv.Restart()
		verifyAll(t, c, all)
	}
	// Reclaim orphans with the server stopped, then check again.
	srv.Kill()
	out, err := srv.Command("gc", "--data", srv.Data).CombinedOutput()
	if err != nil {
		t.Fatalf("coffer gc: %v\n%s", err, out)
	}
	t.Logf("coffer gc: %s", bytes.TrimSpace(out))
	entries, _ := os.ReadDir(filepath.Join(srv.Data, "blobs", "tmp"))
	if len(entries) != 0 {
		t.Errorf("%d temp files left after restart", len(entries))
	}
	srv.Restart()
	verifyAll(t, c, all)
}

// midwayKill SIGKILLs a server once: when the writes acknowledged reach
// a target (ack), or 5 s after it was made, or at wait.
type midwayKill struct {
	srv    *testenv.Server
	target int64
	acked  atomic.Int64
	once   sync.Once
	killed chan struct{}
}

func newMidwayKill(srv *testenv.Server, target int) *midwayKill {
	k := &midwayKill{srv: srv, target: int64(target), killed: make(chan struct{})}
	go func() { time.Sleep(5 * time.Second); k.kill() }()
	return k
}

func (k *midwayKill) kill() { k.once.Do(func() { k.srv.Kill(); close(k.killed) }) }

// ack counts an acknowledged write.
func (k *midwayKill) ack() {
	if k.acked.Add(1) == k.target {
		k.kill()
	}
}

// wait kills the server unless it was, and waits until it is dead.
func (k *midwayKill) wait() {
	k.kill()
	<-k.killed
}

func seedOf(key string) uint64 {
	s := sha256.Sum256([]byte(key))
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24
}

// verifyAll checks every acknowledged attempt is readable and intact, and
// every listed object is a complete attempt.
func verifyAll(t *testing.T, c *testenv.Client, all map[string]*attempt) {
	t.Helper()
	listed := map[string]fileJSON{}
	cursor := ""
	for {
		var l listJSON
		if st := c.JSON(t, "GET", "/api/v1/buckets/"+c.Bucket+"/files?limit=1000&cursor="+cursor, nil, &l); st != 200 {
			t.Fatalf("list after restart: %d", st)
		}
		for _, f := range l.Files {
			listed[f.Key] = f
		}
		if l.NextCursor == "" {
			break
		}
		cursor = l.NextCursor
	}
	for key, a := range all {
		f, ok := listed[key]
		if a.acked && !ok {
			t.Errorf("acknowledged upload %s is not listed", key)
			continue
		}
		if !ok {
			continue
		}
		if f.Size != int64(a.size) || f.SHA256 != a.sha {
			t.Errorf("%s listed with size %d sha %s, want %d %s", key, f.Size, f.SHA256, a.size, a.sha)
		}
		resp := c.Do(t, "GET", testenv.FileURL(c.Bucket, key), nil)
		h := sha256.New()
		n, err := io.Copy(h, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || err != nil || n != int64(a.size) || hex.EncodeToString(h.Sum(nil)) != a.sha {
			t.Errorf("%s reads back as status %d, %d bytes, err %v, sha match %v", key, resp.StatusCode, n, err, hex.EncodeToString(h.Sum(nil)) == a.sha)
		}
	}
	for key := range listed {
		if all[key] == nil {
			t.Errorf("listed %s was never uploaded", key)
		}
	}
}
