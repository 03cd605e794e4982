package readme

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Document is a document whose sh blocks run.
type Document struct {
	Path string
	// Rewrite are old, new pairs replaced in its blocks: for examples
	// written with a production host's paths, pointed at the README's
	// folders (said in the test log).
	Rewrite []string
	// Prelude runs before its first block (what the host would have).
	Prelude string
}

// Documents are run in this order, in one shell session: a later one may
// use what an earlier one set up (the server, $B, $TOKEN, …).
var Documents = []Document{
	{Path: "README.md"},
	{Path: "docs/bench.md"},
	// The online backup of the embedded shape, while the README's server runs.
	{Path: "docs/operations.md", Rewrite: []string{"/srv/coffer-data", "coffer-data", "/backup/coffer", "backup/coffer"},
		Prelude: "mkdir -p backup/coffer"},
	// The OpenAPI document of the README's server.
	{Path: "docs/api.md"},
}

// notRun are the documents with sh blocks that this test leaves out, and
// why. A document with sh blocks in neither list fails the test.
var notRun = map[string]string{
	"docs/audit.md":       "an installation's paths (/var/log), a SIEM's webhook URL and an administrator's token; test/e2e TestAuditLog and TestAuditWebhook run the flags and the query against the binary",
	"docs/backup.md":      "the paths of an installation (/srv, /backup, /secure) and a second coffer serve; test/backup runs the same commands against the binary",
	"docs/replication.md": "an installation's paths (/srv, /mnt, /safe), a remote S3 store and several coffer serve that never end; test/replicate runs the same commands against the binary",
	"docs/tracing.md":     "servers that never end and a collector at other hosts; test/tracing runs --otel-endpoint against an OTLP receiver of its own",
	"docs/console.md":     "rebuilds the console bundle with npm (test/console checks the bundle is current)",
	"docs/gateway.md":     "sets the aws cli's multipart threshold in ~/.aws/config (test/s3compat TestAWSCLIGateway runs it in a temporary HOME)",
	"docs/PERFORMANCE.md": "benchmarks of minutes each, several on PostgreSQL and MinIO (scripts/bench-*.sh)",
}

// The default addresses of `coffer serve`, rewritten to free ports when
// no network namespace is available.
var defaultAddrs = []string{"127.0.0.1:8080", "127.0.0.1:9000"}

// TestReadme runs the sh blocks of the README (and Documents) as written,
// in order, in one shell, in a fresh clone of this checkout (with its
// uncommitted changes) in a temporary folder: relative paths, default
// flags, no COFFER_* variable, no aws configuration. A block fails the
// test when a command in it fails (the shell runs with errexit, nounset
// and pipefail; curl fails on an HTTP error).
//
// The blocks run in their own network namespace, so the default ports
// 8080 and 9000 are free; without namespaces (not root, no ip, or
// COFFER_README_NETNS=off) the addresses are rewritten to free ports, and
// the log says so.
func TestReadme(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the README: a minute or more")
	}
	for _, tool := range []string{"git", "bash", "go", "curl", "jq", "aws", "setsid"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing(t, fmt.Sprintf("%s is not on PATH: the README uses it", tool))
		}
	}
	root := moduleRoot(t)
	blocks := readDocs(t, root)
	dir := t.TempDir()
	clone := freshClone(t, root, filepath.Join(dir, "coffer"))

	env := shellEnv(dir)
	// Build once before the timed run, outside the namespace (which has
	// no network for module downloads): the README's `go run` then finds
	// the build in the cache. -trimpath makes the cache independent of
	// the clone's folder, so later runs reuse it too.
	start := time.Now()
	build := exec.Command("go", "build", "-o", os.DevNull, "./cmd/coffer")
	build.Dir, build.Env = clone, env
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build in the clone: %v\n%s", err, out)
	}
	t.Logf("built coffer in the clone in %v (GOFLAGS=%s)", time.Since(start).Round(100*time.Millisecond), getenv(env, "GOFLAGS"))

	wrap, mode := netns(t)
	if wrap == nil {
		var err error
		if blocks, env, err = freePorts(blocks, env); err != nil {
			t.Fatal(err)
		}
		mode += fmt.Sprintf(": %s → %s, %s → %s (COFFER_LISTEN, COFFER_S3_LISTEN)", defaultAddrs[0], getenv(env, "COFFER_LISTEN"),
			defaultAddrs[1], getenv(env, "COFFER_S3_LISTEN"))
	}
	t.Logf("mode: %s", mode)

	script := writeScript(t, dir, blocks)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", script)
	if wrap != nil {
		cmd = exec.CommandContext(ctx, wrap[0], append(wrap[1:], "bash", script)...)
	}
	cmd.Dir, cmd.Env = clone, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start = time.Now()
	err := cmd.Run()
	took := time.Since(start).Round(100 * time.Millisecond)
	if err != nil {
		failed := lastBlock(out.String(), blocks)
		t.Fatalf("%s: the block failed (%v) after %v of running the docs:\n%s\n---- output (the last 150 lines) ----\n%s%s",
			failed.Where(), err, took, failed.Text, tail(out.String(), 150), backgroundLogs(dir))
	}
	ran, skipped := 0, 0
	for _, b := range blocks {
		if b.Skip != "" {
			skipped++
			t.Logf("%s: not run: %s", b.Where(), b.Skip)
		} else {
			ran++
		}
	}
	t.Logf("%d blocks ran in %v (%d not run)", ran, took, skipped)
	if testing.Verbose() {
		t.Logf("output:\n%s", out.String())
	}
}

