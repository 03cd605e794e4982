package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/coffer-storage/coffer/internal/config"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/kms"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/object"
	"github.com/coffer-storage/coffer/internal/server"
)

// fsckCmd is coffer fsck: one pass of the scrub (object/scrub.go) now,
// beside running nodes or not.
type fsckCmd struct{ env Env }

func (*fsckCmd) Synopsis() string {
	return "check every object's blobs against their recorded checksums now (one scrub pass; also while the server runs); exit 1 if any is damaged"
}

func (c *fsckCmd) Run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("coffer fsck", flag.ContinueOnError)
	routeHelp(fs, c.env)
	data := dataFlag(fs, c.env)
	fs.StringVar(&data.cfg.KMS, "kms", "", "key provider URL, as for coffer serve, to authenticate encrypted objects (default: the keyring in the data folder, if there is one; without keys only their size is checked)")
	fs.Var(bytesFlag{&data.cfg.ScrubRate}, "rate", "bytes per second read, at most, e.g. 50MiB (default: --scrub-rate's 50MiB)")
	quiet := fs.Bool("quiet", false, "print only the damaged blobs and the summary")
	if err := data.parse(fs, args); err != nil {
		return err
	}
	// The local disk opens read-only, beside a coffer serve holding it;
	// blobs are immutable, so the pass only reads.
	st, err := server.OpenStores(ctx, data.cfg, server.StoreOptions{Meta: true, Blobs: true, ReadOnlyBlobs: true,
		PrepareData: func() error { return data.dataDir(existingData) }})
	if err != nil {
		return err
	}
	defer st.Close()
	cfg := object.ConfigFrom(data.cfg)
	keys, err := fsckKeys(ctx, data.cfg.KMS, data.cfg.Data)
	if err != nil {
		return err
	}
	if keys != nil {
		defer keys.Close()
		cfg.Keys = keys
	}
	log := newLogger(c.env.Stderr, "warn", "text")
	svc := object.New(object.StoresOf(st.Meta), st.Blobs, cfg, log)
	host, _ := os.Hostname()
	opts := object.ScrubOptionsFrom(data.cfg)
	opts.Owner = "coffer fsck@" + host
	last := time.Now()
	opts.Progress = func(p object.ScrubProgress) {
		if !*quiet && time.Since(last) >= time.Second {
			last = time.Now()
			fmt.Fprintf(c.env.Stdout, "… %d objects, %s checked, %d damaged\n", p.Objects, humanBytes(p.Bytes), p.Bad())
		}
	}
	opts.Finding = func(f meta.ScrubFinding) {
		fmt.Fprintf(c.env.Stdout, "%s: %s/%s (version %s), blob %s: %s\n", f.Problem, f.Bucket, f.Key, f.VersionID, f.BlobKey, f.Detail)
	}
	if keys == nil && !*quiet {
		fmt.Fprintln(c.env.Stdout, "no key provider: encrypted objects are checked by size only (give --kms)")
	}
	p, err := svc.Scrubber().Scrub(ctx, opts)
	if errcode.Of(err) == errcode.Conflict {
		return fmt.Errorf("%w; it is scrubbing now: see GET /api/v1/admin/scrub, or run coffer fsck when it is done", err)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(c.env.Stdout, "checked %d objects, %s in %s: %d missing, %d corrupt, %d unreadable; %d encrypted checked by size only\n",
		p.Objects, humanBytes(p.Bytes), p.FinishedAt.Sub(p.StartedAt).Round(time.Millisecond), p.Missing, p.Corrupt, p.Unreadable, p.Unverified)
	if n, err := st.Meta.Scrubs.ListScrubFindings(ctx, "", 1000); err == nil && len(n) > 0 {
		return fmt.Errorf("%d damaged blobs on record (this pass found %d); see docs/operations.md, \"A damaged blob\"", len(n), p.Bad())
	}
	if p.Bad() > 0 {
		return errors.New("damaged blobs found")
	}
	return nil
}

// fsckKeys opens the key provider: --kms, or the data folder's keyring if
// there is one (never made here); nil without either.
func fsckKeys(ctx context.Context, url, data string) (*kms.Keys, error) {
	if kms.InDataDir(url) {
		if _, err := os.Stat(filepath.Join(data, kms.DefaultKeyringName)); err != nil {
			return nil, nil
		}
	}
	keys, err := kms.Open(ctx, url, kms.Options{DataDir: data})
	if err != nil {
		return nil, fmt.Errorf("--kms: %w", err)
	}
	return keys, nil
}

// humanBytes writes n in binary units.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// bytesFlag is a byte size flag (config.ParseBytes).
type bytesFlag struct{ p *int64 }

func (b bytesFlag) String() string {
	if b.p == nil {
		return ""
	}
	return humanBytes(*b.p)
}

func (b bytesFlag) Set(s string) error {
	n, err := config.ParseBytes(s)
	if err == nil && n < 1<<10 {
		err = errors.New("must be at least 1KiB")
	}
	if err == nil {
		*b.p = n
	}
	return err
}
