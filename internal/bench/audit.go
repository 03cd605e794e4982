package bench

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coffer-storage/coffer/internal/bench/report"
)

// ledgerEntry is one upload the server acknowledged with a 2xx.
type ledgerEntry struct {
	bucket  string
	key     string
	size    int64
	sha256  [32]byte
	owner   int // index of the session that uploaded it (file API)
	index   int // its place in the ledger (set on the copy add's caller keeps)
	deleted bool
}

// ledger records acknowledged uploads for the audit.
type ledger struct {
	mu      sync.Mutex
	entries []ledgerEntry
	bytes   int64 // the sizes of every entry, deleted ones included
}

func (l *ledger) add(e ledgerEntry) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = append(l.entries, e)
	l.bytes += e.size
	return len(l.entries) - 1
}

// written is how many object bytes the server acknowledged so far.
func (l *ledger) written() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.bytes
}

// markDeleted excludes entry i from the audit: the scenario deleted it.
func (l *ledger) markDeleted(i int) {
	l.mu.Lock()
	l.entries[i].deleted = true
	l.mu.Unlock()
}

func (l *ledger) snapshot() []ledgerEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]ledgerEntry(nil), l.entries...)
}

// fetcher builds the request that reads an acknowledged upload back.
type fetcher func(ctx context.Context, e *ledgerEntry) (*request, error)

const maxAuditSamples = 10

// audit reads back every acknowledged upload and compares its size and
// SHA-256 with what the server acknowledged.
func audit(ctx context.Context, entries []ledgerEntry, fetch fetcher, d doer, conc int) report.Audit {
	start := time.Now()
	res := report.Audit{Enabled: true}
	var verified, missing, corrupt atomic.Int64
	var mu sync.Mutex
	note := func(format string, args ...any) {
		mu.Lock()
		if len(res.Samples) < maxAuditSamples {
			res.Samples = append(res.Samples, fmt.Sprintf(format, args...))
		}
		mu.Unlock()
	}
	work := make(chan *ledgerEntry)
	var wg sync.WaitGroup
	for range max(conc, 1) {
		wg.Go(func() {
			for e := range work {
				rq, err := fetch(ctx, e)
				if err != nil {
					note("unverified %s: %v", e.key, err)
					continue
				}
				resp, err := d.do(ctx, rq)
				var re *reqError
				switch {
				case err == nil && resp.n == e.size && resp.sum == e.sha256:
					verified.Add(1)
				case err == nil:
					corrupt.Add(1)
					note("corrupt %s: %d bytes sha256 %s, acknowledged %d bytes sha256 %s",
						e.key, resp.n, hex.EncodeToString(resp.sum[:]), e.size, hex.EncodeToString(e.sha256[:]))
				case errors.As(err, &re) && re.status == http.StatusNotFound:
					missing.Add(1)
					note("missing %s: %s", e.key, re.msg)
				default:
					note("unverified %s: %v", e.key, err)
				}
			}
		})
	}
	for i := range entries {
		e := &entries[i]
		if e.deleted {
			res.Deleted++
			continue
		}
		select {
		case work <- e:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(work)
	wg.Wait()
	res.Acknowledged = int64(len(entries))
	res.Verified, res.Missing, res.Corrupt = verified.Load(), missing.Load(), corrupt.Load()
	res.Unverified = res.Acknowledged - res.Deleted - res.Verified - res.Missing - res.Corrupt
	res.DurationS = time.Since(start).Seconds()
	return res
}
