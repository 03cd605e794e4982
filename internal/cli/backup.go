package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/coffer-storage/coffer/internal/backup"
	"github.com/coffer-storage/coffer/internal/blob"
	"github.com/coffer-storage/coffer/internal/config"
	"github.com/coffer-storage/coffer/internal/kms"
	"github.com/coffer-storage/coffer/internal/server"
)

// backupCmd is coffer backup (docs/backup.md): a backup of the embedded
// shape's data folder while the server runs, and list, verify and prune
// of a destination's backups.
type backupCmd struct{ env Env }

func (*backupCmd) Synopsis() string {
	return "back up the data folder while the server runs (--to DEST); list, verify, prune --keep N"
}

// scaleOutBackup is coffer backup's answer on the scale-out shape.
const scaleOutBackup = "coffer backup backs up the embedded shape (SQLite and the local disk in the data folder); " +
	"on the scale-out shape back up PostgreSQL with its own tools (pg_basebackup and WAL archiving, or pg_dump) " +
	"and protect the S3 store with its versioning and replication: see docs/operations.md, \"Backups\""

func (c *backupCmd) Run(ctx context.Context, args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "list":
			return c.list(ctx, args[1:])
		case "verify":
			return c.verify(ctx, args[1:])
		case "prune":
			return c.prune(ctx, args[1:])
		}
	}
	fs := flag.NewFlagSet("coffer backup", flag.ContinueOnError)
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintln(w, "usage: coffer backup --to DEST [--keys-to DEST2] [flags]\n       coffer backup list|verify|prune --to DEST (each with -h); see docs/backup.md\n\nflags:")
		config.PrintDefaults(w, fs, nil)
	}
	routeHelp(fs, c.env)
	data := dataFlag(fs, c.env)
	to := fs.String("to", "", "destination: a folder, or an S3 URL as --blob takes (s3://BUCKET[/PREFIX]?endpoint=…); its blobs/ are shared by every backup in it")
	keysTo := fs.String("keys-to", "", "destination of the key material (the server key, the local KMS keyring), apart from --to; without it the key material is left out, with a warning")
	fs.StringVar(&data.cfg.KMS, "kms", "", "key provider URL, as for coffer serve: says where the local keyring is (default: DATA/kms.keyring)")
	par := fs.Int("parallel", 8, "blobs copied at once")
	if err := data.parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{errorf("unexpected arguments: %v (subcommands: list, verify, prune)", fs.Args())}
	}
	if data.cfg.Meta != "" || data.cfg.Blob != "" {
		return errors.New(scaleOutBackup)
	}
	if *to == "" {
		return usageError{errorf("give the destination with --to DEST (a folder or an S3 URL)")}
	}
	if *keysTo != "" && sameLocation(*to, *keysTo) {
		return usageError{errorf("--keys-to must not be --to: the key material is kept apart from the backups it unlocks")}
	}
	st, err := server.OpenStores(ctx, data.cfg, server.StoreOptions{Meta: true, Blobs: true, ReadOnlyBlobs: true,
		PrepareData: func() error { return data.dataDir(existingData) }})
	if err != nil {
		return err
	}
	defer st.Close()
	if st.Snapshot == nil {
		return errors.New(scaleOutBackup)
	}
	dst, closeDst, err := server.OpenLocation(ctx, *to, false)
	if err != nil {
		return fmt.Errorf("--to: %w", err)
	}
	defer closeDst()
	src := backup.Source{Meta: st.Meta.Reclamation, Snap: st.Snapshot, Blobs: st.Blobs, TmpDir: data.cfg.Data,
		Keys: keyFiles(data.cfg.Data, data.cfg.ServerKeyFile, data.cfg.KMS)}
	o := backup.Options{Parallel: *par, Version: cofferVersion()}
	if *keysTo != "" {
		keys, closeKeys, err := server.OpenLocation(ctx, *keysTo, false)
		if err != nil {
			return fmt.Errorf("--keys-to: %w", err)
		}
		defer closeKeys()
		o.Keys = keys
	} else {
		fmt.Fprintln(c.env.Stderr, "warning: the key material (the server key and the KMS keyring in the data folder) is NOT in this backup: "+
			"without it a restored server cannot check S3 secrets, sessions or encrypted objects. Keep a copy of "+
			filepath.Join(data.cfg.Data, "server.key")+" (and kms.keyring) elsewhere, or give --keys-to DEST2")
	}
	tty := isTerminal(c.env.Stderr)
	if tty {
		o.Progress = func(p backup.Progress) { progressLine(c.env.Stderr, "backup", p) }
	}
	m, err := backup.Run(ctx, src, dst, o)
	if tty {
		fmt.Fprint(c.env.Stderr, "\r\033[K")
	}
	if m.FinishedAt.IsZero() && err != nil {
		return fmt.Errorf("backup failed (nothing was recorded as a backup; what was copied is reused by the next one): %w", err)
	}
	elapsed := m.FinishedAt.Sub(m.StartedAt)
	fmt.Fprintf(c.env.Stdout, "backup %s: snapshot at %s; %d objects, %d blobs: %d copied (%s), %d already there; %s in all; %s in %s (%s)\n",
		m.ID, m.SnapshotAt.Format(time.RFC3339Nano), m.Objects, m.Copied+m.Skipped, m.Copied, humanBytes(m.CopiedBytes), m.Skipped,
		humanBytes(m.Bytes+m.Meta.Size), rate(m.CopiedBytes+m.Meta.Size, elapsed), elapsed.Round(time.Millisecond), keysNote(m))
	return err
}

