package meta

import (
	"testing"
	"time"
)

func TestNewVersionID(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	a := NewVersionID(now, "")
	b := NewVersionID(now.Add(time.Nanosecond), a)
	if !ValidVersionID(a) || !ValidVersionID(b) || len(a) != 32 {
		t.Fatalf("IDs %q, %q are not valid", a, b)
	}
	if b >= a {
		t.Errorf("a later ID %q does not sort before %q", b, a)
	}
	// Another node's clock runs behind: the ID still sorts first, one
	// nanosecond after the one it follows.
	c := NewVersionID(now.Add(-time.Hour), b)
	if c >= b {
		t.Errorf("an ID made behind the clock %q does not sort before %q", c, b)
	}
	if tc, _ := versionTime(c); tc != now.UnixNano()+2 {
		t.Errorf("the ID made behind the clock is of %d, want %d", tc, now.UnixNano()+2)
	}
	// Unique at the same nanosecond.
	if NewVersionID(now, "") == a {
		t.Error("two IDs of one nanosecond are equal")
	}
	// The epoch sequence of migrated rows (0017) is older than any.
	if epoch := "7fffffffffffffff0000000000000000"; a >= epoch || !ValidVersionID(epoch) {
		t.Errorf("a new ID %q does not sort before the migrated rows' %q", a, epoch)
	}
}

func TestValidVersionID(t *testing.T) {
	for id, want := range map[string]bool{
		"null": true, "0123456789abcdef0123456789abcdef": true,
		"": false, "NULL": false, "0123456789ABCDEF0123456789ABCDEF": false, "0123456789abcdef": false,
		"0123456789abcdef0123456789abcdeg": false, "0123456789abcdef0123456789abcdef0": false, "../x": false,
	} {
		if got := ValidVersionID(id); got != want {
			t.Errorf("ValidVersionID(%q) = %v, want %v", id, got, want)
		}
	}
}

func TestPlanVersion(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		v       Versioning
		null    bool
		replace bool
	}{
		{Unversioned, true, true},
		{VersioningSuspended, true, true},
		{VersioningEnabled, false, false},
	} {
		nv := PlanVersion(tc.v, "", "", now)
		if (nv.VersionID == NullVersion) != tc.null || nv.ReplacesNull != tc.replace || !ValidVersionID(nv.Seq) || nv.Seq == NullVersion {
			t.Errorf("PlanVersion(%q) = %+v", tc.v, nv)
		}
		if !tc.null && nv.VersionID != nv.Seq {
			t.Errorf("PlanVersion(%q): a version's ID %q is not its seq %q", tc.v, nv.VersionID, nv.Seq)
		}
	}
}

func TestPlanVersionKeepsTheNullPlace(t *testing.T) {
	now := time.Now()
	seq := NewVersionID(now.Add(-time.Hour), "")
	for _, tc := range []struct {
		v        Versioning
		latestID string
		keeps    bool
	}{
		{Unversioned, NullVersion, true},         // an overwrite
		{VersioningSuspended, NullVersion, true}, // the null version is the latest
		{VersioningSuspended, seq, false},        // a newer version is above it: the new null goes first
		{VersioningEnabled, NullVersion, false},  // a new version
		{VersioningEnabled, seq, false},
	} {
		nv := PlanVersion(tc.v, tc.latestID, seq, now)
		if got := nv.Seq == seq; got != tc.keeps {
			t.Errorf("PlanVersion(%q, latest %q): seq %q, keeps the latest's: %v, want %v", tc.v, tc.latestID, nv.Seq, got, tc.keeps)
		}
		if !tc.keeps && nv.Seq >= seq {
			t.Errorf("PlanVersion(%q, latest %q): seq %q does not sort before the latest's %q", tc.v, tc.latestID, nv.Seq, seq)
		}
	}
}

func TestCheckVersioning(t *testing.T) {
	for v, ok := range map[Versioning]bool{VersioningEnabled: true, VersioningSuspended: true, Unversioned: false, "enabled": false, "Disabled": false} {
		if got := CheckVersioning(v) == nil; got != ok {
			t.Errorf("CheckVersioning(%q) ok = %v, want %v", v, got, ok)
		}
	}
}

func TestCheckVersionListOptions(t *testing.T) {
	for _, tc := range []struct {
		opts VersionListOptions
		ok   bool
	}{
		{VersionListOptions{}, true},
		{VersionListOptions{KeyMarker: "k"}, true},
		{VersionListOptions{KeyMarker: "k", VersionIDMarker: "null"}, true},
		{VersionListOptions{VersionIDMarker: "null"}, false},
		{VersionListOptions{KeyMarker: "k", VersionIDMarker: "v1"}, false},
	} {
		if got := CheckVersionListOptions(tc.opts) == nil; got != tc.ok {
			t.Errorf("CheckVersionListOptions(%+v) ok = %v, want %v", tc.opts, got, tc.ok)
		}
	}
}
