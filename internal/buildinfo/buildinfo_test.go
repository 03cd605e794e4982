package buildinfo

import (
	"runtime/debug"
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
