package meta

import (
	"context"
	"fmt"
	"sort"
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

// TestListVersionsRollUpReadsLittle: a page of common prefixes, each
// folder holding thousands of versions, reads a few rows per prefix — not
// the rest of the page each time (which made a page of 100 prefixes over
// 1 M versions read 100,000 rows: docs/PERFORMANCE.md, "Versioning
// (issue 20)") — and still pages exactly.
func TestListVersionsRollUpReadsLittle(t *testing.T) {
	const folders, perFolder = 100, 2000
	key := func(i int) string { return fmt.Sprintf("d%03d/k%05d", i/perFolder, i) }
	var rows []Versioned
	for i := range folders * perFolder {
		rows = append(rows, Versioned{Object: Object{Key: key(i), VersionID: "v"}, Seq: "s"})
	}
	read := 0
	scan := func(_ context.Context, fromKey, fromSeq string, inclusive bool, end string, limit int) ([]Versioned, error) {
		i := sort.Search(len(rows), func(i int) bool {
			r := rows[i]
			if inclusive {
				return r.Key > fromKey || r.Key == fromKey && r.Seq >= fromSeq
			}
			return r.Key > fromKey || r.Key == fromKey && r.Seq > fromSeq
		})
		var out []Versioned
		for ; i < len(rows) && len(out) < limit && (end == "" || rows[i].Key < end); i++ {
			out = append(out, rows[i])
		}
		read += len(out)
		return out, nil
	}
	noNull := func(context.Context, string) (string, bool, error) { return "", false, nil }
	for _, limit := range []int{1000, 7} {
		read = 0
		var got []string
		opts := VersionListOptions{Delimiter: "/", Limit: limit}
		for {
			p, err := ListVersions(context.Background(), scan, noNull, opts)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, p.CommonPrefixes...)
			if !p.Truncated {
				break
			}
			opts.KeyMarker, opts.VersionIDMarker = p.NextKeyMarker, p.NextVersionIDMarker
		}
		if len(got) != folders || got[0] != "d000/" || got[folders-1] != fmt.Sprintf("d%03d/", folders-1) {
			t.Fatalf("pages of %d: %d prefixes: %q", limit, len(got), got)
		}
		if most := 1001 + folders*(rollUpScan+1); limit == 1000 && read > most {
			t.Errorf("a page of %d prefixes read %d rows, want at most %d", folders, read, most)
		}
	}
}
