package buildinfo

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

func TestFrom(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.time", Value: "2026-11-28T00:00:00Z"},
			{Key: "vcs.modified", Value: "false"}, {Key: "GOOS", Value: "darwin"}, {Key: "GOARCH", Value: "arm64"}}}
	got := From(bi, "")
	if got.Version != "(devel)" || got.Release || got.Revision != "abc" || got.GOOS != "darwin" || got.GOARCH != "arm64" || !got.Known {
		t.Errorf("From(devel) = %+v", got)
	}
	got = From(bi, "v1.4.0")
	if got.Version != "v1.4.0" || !got.Release || got.Revision != "abc" {
		t.Errorf("From(release) = %+v", got)
	}
	if got := From(nil, ""); got.Known || got.Version != "(devel)" || got.GoVersion == "" {
		t.Errorf("From(nil) = %+v", got)
	}
}

// TestReleaseStamp builds the real command with the release flags of
// scripts/release.sh and checks that `coffer version` reports the stamped
// version: the -X path must name this package's variable.
func TestReleaseStamp(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "coffer")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X github.com/coffer-storage/coffer/internal/buildinfo.Version=v9.8.7-test", "-o", bin, "../../cmd/coffer")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("coffer version: %v\n%s", err, out)
	}
	if !strings.HasPrefix(string(out), "coffer v9.8.7-test\n") {
		t.Errorf("coffer version printed %q, want the stamped version first", out)
	}
}
