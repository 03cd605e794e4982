package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/coffer-storage/coffer/test/testenv"
)

// TestVersionShowsTheRevision builds coffer the way a user does, with
// `go build` in the checkout (VCS stamping on, whatever GOFLAGS says), and
// checks that `coffer version` and `coffer --version` print the commit it
// was built from, its time, the modified flag and the Go version.
func TestVersionShowsTheRevision(t *testing.T) {
	if testenv.ScaleOut() {
		t.Skip("the same in both shapes")
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout (git rev-parse: %v): nothing to stamp", err)
	}
	if st, err := os.Stat(filepath.Join(root, ".git")); err != nil || !st.IsDir() {
		// A linked worktree (.git is a file): Go looks for a .git folder
		// only and stamps nothing, or an enclosing repository's commit
		// (golang/go#58218). A clone, as CI runs, is stamped.
		t.Skip("a linked git worktree: go build does not stamp VCS information here (golang/go#58218)")
	}
	bin := filepath.Join(t.TempDir(), "coffer")
	build := exec.Command("go", "build", "-buildvcs=true", "-o", bin, "./cmd/coffer")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -buildvcs=true: %v\n%s", err, out)
	}
	want := strings.TrimSpace(string(head))
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("coffer %v: %v\n%s", args, err, out)
		}
		got := string(out)
		rev := regexp.MustCompile(`(?m)^  revision  ([0-9a-f]{40})$`).FindStringSubmatch(got)
		if rev == nil {
			t.Fatalf("coffer %v shows no 40-hex revision:\n%s", args, got)
		}
		if rev[1] != want {
			t.Errorf("coffer %v: revision %s, want HEAD %s", args, rev[1], want)
		}
		for _, re := range []string{
			`(?m)^coffer v\S+`, // the module version, a pseudo-version from the commit
			`(?m)^  committed \d{4}-\d\d-\d\dT`,
			`(?m)^  modified  (true|false)$`,
			`(?m)^  go        go1\.\d+`,
		} {
			if !regexp.MustCompile(re).MatchString(got) {
				t.Errorf("coffer %v: no line matching %s:\n%s", args, re, got)
			}
		}
	}
}