// keysNote says where a backup's key material went.
func keysNote(m backup.Manifest) string {
	if len(m.Keys) == 0 {
		return "key material left out"
	}
	return "key material " + strings.Join(m.Keys, ", ") + " saved apart"
}

// keyFiles lists the key material of the data folder: the server key
// (--server-key-file, or DATA/server.key) and the local KMS keyring.
func keyFiles(data, serverKeyFile, kmsURL string) []backup.KeyFile {
	sk := serverKeyFile
	if sk == "" {
		sk = filepath.Join(data, "server.key")
	}
	out := []backup.KeyFile{{Name: "server.key", Path: sk}}
	if kms.InDataDir(kmsURL) {
		out = append(out, backup.KeyFile{Name: kms.DefaultKeyringName, Path: filepath.Join(data, kms.DefaultKeyringName)})
	} else if u, err := url.Parse(kmsURL); err == nil && u.Scheme == "local" && u.Path != "" {
		out = append(out, backup.KeyFile{Name: kms.DefaultKeyringName, Path: u.Path})
	}
	return out
}

// sameLocation reports whether two locations name the same place.
func sameLocation(a, b string) bool {
	if strings.Contains(a, "://") || strings.Contains(b, "://") {
		return strings.TrimSuffix(a, "/") == strings.TrimSuffix(b, "/")
	}
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && aa == bb
}

// cofferVersion is the module version of this build.
func cofferVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// rate is n bytes over d in MiB/s.
func rate(n int64, d time.Duration) string {
	if d <= 0 {
		return "- MiB/s"
	}
	return fmt.Sprintf("%.1f MiB/s", float64(n)/(1<<20)/d.Seconds())
}

// progressLine redraws the progress line of a copy on a terminal.
func progressLine(w io.Writer, what string, p backup.Progress) {
	pct := 100.0
	if p.Total > 0 {
		pct = 100 * float64(p.Done) / float64(p.Total)
	}
	const width = 30
	bar := strings.Repeat("#", int(pct*width/100)) + strings.Repeat(".", width-int(pct*width/100))
	fmt.Fprintf(w, "\r\033[K%s [%s] %5.1f%% %d/%d blobs, %s, %s", what, bar, pct, p.Done, p.Total, humanBytes(p.Bytes), rate(p.Bytes, p.Elapsed))
}

// list is coffer backup list.
func (c *backupCmd) list(ctx context.Context, args []string) error {
	fs := newFlagSet("coffer backup list", c.env)
	to := fs.String("to", "", "the destination (a folder or an S3 URL)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *to == "" {
		return usageError{errorf("give the destination with --to DEST")}
	}
	dst, closeDst, err := server.OpenLocation(ctx, *to, true)
	if err != nil {
		return fmt.Errorf("--to: %w", err)
	}
	defer closeDst()
	ms, err := backup.List(ctx, dst)
	if err != nil {
		return err
	}
	if len(ms) == 0 {
		fmt.Fprintln(c.env.Stdout, "no backups")
		return nil
	}
	fmt.Fprintf(c.env.Stdout, "%-30s  %-24s  %8s  %8s  %10s  %s\n", "ID", "SNAPSHOT", "OBJECTS", "BLOBS", "SIZE", "KEYS")
	for _, m := range ms {
		keys := "left out"
		if len(m.Keys) > 0 {
			keys = strings.Join(m.Keys, ",")
		}
		fmt.Fprintf(c.env.Stdout, "%-30s  %-24s  %8d  %8d  %10s  %s\n", m.ID, m.SnapshotAt.Format("2006-01-02T15:04:05.000Z"),
			m.Objects, len(m.Blobs), humanBytes(m.Bytes+m.Meta.Size), keys)
	}
	return nil
}

