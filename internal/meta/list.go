package meta

import (
	"context"
	"slices"
	"strings"
)

// DefaultListLimit and MaxListLimit bound ListOptions.Limit.
const (
	DefaultListLimit = 1000
	MaxListLimit     = 10000
)

// ScanFunc fetches up to limit objects of one bucket, in byte order of keys,
// with from < key (from <= key if inclusive) and, if end != "", key < end.
// from and end are byte strings and may not be valid UTF-8; backends must
// compare raw bytes.
type ScanFunc func(ctx context.Context, from string, inclusive bool, end string, limit int) ([]Object, error)

// SkipScanFunc is a ScanFunc that skips what rolls up: it fetches up to
// limit objects of one bucket with from < key (from <= key if inclusive)
// and, if end != "", key < end, in byte order of keys, the first one
// the first such key, and each next one the first key after the one
// before it or, if that one rolls up under prefix and delim into a
// common prefix, the first key after everything that starts with it
// (at or after PrefixEnd of the common prefix). A page of 100 folders is
// then one scan of 100 rows, not 100 scans. Called only with a
// delimiter whose PrefixEnd is not "".
type SkipScanFunc func(ctx context.Context, from string, inclusive bool, end string, limit int, prefix, delim string) ([]Object, error)

// List implements the listing semantics of ListOptions (prefix, delimiter
// roll-up, start-after, paging) on top of a backend's range scan, so every
// backend lists identically. A StartAfter equal to a common prefix resumes
// after everything under it.
func List(ctx context.Context, scan ScanFunc, opts ListOptions) (ListPage, error) {
	return ListSkipping(ctx, scan, nil, opts)
}

// skipScanMax is the most rows a skip scan asks for: each is a seek
// (an index descent) where a range scan reads the next row, which costs
// more when the rows after a common prefix turn out not to roll up.
const skipScanMax = 256

// ListSkipping is List with, if skip is not nil, a skip scan for the rows
// after a scan that rolled some up into a common prefix (folders tend to
// follow folders): the folders of a page in one scan each skip scan of
// up to skipScanMax rows, where a range scan per folder would be needed.
// Its pages are List's.
func ListSkipping(ctx context.Context, scan ScanFunc, skip SkipScanFunc, opts ListOptions) (ListPage, error) {
	limit := opts.Limit
	if limit <= 0 {
		limit = DefaultListLimit
	}
	limit = min(limit, MaxListLimit)
	prefix, delim := opts.Prefix, opts.Delimiter
	end := PrefixEnd(prefix)

	from, inclusive := prefix, true
	if sa := opts.StartAfter; sa != "" && sa >= prefix {
		from, inclusive = sa, false
		if cp, ok := commonPrefix(sa, prefix, delim); ok && cp == sa {
			from, inclusive = PrefixEnd(sa), true
			if from == "" {
				return ListPage{}, nil
			}
		}
	}
	var page ListPage
	if end != "" && from >= end {
		return page, nil
	}
	n := 0
	rolledUp := false
	ask := 0 // with a delimiter: the rows the last scan asked for
	for {
		want := min(limit-n+1, 1001) // one extra tells whether the page is truncated
		if delim != "" {
			// With a delimiter the next row may roll up into a common
			// prefix of many keys (a folder per entry of the page): a
			// few rows first, at the start and right after each prefix
			// (as ListVersions does), four times as many each time a
			// scan rolled nothing up, not the rest of the page each time.
			if rolledUp || ask == 0 {
				ask = rollUpScan
			} else {
				ask *= 4
			}
			want = min(want, ask)
		}
		var batch []Object
		var err error
		skipping := skip != nil && rolledUp && PrefixEnd(delim) != ""
		if skipping {
			want = min(limit-n+1, skipScanMax)
			batch, err = skip(ctx, from, inclusive, end, want, prefix, delim)
		} else {
			batch, err = scan(ctx, from, inclusive, end, want)
		}
		if err != nil {
			return ListPage{}, err
		}
		if page.Objects == nil && delim == "" {
			// The first batch is most often the whole page: its objects
			// stay where the scan put them (each append below writes at
			// or before the batch's element being read).
			page.Objects = batch[:0]
			if batch == nil {
				page.Objects = []Object{}
			}
		}
		jumped := false
		for i, o := range batch {
			if skipping && jumped && o.Key < from {
				continue // under the last common prefix (a skip scan need not skip it)
			}
			if n == limit {
				page.Truncated = true
				return page, nil
			}
			if cp, ok := commonPrefix(o.Key, prefix, delim); ok {
				page.CommonPrefixes = append(page.CommonPrefixes, cp)
				page.NextStartAfter = cp
				n++
				from, inclusive = PrefixEnd(cp), true
				if from == "" {
					return page, nil
				}
				jumped = true
				if !skipping {
					break
				}
				continue
			}
			if len(page.Objects) == cap(page.Objects) {
				// Room for the rest of the batch at once (with a delimiter
				// the page grows batch by batch: 16, 64, 256, … rows),
				// not doubling from one object: a page of 1,000 objects is
				// 400 kB.
				page.Objects = slices.Grow(page.Objects, min(len(batch)-i, limit-n))
			}
			page.Objects = append(page.Objects, o)
			page.NextStartAfter = o.Key
			n++
			from, inclusive = o.Key, false
		}
		if (!jumped || skipping) && len(batch) < want {
			return page, nil
		}
		rolledUp = jumped
	}
}

// commonPrefix returns the roll-up of key under prefix and delim, if any.
func commonPrefix(key, prefix, delim string) (string, bool) {
	if delim == "" || !strings.HasPrefix(key, prefix) {
		return "", false
	}
	rest := key[len(prefix):]
	i := strings.Index(rest, delim)
	if i < 0 {
		return "", false
	}
	return prefix + rest[:i+len(delim)], true
}

// PrefixEnd returns the smallest byte string greater than every string that
// starts with p, or "" if there is none (p empty or all 0xff bytes).
func PrefixEnd(p string) string {
	b := []byte(p)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return ""
}
