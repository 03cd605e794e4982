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
