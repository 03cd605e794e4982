package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/coffer-storage/coffer/internal/kms"
	"github.com/coffer-storage/coffer/internal/meta"
)

// kmsCmd manages the key provider of encryption at rest
// (docs/encryption.md).
type kmsCmd struct{ env Env }

func (*kmsCmd) Synopsis() string {
	return "encryption keys: 'kms rotate [--kms URL]' makes a new key-encryption key version current and starts re-wrapping " +
		"the stored data keys; 'kms rewrap' starts that again; 'kms status' shows the jobs and which versions are still used; " +
		"'kms allow|disallow --key K --email E' keeps the SSE-KMS key allow list, 'kms grants' shows it"
}

func (c *kmsCmd) Run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usageError{errorf("need a subcommand: rotate, rewrap, status, allow, disallow or grants")}
	}
	switch args[0] {
	case "rotate":
		return c.rotate(ctx, args[1:])
	case "allow", "disallow", "grants":
		return c.grants(ctx, args[0], args[1:])
	case "rewrap", "status":
		fs := flag.NewFlagSet("coffer kms "+args[0], flag.ContinueOnError)
		routeHelp(fs, c.env)
		data := dataFlag(fs, c.env)
		if err := data.parse(fs, args[1:]); err != nil {
			return err
		}
		m, err := data.openMeta(ctx, existingData)
		if err != nil {
			return err
		}
		defer m.Close()
		if args[0] == "status" {
			return kmsStatus(ctx, c.env.Stdout, m.Meta.EncryptionJobs)
		}
		j, err := m.Meta.EncryptionJobs.StartJob(ctx, meta.EncryptionJob{Name: meta.RewrapJobName, Kind: meta.JobRewrap})
		if err != nil {
			return err
		}
		printJob(c.env.Stdout, j)
		fmt.Fprintln(c.env.Stdout, "The running nodes (coffer serve) do the work; follow it with 'coffer kms status'.")
		return nil
	}
	return usageError{errorf("unknown subcommand %q: want rotate, rewrap, status, allow, disallow or grants", args[0])}
}

func (c *kmsCmd) rotate(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("coffer kms rotate", flag.ContinueOnError)
	routeHelp(fs, c.env)
	data := dataFlag(fs, c.env)
	fs.StringVar(&data.cfg.KMS, "kms", "", "key provider URL, as for coffer serve (default: the keyring in the data folder)")
	if err := data.parse(fs, args); err != nil {
		return err
	}
	if kms.InDataDir(data.cfg.KMS) {
		// The default keyring is the embedded shape's: a scale-out
		// node never uses one it did not find (coffer serve).
		if data.cfg.Meta != "" {
			return usageError{errorf("with --meta (the scale-out shape), name the nodes' key provider with --kms (COFFER_KMS)")}
		}
		if err := data.dataDir(existingData); err != nil {
			return err
		}
	}
	keys, err := kms.Open(ctx, data.cfg.KMS, kms.Options{DataDir: data.cfg.Data})
	if err != nil {
		return err
	}
	defer keys.Close()
	before := keys.Default()
	ref, err := keys.Rotate(ctx)
	if err != nil {
		return err
	}
	if ref == before {
		fmt.Fprintf(c.env.Stdout, "key-encryption key: %s (the key service rotates it itself; nothing to do)\n", ref)
		return nil
	}
	fmt.Fprintf(c.env.Stdout, "key-encryption key: %s (was %s)\n"+
		"New objects use it once each node's current intermediate key expires (within seconds).\n", ref, before)
	m, err := data.openMeta(ctx, existingData)
	if err != nil {
		return fmt.Errorf("the key rotated, but the re-wrap job could not be started (run 'coffer kms rewrap'): %w", err)
	}
	defer m.Close()
	j, err := m.Meta.EncryptionJobs.StartJob(ctx, meta.EncryptionJob{Name: meta.RewrapJobName, Kind: meta.JobRewrap})
	if err != nil {
		return fmt.Errorf("the key rotated, but the re-wrap job could not be started (run 'coffer kms rewrap'): %w", err)
	}
	printJob(c.env.Stdout, j)
	fmt.Fprintf(c.env.Stdout, "The running nodes re-wrap the stored data keys under %s in the background. Keep %s until\n"+
		"'coffer kms status' shows the job done and no key under it.\n", ref, before)
	return nil
}

