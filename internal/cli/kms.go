package cli

import (
	"context"
	"flag"
	"fmt"

	"github.com/coffer-storage/coffer/internal/config"
	"github.com/coffer-storage/coffer/internal/kms"
)

// kmsCmd manages the key provider of encryption at rest
// (docs/encryption.md).
type kmsCmd struct{ env Env }

func (*kmsCmd) Synopsis() string {
	return "encryption keys: 'kms rotate [--kms URL]' makes a new version of the default key-encryption key current for new objects"
}

func (c *kmsCmd) Run(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] != "rotate" {
		return usageError{errorf("need a subcommand: rotate")}
	}
	fs := flag.NewFlagSet("coffer kms rotate", flag.ContinueOnError)
	fs.SetOutput(c.env.Stderr)
	data := dataFlag(fs, c.env)
	url := c.env.Getenv(config.EnvName("kms"))
	fs.StringVar(&url, "kms", url, "key provider URL, as for coffer serve (default: the keyring in the data folder)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	restrictUmask() // a keyring it writes is 0600
	keys, err := kms.Open(ctx, url, kms.Options{DataDir: data.data})
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
		"New objects use it once each node's current intermediate key expires (within seconds).\n"+
		"Existing data keys stay wrapped under %s, which stays in the keyring: keep it (re-wrapping them is not implemented yet).\n",
		ref, before, before)
	return nil
}
