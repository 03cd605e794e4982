package meta

import (
	"context"
	"fmt"
	"sort"
	"testing"
)

// TestListRollUpReadsLittle: a page of common prefixes over folders of
// many keys each (ListObjectsV2 with a delimiter) reads a few rows per
// prefix, not the rest of the page after every one; paging still lists
// every prefix once.
func TestListRollUpReadsLittle(t *testing.T) {
	const folders, perFolder = 100, 2000
	var keys []string
	for i := range folders * perFolder {
		keys = append(keys, fmt.Sprintf("d%03d/k%05d", i/perFolder, i))
	}
	read := 0
	scan := func(_ context.Context, from string, inclusive bool, end string, limit int) ([]Object, error) {
		i := sort.Search(len(keys), func(i int) bool {
			if inclusive {
				return keys[i] >= from
			}
			return keys[i] > from
		})
		var out []Object
		for ; i < len(keys) && len(out) < limit && (end == "" || keys[i] < end); i++ {
			out = append(out, Object{Key: keys[i]})
		}
		read += len(out)
		return out, nil
	}
	for _, limit := range []int{1000, 7} {
		read = 0
		var got []string
		opts := ListOptions{Delimiter: "/", Limit: limit}
		for {
			p, err := List(context.Background(), scan, opts)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, p.CommonPrefixes...)
			if !p.Truncated {
				break
			}
			opts.StartAfter = p.NextStartAfter
		}
		if len(got) != folders || got[0] != "d000/" || got[folders-1] != fmt.Sprintf("d%03d/", folders-1) {
			t.Fatalf("pages of %d: %d prefixes: %q", limit, len(got), got)
		}
		// A few rows a prefix, the first one included (it used to read
		// the whole page, 1,001 rows, for the first prefix alone).
		if most := folders * (rollUpScan + 1); limit == 1000 && read > most {
			t.Errorf("a page of %d prefixes read %d rows, want at most %d", folders, read, most)
		}
	}
}

// sliceScans are a ScanFunc and a SkipScanFunc over sorted keys, and the
// number of scans each made.
func sliceScans(keys []string, scans, skips *int) (ScanFunc, SkipScanFunc) {
	first := func(from string, inclusive bool) int {
		return sort.Search(len(keys), func(i int) bool {
			if inclusive {
				return keys[i] >= from
			}
			return keys[i] > from
		})
	}
	scan := func(_ context.Context, from string, inclusive bool, end string, limit int) ([]Object, error) {
		*scans++
		var out []Object
		for i := first(from, inclusive); i < len(keys) && len(out) < limit && (end == "" || keys[i] < end); i++ {
			out = append(out, Object{Key: keys[i]})
		}
		return out, nil
	}
	skip := func(_ context.Context, from string, inclusive bool, end string, limit int, prefix, delim string) ([]Object, error) {
		*skips++
		if PrefixEnd(delim) == "" {
			return nil, fmt.Errorf("skip scan with delimiter %q", delim)
		}
		var out []Object
		for i := first(from, inclusive); i < len(keys) && len(out) < limit && (end == "" || keys[i] < end); {
			out = append(out, Object{Key: keys[i]})
			if cp, ok := commonPrefix(keys[i], prefix, delim); ok {
				i = first(PrefixEnd(cp), true)
			} else {
				i++
			}
		}
		return out, nil
	}
	return scan, skip
}

// TestListSkippingListsAlike: ListSkipping's pages are List's, paged
// with every limit, prefix, delimiter and start, on keys of folders of
// one and of many keys among plain ones, some not valid UTF-8; and a
// page of 100 folders of 2,000 keys takes two scans, not 100.
func TestListSkippingListsAlike(t *testing.T) {
	var keys []string
	for i := range 30 {
		keys = append(keys, fmt.Sprintf("f%02d", i))
		for j := range i % 4 * 3 {
			keys = append(keys, fmt.Sprintf("d%02d/k%02d", i, j), fmt.Sprintf("d%02d/s/k%02d", i, j))
		}
		keys = append(keys, fmt.Sprintf("m%02d→x", i), fmt.Sprintf("m%02d→→y", i), "\xff"+fmt.Sprint(i)+"/z", fmt.Sprintf("z%02d/", i))
	}
	sort.Strings(keys)
	var scans, skips int
	scan, skip := sliceScans(keys, &scans, &skips)
	for _, delim := range []string{"", "/", "→", "s/", "\xff"} {
		for _, prefix := range []string{"", "d", "d01/", "d03/s/", "m", "\xff"} {
			for _, start := range []string{"", "d", "d02/", "d02/k01", "f10", "m05→", "\xff1"} {
				for _, limit := range []int{1, 2, 3, 7, 1000} {
					opts := ListOptions{Prefix: prefix, Delimiter: delim, StartAfter: start, Limit: limit}
					for page := 0; ; page++ {
						want, err := List(context.Background(), scan, opts)
						if err != nil {
							t.Fatal(err)
						}
						got, err := ListSkipping(context.Background(), scan, skip, opts)
						if err != nil {
							t.Fatal(err)
						}
						if fmt.Sprint(got) != fmt.Sprint(want) {
							t.Fatalf("%+v: page %d\n got %v\nwant %v", opts, page, got, want)
						}
						if !want.Truncated {
							break
						}
						opts.StartAfter = want.NextStartAfter
					}
				}
			}
		}
	}
	if skips == 0 {
		t.Error("no skip scan")
	}
	keys = keys[:0]
	for i := range 100 * 2000 {
		keys = append(keys, fmt.Sprintf("d%03d/k%05d", i/2000, i))
	}
	scans, skips = 0, 0
	scan, skip = sliceScans(keys, &scans, &skips)
	p, err := ListSkipping(context.Background(), scan, skip, ListOptions{Delimiter: "/"})
	if err != nil || len(p.CommonPrefixes) != 100 || p.Truncated {
		t.Fatalf("%d prefixes, truncated %v, %v", len(p.CommonPrefixes), p.Truncated, err)
	}
	if scans != 1 || skips != 1 {
		t.Errorf("a page of 100 folders took %d scans and %d skip scans, want 1 and 1", scans, skips)
	}
}

// TestListDelimiterPageGrowsByBatch: a page of 1,000 objects under a
// prefix with a delimiter (scans of 16, 64, 256 and 665 rows, none
// rolled up) makes room for each batch's objects at once, not by
// doubling from one (11 allocations of up to 400 kB in all).
func TestListDelimiterPageGrowsByBatch(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts: run without -short (scripts/test.sh: without the race detector, which changes them)")
	}
	objs := make([]Object, 5000)
	for i := range objs {
		objs[i].Key = fmt.Sprintf("d/k%05d", i)
	}
	scan := func(_ context.Context, from string, inclusive bool, end string, limit int) ([]Object, error) {
		i := sort.Search(len(objs), func(i int) bool {
			if inclusive {
				return objs[i].Key >= from
			}
			return objs[i].Key > from
		})
		j := i
		for j < len(objs) && j-i < limit && (end == "" || objs[j].Key < end) {
			j++
		}
		return objs[i:j:j], nil // no allocation: what List allocates is counted alone
	}
	opts := ListOptions{Prefix: "d/", Delimiter: "/", Limit: 1000}
	allocs := testing.AllocsPerRun(10, func() {
		if p, err := List(context.Background(), scan, opts); err != nil || len(p.Objects) != 1000 {
			t.Fatalf("%d objects, %v", len(p.Objects), err)
		}
	})
	if allocs > 5 {
		t.Errorf("a page of 1,000 objects with a delimiter made %.0f allocations, want at most 5 (one a batch)", allocs)
	}
}