// kmsStatus prints the jobs and the KEK versions stored data keys use.
func kmsStatus(ctx context.Context, w io.Writer, m meta.EncryptionJobs) error {
	js, err := m.ListJobs(ctx)
	if err != nil {
		return err
	}
	usage, err := m.KEKUsage(ctx)
	if err != nil {
		return err
	}
	if len(js) == 0 {
		fmt.Fprintln(w, "jobs: none")
	}
	for _, j := range js {
		printJob(w, j)
	}
	fmt.Fprintln(w, "stored data keys by key-encryption key version:")
	if len(usage) == 0 {
		fmt.Fprintln(w, "  none")
	}
	for _, k := range slices.Sorted(maps.Keys(usage)) {
		fmt.Fprintf(w, "  %-40s %d\n", k, usage[k])
	}
	return nil
}

func printJob(w io.Writer, j meta.EncryptionJob) {
	fmt.Fprintf(w, "job %s: %s, pass %d, %d done, %d skipped, %d failed", j.Name, j.State, j.Pass, j.Done, j.Skipped, j.Failed)
	if !j.FinishedAt.IsZero() {
		fmt.Fprintf(w, ", finished %s", j.FinishedAt.Format(time.RFC3339))
	} else if j.LeaseOwner != "" {
		fmt.Fprintf(w, ", worked on by %s", j.LeaseOwner)
	}
	fmt.Fprintln(w)
	if j.LastError != "" {
		fmt.Fprintf(w, "  last error: %s\n", j.LastError)
	}
}

// encryptCmd starts the encryption of plaintext objects
// (docs/encryption.md#background-jobs).
type encryptCmd struct{ env Env }

func (*encryptCmd) Synopsis() string {
	return "encrypt existing plaintext objects in the background: 'encrypt --bucket B' or 'encrypt --all' [--wait]"
}

func (c *encryptCmd) Run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("coffer encrypt", flag.ContinueOnError)
	routeHelp(fs, c.env)
	data := dataFlag(fs, c.env)
	bucket := fs.String("bucket", "", "the bucket whose plaintext objects to encrypt")
	all := fs.Bool("all", false, "every bucket")
	wait := fs.Bool("wait", false, "wait until the job is done, printing its progress")
	if err := data.parse(fs, args); err != nil {
		return err
	}
	if (*bucket == "") == !*all || fs.NArg() > 0 {
		return usageError{errorf("name a bucket (--bucket B) or every bucket (--all)")}
	}
	m, err := data.openMeta(ctx, existingData)
	if err != nil {
		return err
	}
	defer m.Close()
	if *bucket != "" {
		if _, err := m.Meta.Buckets.GetBucket(ctx, *bucket); err != nil {
			return err
		}
	}
	j, err := m.Meta.EncryptionJobs.StartJob(ctx, meta.EncryptionJob{Name: meta.EncryptJobName(*bucket), Kind: meta.JobEncrypt, Bucket: *bucket})
	if err != nil {
		return err
	}
	printJob(c.env.Stdout, j)
	if !*wait {
		fmt.Fprintln(c.env.Stdout, "The running nodes (coffer serve with a key provider) do the work; follow it with 'coffer kms status'.")
		return nil
	}
	for j.State != meta.JobDone {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
		if j, err = m.Meta.EncryptionJobs.GetJob(ctx, j.Name); err != nil {
			return err
		}
		printJob(c.env.Stdout, j)
	}
	return nil
}
