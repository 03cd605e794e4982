package cli

import (
	"bytes"
	"context"
	"runtime/debug"

	"github.com/coffer-storage/coffer/internal/buildinfo"
	"strings"
	"testing"
)

func TestVersionText(t *testing.T) {
	rev := "4026f9b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7"
	for _, c := range []struct {
		name string
		bi   *debug.BuildInfo
		want []string
	}{
		{"stamped", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261123124000-4026f9b1c2d3+dirty"},
			Settings: []debug.BuildSetting{{Key: "GOOS", Value: "linux"}, {Key: "GOARCH", Value: "amd64"},
				{Key: "vcs.revision", Value: rev}, {Key: "vcs.time", Value: "2026-11-23T12:40:00Z"}, {Key: "vcs.modified", Value: "true"}}},
			[]string{"coffer v0.0.0-20261123124000-4026f9b1c2d3+dirty\n", "  revision  " + rev + "\n", "  committed 2026-11-23T12:40:00Z\n",
				"  modified  true\n", "  go        go1.26.8 linux/amd64\n"}},
		{"go run", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}},
			[]string{"coffer (devel)\n", "  revision  unknown (built without VCS information", "  go        go1.26.8 "}},
		{"no build info", nil, []string{"coffer (unknown version"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := versionText(buildinfo.From(c.bi, ""))
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("versionText = %q, want it to contain %q", got, w)
				}
			}
		})
	}
}

// TestVersionFlags: coffer version and its usual flag spellings.
func TestVersionFlags(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}, {"-v"}} {
		var out, errb bytes.Buffer
		if code := Run(context.Background(), args, Env{Stdout: &out, Stderr: &errb}); code != 0 {
			t.Errorf("coffer %v: exit %d\n%s", args, code, errb.String())
			continue
		}
		if !strings.HasPrefix(out.String(), "coffer ") || !strings.Contains(out.String(), "  go        go1.") {
			t.Errorf("coffer %v printed %q", args, out.String())
		}
	}
}
