package scaleout

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/test/testenv"
)

// node is a `coffer serve` process whose start may be refused.
type node struct {
	cmd     *exec.Cmd
	stderr  *bytes.Buffer
	mu      sync.Mutex
	serving chan struct{} // closed once it announced its listener
	exited  chan struct{} // closed once it exited, err set
	err     error         // the exit status
}

// launch starts `coffer serve` on env with its own data folder and extra
// flags; it is killed at cleanup.
func launch(t *testing.T, env []string, extra ...string) *node {
	t.Helper()
	args := append([]string{"serve", "--data", t.TempDir(), "--listen", "127.0.0.1:0", "--s3-listen", "127.0.0.1:0", "--log-level", "warn"}, extra...)
	n := &node{stderr: &bytes.Buffer{}, serving: make(chan struct{}), exited: make(chan struct{})}
	n.cmd = exec.Command(testenv.Binary(t), args...)
	n.cmd.Env = append(os.Environ(), env...)
	n.cmd.Stderr = writerFunc(func(p []byte) (int, error) {
		n.mu.Lock()
		defer n.mu.Unlock()
		return n.stderr.Write(p)
	})
	stdout, err := n.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		announced := false
		for sc.Scan() {
			if !announced && strings.Contains(sc.Text(), "listening on") {
				announced = true
				close(n.serving)
			}
		}
		io.Copy(io.Discard, stdout)
		n.err = n.cmd.Wait()
		close(n.exited)
	}()
	t.Cleanup(func() {
		n.cmd.Process.Kill()
		select {
		case <-n.exited:
		case <-time.After(10 * time.Second):
		}
	})
	return n
}

// outcome waits until n serves (true) or exits (false, with its error).
func (n *node) outcome(t *testing.T) (bool, error) {
	t.Helper()
	select {
	case <-n.serving:
		return true, nil
	case <-n.exited:
		return false, n.err
	case <-time.After(60 * time.Second):
		t.Fatalf("coffer serve neither served nor exited in 60 s\n%s", n.Stderr())
		return false, nil
	}
}

func (n *node) Stderr() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.stderr.String()
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// wantRefused fails unless n exited non-zero saying that keyFile is not
// the metadata store's key.
func wantRefused(t *testing.T, n *node, keyFile string) {
	t.Helper()
	serving, err := n.outcome(t)
	if serving {
		t.Fatalf("a node with another server key (%s) serves", keyFile)
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() == 0 {
		t.Errorf("refused node exited with %v, want a non-zero status", err)
	}
	stderr := n.Stderr()
	for _, want := range []string{keyFile, "initialised with a different server key", "must use the same --server-key-file"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr)
		}
	}
}

func writeKey(t *testing.T) string {
	t.Helper()
	k := make([]byte, 32)
	rand.Read(k)
	p := filepath.Join(t.TempDir(), "other.key")
	if err := os.WriteFile(p, []byte(hex.EncodeToString(k)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestNodesMustShareTheServerKey: on one PostgreSQL, a second node with
// another key file, or with none (so a key of its own in its data
// folder), refuses to start; nodes with the same key both serve.
func TestNodesMustShareTheServerKey(t *testing.T) {
	b := testenv.NewBackends(t)
	n1 := testenv.StartNode(t, b)
	c := n1.NewUser(t)

	t.Run("OtherKeyFile", func(t *testing.T) {
		other := writeKey(t)
		wantRefused(t, launch(t, b.Env, "--server-key-file", other), other)
	})
	t.Run("NoKeyFile", func(t *testing.T) {
		var env []string
		for _, e := range b.Env {
			if !strings.HasPrefix(e, "COFFER_SERVER_KEY_FILE=") {
				env = append(env, e)
			}
		}
		data := t.TempDir()
		n := launch(t, env, "--data", data)
		keyFile := filepath.Join(data, "server.key")
		wantRefused(t, n, keyFile)
		if _, err := os.Stat(keyFile); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the refused node left the key it generated: %v", err)
		}
	})
	t.Run("SameKey", func(t *testing.T) {
		n2 := testenv.StartNode(t, b)
		if st := on(c, n2).JSON(t, "GET", "/api/v1/me", nil, nil); st != 200 {
			t.Errorf("GET /me on node 2 with node 1's token: %d, want 200", st)
		}
		if st := put(t, on(c, n2), "k", []byte("data")); st != 201 {
			t.Errorf("PUT via node 2: %d", st)
		}
		if st, got := get(t, c, "k"); st != 200 || string(got) != "data" {
			t.Errorf("GET via node 1: %d %q", st, got)
		}
	})
}

// TestNodesStartingTogetherAgreeOnOneKey: two nodes with different keys
// starting at once on a fresh database: exactly one serves, the other
// refuses.
func TestNodesStartingTogetherAgreeOnOneKey(t *testing.T) {
	b := testenv.NewBackends(t)
	keys := []string{writeKey(t), writeKey(t)}
	nodes := make([]*node, 2)
	for i := range nodes {
		nodes[i] = launch(t, b.Env, "--server-key-file", keys[i])
	}
	var serving []int
	var refused []int
	for i, n := range nodes {
		ok, _ := n.outcome(t)
		if ok {
			serving = append(serving, i)
		} else {
			refused = append(refused, i)
		}
	}
	if len(serving) != 1 || len(refused) != 1 {
		t.Fatalf("%d nodes serve and %d refused, want 1 and 1\nnode 0:\n%s\nnode 1:\n%s", len(serving), len(refused), nodes[0].Stderr(), nodes[1].Stderr())
	}
	wantRefused(t, nodes[refused[0]], keys[refused[0]])
}