// verify is coffer backup verify.
func (c *backupCmd) verify(ctx context.Context, args []string) error {
	fs := newFlagSet("coffer backup verify", c.env)
	to := fs.String("to", "", "the destination (a folder or an S3 URL)")
	id := fs.String("backup", "", "the backup to verify (default: every backup)")
	par := fs.Int("parallel", 8, "blobs read at once")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *to == "" {
		return usageError{errorf("give the destination with --to DEST")}
	}
	dst, closeDst, err := server.OpenLocation(ctx, *to, true)
	if err != nil {
		return fmt.Errorf("--to: %w", err)
	}
	defer closeDst()
	var ms []backup.Manifest
	if *id != "" {
		m, err := backup.Load(ctx, dst, *id)
		if err != nil {
			return err
		}
		ms = append(ms, m)
	} else if ms, err = backup.List(ctx, dst); err != nil {
		return err
	}
	if len(ms) == 0 {
		return errors.New("no backups to verify")
	}
	var progress func(backup.Progress)
	tty := isTerminal(c.env.Stderr)
	if tty {
		progress = func(p backup.Progress) { progressLine(c.env.Stderr, "verify", p) }
	}
	bad, p, err := backup.Verify(ctx, dst, ms, *par, progress)
	if tty {
		fmt.Fprint(c.env.Stderr, "\r\033[K")
	}
	if err != nil {
		return err
	}
	for _, b := range bad {
		fmt.Fprintf(c.env.Stdout, "BAD %s (backup %s): %v\n", b.Key, b.Backup, b.Err)
	}
	fmt.Fprintf(c.env.Stdout, "verified %d backups: %d files, %s read in %s (%s); %d bad\n", len(ms), p.Done, humanBytes(p.Bytes),
		p.Elapsed.Round(time.Millisecond), rate(p.Bytes, p.Elapsed), len(bad))
	if len(bad) > 0 {
		return fmt.Errorf("%d files of the backups differ from their manifests", len(bad))
	}
	return nil
}

// prune is coffer backup prune.
func (c *backupCmd) prune(ctx context.Context, args []string) error {
	fs := newFlagSet("coffer backup prune", c.env)
	to := fs.String("to", "", "the destination (a folder or an S3 URL)")
	keep := fs.Int("keep", 0, "how many of the newest backups to keep (at least 1)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *to == "" || *keep < 1 {
		return usageError{errorf("give the destination with --to DEST and --keep N (N >= 1)")}
	}
	dst, closeDst, err := server.OpenLocation(ctx, *to, false)
	if err != nil {
		return fmt.Errorf("--to: %w", err)
	}
	defer closeDst()
	p, err := backup.Prune(ctx, dst, *keep)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.env.Stdout, "removed %d backups (%s) and %d blobs (%s) no kept backup needs\n", len(p.Backups), strings.Join(p.Backups, ", "), p.Blobs, humanBytes(p.Bytes))
	return nil
}

// restoreCmd is coffer restore: a backup into a new data folder.
type restoreCmd struct{ env Env }

func (*restoreCmd) Synopsis() string {
	return "restore into a new, empty data folder: a backup (coffer backup; --from SRC --data DIR [--backup ID]) or a replica (coffer serve --replicate-to) at a point in time (--at TIME|latest)"
}

