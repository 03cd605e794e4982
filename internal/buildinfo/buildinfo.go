// Package buildinfo describes the running binary: the release version a
// release build stamps (scripts/release.sh), else the module version Go
// records, with the VCS revision, its time and the Go version. It imports
// nothing internal.
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// Version is the release version, set only by release builds:
//
//	go build -ldflags "-X github.com/coffer-storage/coffer/internal/buildinfo.Version=v1.4.0" ./cmd/coffer
//
// Empty in every other build, which then reports the module version Go
// recorded ("(devel)" in a checkout).
var Version string

// Info is what a build records about itself.
type Info struct {
	Version   string // the release version, else the module version, else "(devel)"
	Release   bool   // Version was stamped by a release build
	Revision  string // VCS revision ("" if the build recorded none)
	Time      string // the revision's commit time (RFC 3339), if recorded
	Modified  string // "true" / "false" if recorded, else ""
	GoVersion string
	GOOS      string
	GOARCH    string
	Known     bool // the binary carried build information at all
}

// Read describes the running binary.
func Read() Info {
	bi, _ := debug.ReadBuildInfo()
	return From(bi, Version)
}

// From describes a build from its recorded information (bi may be nil) and
// the release version (may be empty).
func From(bi *debug.BuildInfo, release string) Info {
	in := Info{Version: "(devel)", GOOS: runtime.GOOS, GOARCH: runtime.GOARCH}
	if bi != nil {
		in.Known = true
		in.GoVersion = bi.GoVersion
		if bi.Main.Version != "" {
			in.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				in.Revision = s.Value
			case "vcs.time":
				in.Time = s.Value
			case "vcs.modified":
				in.Modified = s.Value
			case "GOOS":
				in.GOOS = s.Value
			case "GOARCH":
				in.GOARCH = s.Value
			}
		}
	}
	if release != "" {
		in.Version, in.Release = release, true
	}
	if in.GoVersion == "" {
		in.GoVersion = runtime.Version()
	}
	return in
}