// missing fails (with COFFER_REQUIRE_CLIENTS=1, as in scripts/test.sh) or
// skips the test for want of a tool.
func missing(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("COFFER_REQUIRE_CLIENTS") == "1" {
		t.Fatal(why)
	}
	t.Skip(why)
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatal(err)
	}
	return root
}

// readDocs reads the blocks of Documents, and checks that no other
// document has sh blocks this test does not know about.
func readDocs(t *testing.T, root string) []Block {
	t.Helper()
	var all []Block
	run := map[string]bool{}
	for _, doc := range Documents {
		run[doc.Path] = true
		md, err := os.ReadFile(filepath.Join(root, doc.Path))
		if err != nil {
			t.Fatal(err)
		}
		bs, err := Parse(doc.Path, string(md))
		if err != nil {
			t.Fatal(err)
		}
		if len(doc.Rewrite) > 0 {
			r := strings.NewReplacer(doc.Rewrite...)
			for i := range bs {
				bs[i].Text = r.Replace(bs[i].Text)
			}
			t.Logf("%s: its blocks run with %s", doc.Path, pairs(doc.Rewrite))
		}
		if doc.Prelude != "" {
			// Before the first block that runs (a skipped one runs nothing).
			for i := range bs {
				if bs[i].Skip == "" {
					bs[i].Prelude = doc.Prelude
					break
				}
			}
		}
		all = append(all, bs...)
	}
	others, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	for _, path := range others {
		doc, _ := filepath.Rel(root, path)
		if run[doc] {
			continue
		}
		md, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		bs, err := Parse(doc, string(md))
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := notRun[doc]; len(bs) > 0 && !ok {
			t.Errorf("%s has %d sh blocks that no test runs: add it to Documents (marking what cannot run) or, with the reason, to notRun",
				doc, len(bs))
		}
	}
	if len(all) < 5 || all[0].Doc != "README.md" || !all[0].Background {
		t.Fatalf("the README's first block should start the server in the background; found %d blocks", len(all))
	}
	return all
}

// pairs shows old, new pairs as "old → new, …".
func pairs(kv []string) string {
	var out []string
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, kv[i]+" → "+kv[i+1])
	}
	return strings.Join(out, ", ")
}

