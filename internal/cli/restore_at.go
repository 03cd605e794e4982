package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/coffer-storage/coffer/internal/atomicfile"
	"github.com/coffer-storage/coffer/internal/replicate"
)

// restoreAtCmd is coffer restore --from URL --at TIME: a new data folder
// from a --replicate-to replica, at a point in time (internal/replicate).
// restoreCmd hands it the arguments when they name a time or the source
// holds a replica rather than backups.
type restoreAtCmd struct{ env Env }

func (c *restoreAtCmd) Run(ctx context.Context, args []string) error {
	fs := newFlagSet("coffer restore", c.env)
	from := fs.String("from", "", "the replica: the folder or s3://BUCKET[/PREFIX]?endpoint=… URL coffer serve --replicate-to wrote")
	data := fs.String("data", "", "the data folder to make (absent or empty)")
	atFlag := fs.String("at", "latest", "the point in time: RFC 3339 (2026-11-28T04:05:06Z), unix seconds, or latest")
	keysFrom := fs.String("keys-from", "", "a folder holding the key material to put in the new data folder (server.key, kms.keyring), which a replica never holds")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *from == "" || *data == "" {
		return usageError{errors.New("--from and --data are required")}
	}
	at, err := parseAt(*atFlag)
	if err != nil {
		return usageError{fmt.Errorf("--at: %w", err)}
	}
	log := newLogger(c.env.Stderr, "warn", "text")
	start, last := time.Now(), time.Now()
	progress := false
	res, err := replicate.Restore(ctx, *from, *data, at, replicate.RestoreOptions{Log: log, Progress: func(n, b int64) {
		if time.Since(last) >= time.Second {
			last, progress = time.Now(), true
			fmt.Fprintf(c.env.Stderr, "\rblobs copied: %d (%s)", n, mib(b))
		}
	}})
	if progress {
		fmt.Fprintln(c.env.Stderr)
	}
	if err != nil {
		return err
	}
	took := time.Since(start)
	fmt.Fprintf(c.env.Stdout, "restored %s into %s: the point of %s (transaction %d), %d blobs (%s) in %s\n",
		replicaName(*from), *data, res.Point.Format(time.RFC3339Nano), res.TXID, res.Blobs, mib(res.Bytes), took.Round(time.Millisecond))
	if *keysFrom == "" {
		fmt.Fprintf(c.env.Stderr, "warning: a replica holds no key material: copy server.key (and kms.keyring, if objects are encrypted) from where you keep them into %s, or pass --keys-from, before coffer serve\n", *data)
		return nil
	}
	n := 0
	for _, name := range []string{"server.key", "kms.keyring"} {
		b, err := os.ReadFile(filepath.Join(*keysFrom, name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		} else if err != nil {
			return err
		}
		if err := atomicfile.Create(filepath.Join(*data, name), b, 0o600); err != nil {
			return err
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("--keys-from %s: neither server.key nor kms.keyring is there", *keysFrom)
	}
	return nil
}

// parseAt reads --at: latest (the zero time), RFC 3339, or unix seconds.
func parseAt(s string) (time.Time, error) {
	if s == "" || strings.EqualFold(s, "latest") {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && f > 0 {
		sec := int64(f)
		return time.Unix(sec, int64((f-float64(sec))*1e9)), nil
	}
	return time.Time{}, fmt.Errorf("%q is neither RFC 3339, unix seconds nor latest", s)
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// replicaName is u without its query.
func replicaName(u string) string {
	if i := strings.IndexByte(u, '?'); i >= 0 {
		return u[:i]
	}
	return u
}