func (c *restoreCmd) Run(ctx context.Context, args []string) error {
	fs := newFlagSet("coffer restore", c.env)
	from := fs.String("from", "", "where the backups are (coffer backup --to)")
	dir := fs.String("data", "", "the data folder to restore into: new, or empty")
	id := fs.String("backup", "", "the backup to restore (default: the newest; coffer backup list)")
	keysFrom := fs.String("keys-from", "", "where the key material is (coffer backup --keys-to; for a replica, a folder holding server.key and kms.keyring)")
	par := fs.Int("parallel", 8, "blobs copied at once")
	at := fs.String("at", "", "restore a replica (coffer serve --replicate-to) as it was at this time: RFC 3339, unix seconds, or latest (the default for a replica)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *at != "" {
		if *id != "" {
			return usageError{errorf("--at restores a replica, --backup a backup: give one")}
		}
		return (&restoreAtCmd{env: c.env}).Run(ctx, args)
	}
	if *from == "" || *dir == "" {
		return usageError{errorf("give --from SRC and --data DIR")}
	}
	if err := emptyDir(*dir); err != nil {
		return err
	}
	src, closeSrc, err := server.OpenLocation(ctx, *from, true)
	if err != nil {
		return fmt.Errorf("--from: %w", err)
	}
	defer closeSrc()
	// Continuous replication (coffer serve --replicate-to) restores by
	// time: a source holding a replica (meta/) and no backups (backups/)
	// goes to internal/replicate's restore, at its latest point unless
	// --at said otherwise (above).
	if *id == "" {
		replica, backups := holds(ctx, src, "meta/"), holds(ctx, src, "backups/")
		if replica && !backups {
			closeSrc()
			return (&restoreAtCmd{env: c.env}).Run(ctx, args)
		}
	}
	var m backup.Manifest
	if *id != "" {
		m, err = backup.Load(ctx, src, *id)
	} else {
		m, err = backup.Latest(ctx, src)
	}
	if err != nil {
		return err
	}
	start := time.Now()
	if err := os.MkdirAll(*dir, 0o700); err != nil {
		return err
	}
	fail := func(err error) error {
		return fmt.Errorf("restore of backup %s failed: %w; remove %s before trying again", m.ID, err, *dir)
	}
	if err := backup.RestoreMeta(ctx, src, m, filepath.Join(*dir, "meta.db")); err != nil {
		return fail(err)
	}
	cfg := dataFlag(flag.NewFlagSet("", flag.ContinueOnError), c.env).cfg
	cfg.Data = *dir
	st, err := server.OpenStores(ctx, cfg, server.StoreOptions{Meta: true, Blobs: true,
		PrepareData: func() error { return server.PrepareDataDir(*dir, newLogger(c.env.Stderr, "warn", "text")) }})
	if err != nil {
		return fail(err)
	}
	defer st.Close()
	var progress func(backup.Progress)
	tty := isTerminal(c.env.Stderr)
	if tty {
		progress = func(p backup.Progress) { progressLine(c.env.Stderr, "restore", p) }
	}
	p, err := backup.RestoreBlobs(ctx, src, st.Blobs, m, *par, progress)
	if tty {
		fmt.Fprint(c.env.Stderr, "\r\033[K")
	}
	if err != nil {
		return fail(err)
	}
	// The snapshot was read under the backup's own lease: end it here.
	if err := st.Meta.Reclamation.ReleaseBackupLease(ctx, m.ID); err != nil {
		return fail(err)
	}
	keys := "key material not restored"
	if *keysFrom != "" {
		ks, closeKeys, err := server.OpenLocation(ctx, *keysFrom, true)
		if err != nil {
			return fail(fmt.Errorf("--keys-from: %w", err))
		}
		defer closeKeys()
		names, err := backup.RestoreKeys(ctx, ks, m, *dir)
		if err != nil {
			return fail(err)
		}
		keys = "key material " + strings.Join(names, ", ") + " restored"
		if len(names) == 0 {
			keys = "no key material was saved with this backup"
		}
	}
	if len(m.Missing) > 0 {
		fmt.Fprintf(c.env.Stderr, "warning: %d blobs were already missing from the data folder when backup %s was taken (first: %s): their objects cannot be read; see docs/operations.md, \"A damaged blob\"\n",
			len(m.Missing), m.ID, m.Missing[0])
	}
	if len(m.Keys) == 0 || *keysFrom == "" {
		fmt.Fprintln(c.env.Stderr, "warning: no key material restored: copy the server key (server.key) and any kms.keyring of the backed-up data folder into "+*dir+
			" before coffer serve (a new key does not match the metadata: the server refuses to start)")
	}
	if err := st.Close(); err != nil {
		return fail(err)
	}
	elapsed := time.Since(start)
	fmt.Fprintf(c.env.Stdout, "restored backup %s (snapshot at %s) into %s: %d objects, %d blobs, %s in %s (%s); %s\n",
		m.ID, m.SnapshotAt.Format(time.RFC3339Nano), *dir, m.Objects, p.Done, humanBytes(p.Bytes+m.Meta.Size),
		elapsed.Round(time.Millisecond), rate(p.Bytes+m.Meta.Size, elapsed), keys)
	return nil
}

// holds says whether the store st has any key under prefix.
func holds(ctx context.Context, st blob.Store, prefix string) bool {
	found := errors.New("found")
	return st.List(ctx, prefix, func(blob.Info) error { return found }) == found
}

// emptyDir refuses a data folder that exists and holds anything.
func emptyDir(dir string) error {
	f, err := os.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	if err != nil && err != io.EOF {
		return err
	}
	if len(names) > 0 {
		return fmt.Errorf("%s is not empty: coffer restore restores into a new or empty data folder only", dir)
	}
	return nil
}