// freshClone clones the checkout root into dir, at its HEAD plus its
// uncommitted changes to tracked files (so that the README being edited
// is the one tested; on a clean checkout, as in CI, there are none).
func freshClone(t *testing.T, root, dir string) string {
	t.Helper()
	git := func(dir string, stdin []byte, args ...string) []byte {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Stdin = bytes.NewReader(stdin)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, errb.String())
		}
		return out
	}
	if _, err := os.Stat(filepath.Join(root, ".git")); err != nil {
		missing(t, "the checkout is not a git repository: nothing to clone")
	}
	head := strings.TrimSpace(string(git(root, nil, "rev-parse", "HEAD")))
	// --shared borrows the objects of the checkout: any commit, even one
	// no branch names (a detached CI checkout), and no copying.
	git(root, nil, "clone", "-q", "--shared", "--no-checkout", ".", dir)
	git(dir, nil, "checkout", "-q", "--detach", head)
	if diff := git(root, nil, "diff", "--binary", "HEAD"); len(diff) > 0 {
		git(dir, diff, "apply", "--binary", "-")
		t.Logf("cloned %.12s and applied the checkout's uncommitted changes (%d bytes of diff)", head, len(diff))
	} else {
		t.Logf("cloned %.12s", head)
	}
	return dir
}

// shellEnv is the environment of a newcomer's shell: this one without
// Coffer's variables and without aws credentials or configuration, HOME
// and the Go caches kept (a fresh machine would download and build the
// same).
func shellEnv(dir string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "COFFER_"), strings.HasPrefix(k, "AWS_") && k != "AWS_CA_BUNDLE", k == "GOFLAGS":
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -trimpath"),
		"AWS_CONFIG_FILE="+filepath.Join(dir, "no-aws-config"),
		"AWS_SHARED_CREDENTIALS_FILE="+filepath.Join(dir, "no-aws-credentials"),
		"RT_LOGS="+dir,
	)
}

func getenv(env []string, key string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	return ""
}

// netns makes a network namespace with its own loopback, where the
// default ports are free, and returns the command prefix that runs in it
// (deleted at cleanup, with whatever still runs in it). nil: no
// namespaces here.
func netns(t *testing.T) (wrap []string, mode string) {
	t.Helper()
	if os.Getenv("COFFER_README_NETNS") == "off" {
		return nil, "ports overridden (COFFER_README_NETNS=off)"
	}
	if os.Geteuid() != 0 {
		return nil, "ports overridden (not root: no network namespace)"
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return nil, "ports overridden (no ip command: no network namespace)"
	}
	name := fmt.Sprintf("coffer-readme-%d-%d", os.Getpid(), time.Now().UnixNano()%1e6)
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		return nil, fmt.Sprintf("ports overridden (ip netns add: %v: %s)", err, bytes.TrimSpace(out))
	}
	t.Cleanup(func() {
		out, _ := exec.Command("ip", "netns", "pids", name).Output()
		for f := range strings.FieldsSeq(string(out)) {
			if pid, err := strconv.Atoi(f); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			t.Logf("ip netns del %s: %v: %s", name, err, out)
		}
	})
	if out, err := exec.Command("ip", "netns", "exec", name, "ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
		t.Fatalf("bringing up the loopback of namespace %s: %v: %s", name, err, out)
	}
	return []string{"ip", "netns", "exec", name}, "network namespace " + name + " (the default ports 8080 and 9000)"
}

// freePorts rewrites the default addresses in the blocks to free ports
// and sets COFFER_LISTEN and COFFER_S3_LISTEN to them, for a machine
// without network namespaces.
func freePorts(blocks []Block, env []string) ([]Block, []string, error) {
	repl := make([]string, 0, 2*len(defaultAddrs))
	var addrs []string
	for _, old := range defaultAddrs {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, nil, err
		}
		addr := l.Addr().String()
		l.Close()
		repl = append(repl, old, addr)
		addrs = append(addrs, addr)
	}
	r := strings.NewReplacer(repl...)
	out := make([]Block, len(blocks))
	for i, b := range blocks {
		b.Text = r.Replace(b.Text)
		b.Wait = append([]string(nil), b.Wait...)
		for j := range b.Wait {
			b.Wait[j] = r.Replace(b.Wait[j])
		}
		out[i] = b
	}
	return out, append(env, "COFFER_LISTEN="+addrs[0], "COFFER_S3_LISTEN="+addrs[1]), nil
}

// writeScript writes each block to a file and the script that runs them
// in order, and returns the script's path. Foreground blocks are sourced,
// so that the variables one sets are there for the next; a background
// block runs in a shell of its own (its own process group, stopped when
// the script ends). Lines "@@ block N" mark the progress for lastBlock.
func writeScript(t *testing.T, dir string, blocks []Block) string {
	t.Helper()
	var s strings.Builder
	// An HTTP error answer fails the command, as a person reading it would
	// see: curl is curl --fail-with-body here.
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "curl"), fmt.Appendf(nil, "#!/bin/sh\nexec %q --fail-with-body \"$@\"\n", curl), 0o700); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&s, "PATH=%q:\"$PATH\"\n", bin)
	s.WriteString(`set -euo pipefail
RT_BG=()
rt_stop() { for p in "${RT_BG[@]}"; do kill -TERM -- "-$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap rt_stop EXIT
rt_wait() { # pid addr...: wait until every address accepts connections
	local pid=$1 a; shift
	for a in "$@"; do
		for _ in $(seq 1200); do
			if (exec 3<>"/dev/tcp/${a%:*}/${a##*:}") 2>/dev/null; then continue 2; fi
			kill -0 "$pid" 2>/dev/null || { echo "the background block exited before $a accepted connections"; return 1; }
			sleep 0.1
		done
		echo "$a accepts no connection after 120s"; return 1
	done
}
PS4='+ [${SECONDS}s] '
`)
	for i, b := range blocks {
		if b.Skip != "" {
			fmt.Fprintf(&s, "echo '@@ block %d (%s): not run: %s'\n", i, b.Where(), strings.ReplaceAll(b.Skip, "'", ""))
			continue
		}
		file := filepath.Join(dir, fmt.Sprintf("block%02d.sh", i))
		if err := os.WriteFile(file, []byte(b.Text), 0o600); err != nil {
			t.Fatal(err)
		}
		if b.Background {
			log := filepath.Join(dir, fmt.Sprintf("background%02d.log", i))
			fmt.Fprintf(&s, "echo \"@@ block %d (%s): in the background, log in %s [+${SECONDS}s]\"\n", i, b.Where(), log)
			fmt.Fprintf(&s, "setsid bash -x %q >%q 2>&1 &\nRT_BG+=($!)\nrt_wait $! %s\n", file, log, strings.Join(b.Wait, " "))
			continue
		}
		if b.Prelude != "" {
			fmt.Fprintf(&s, "echo '@@ block %d (%s): its document needs first: %s'\n%s\n", i, b.Where(), b.Prelude, b.Prelude)
		}
		for r := 1; r <= b.Repeat; r++ {
			fmt.Fprintf(&s, "echo \"@@ block %d (%s): run %d of %d [+${SECONDS}s]\"\nset -x\nsource %q\n{ set +x; } 2>/dev/null\n", i, b.Where(), r, b.Repeat, file)
		}
	}
	s.WriteString("echo \"@@ done [+${SECONDS}s]\"\n")
	script := filepath.Join(dir, "run-docs.sh")
	if err := os.WriteFile(script, []byte(s.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return script
}

var markRE = regexp.MustCompile(`(?m)^@@ block (\d+) `)

// lastBlock is the block the script was running when it stopped.
func lastBlock(out string, blocks []Block) Block {
	m := markRE.FindAllStringSubmatch(out, -1)
	if len(m) == 0 {
		return Block{Doc: "(before the first block)", Text: "(the script's set-up)\n"}
	}
	i, _ := strconv.Atoi(m[len(m)-1][1])
	return blocks[i]
}

func tail(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "")
}

// backgroundLogs is the end of each background block's log.
func backgroundLogs(dir string) string {
	logs, _ := filepath.Glob(filepath.Join(dir, "background*.log"))
	var b strings.Builder
	for _, l := range logs {
		data, err := os.ReadFile(l)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			continue
		}
		fmt.Fprintf(&b, "\n---- %s (the last 40 lines) ----\n%s", filepath.Base(l), tail(string(data), 40))
	}
	return b.String()
}
