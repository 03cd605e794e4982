package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/coffer-storage/coffer/internal/auth"
	"github.com/coffer-storage/coffer/internal/blob/diskblob"
	"github.com/coffer-storage/coffer/internal/config"
	"github.com/coffer-storage/coffer/internal/meta/sqlite"
	"github.com/coffer-storage/coffer/internal/object"
)

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// openMeta opens the data folder's metadata store, creating the folder.
func openMeta(ctx context.Context, data string) (*sqlite.Store, error) {
	if err := os.MkdirAll(data, 0o700); err != nil {
		return nil, err
	}
	return sqlite.Open(ctx, filepath.Join(data, "meta.db"), sqlite.Options{})
}

// dataFlag adds --data (and COFFER_DATA) to an admin command.
func dataFlag(fs *flag.FlagSet, env Env) *string {
	d := config.Defaults().Data
	if v := env.Getenv("COFFER_DATA"); v != "" {
		d = v
	}
	return fs.String("data", d, "data folder")
}

type userCmd struct{ env Env }

func (*userCmd) Synopsis() string {
	return "manage accounts: 'user create --email E --password P', 'user quota --email E --bytes N'"
}

func (c *userCmd) Run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usageError{errorf("need a subcommand: create or quota")}
	}
	fs := flag.NewFlagSet("coffer user "+args[0], flag.ContinueOnError)
	fs.SetOutput(c.env.Stderr)
	data := dataFlag(fs, c.env)
	email := fs.String("email", "", "account email")
	password := fs.String("password", "", "password (create)")
	var quota int64
	fs.Func("bytes", "quota in bytes, e.g. 10GiB; 0 = unlimited (quota)", func(s string) error {
		n, err := config.ParseBytes(s)
		quota = n
		return err
	})
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *email == "" {
		return usageError{errorf("--email is required")}
	}
	m, err := openMeta(ctx, *data)
	if err != nil {
		return err
	}
	defer m.Close()
	switch args[0] {
	case "create":
		key, err := serverKey(*data)
		if err != nil {
			return err
		}
		as := auth.NewService(m, key, auth.Config{})
		u, b, err := as.Signup(ctx, *email, *password)
		if err != nil {
			return err
		}
		fmt.Fprintf(c.env.Stdout, "created user %s (%s) with bucket %s\n", u.Email, u.ID, b.Name)
	case "quota":
		u, err := m.GetUserByEmail(ctx, auth.NormalizeEmail(*email))
		if err != nil {
			return err
		}
		if err := m.SetQuota(ctx, u.ID, quota); err != nil {
			return err
		}
		fmt.Fprintf(c.env.Stdout, "quota of %s set to %d bytes (usage %d)\n", u.Email, quota, u.UsageBytes)
	default:
		return usageError{errorf("unknown subcommand %q", args[0])}
	}
	return nil
}

type gcCmd struct{ env Env }

func (*gcCmd) Synopsis() string {
	return "reclaim replaced/deleted blobs and orphans now (server must be stopped)"
}

func (c *gcCmd) Run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("coffer gc", flag.ContinueOnError)
	fs.SetOutput(c.env.Stderr)
	data := dataFlag(fs, c.env)
	if err := fs.Parse(args); err != nil {
		return err
	}
	m, err := openMeta(ctx, *data)
	if err != nil {
		return err
	}
	defer m.Close()
	b, err := diskblob.Open(filepath.Join(*data, "blobs"))
	if err != nil {
		return err
	}
	defer b.Close()
	svc := object.New(m, b, object.Config{GarbageGrace: 1, OrphanGrace: 1}, newLogger(c.env.Stderr, "warn", "text"))
	g, err := svc.CollectGarbage(ctx)
	if err != nil {
		return err
	}
	o, err := svc.CollectOrphans(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.env.Stdout, "reclaimed %d replaced/deleted blobs and %d orphans\n", g, o)
	return nil
}

type keyCmd struct{ env Env }

func (*keyCmd) Synopsis() string {
	return "S3 access keys: 'key create --email E [--name N]', 'key list --email E', 'key delete --email E --id ID'"
}

func (c *keyCmd) Run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usageError{errorf("need a subcommand: create, list or delete")}
	}
	fs := flag.NewFlagSet("coffer key "+args[0], flag.ContinueOnError)
	fs.SetOutput(c.env.Stderr)
	data := dataFlag(fs, c.env)
	email := fs.String("email", "", "account email")
	name := fs.String("name", "", "key name (create)")
	id := fs.String("id", "", "access key ID (delete)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *email == "" {
		return usageError{errorf("--email is required")}
	}
	m, err := openMeta(ctx, *data)
	if err != nil {
		return err
	}
	defer m.Close()
	key, err := serverKey(*data)
	if err != nil {
		return err
	}
	as := auth.NewService(m, key, auth.Config{})
	u, err := m.GetUserByEmail(ctx, auth.NormalizeEmail(*email))
	if err != nil {
		return err
	}
	switch args[0] {
	case "create":
		k, err := as.CreateAccessKey(ctx, u.ID, *name)
		if err != nil {
			return err
		}
		fmt.Fprintf(c.env.Stdout, "access_key_id:     %s\nsecret_access_key: %s\n(the secret is shown only now)\n", k.ID, k.Secret)
	case "list":
		keys, err := as.ListAccessKeys(ctx, u.ID)
		if err != nil {
			return err
		}
		for _, k := range keys {
			fmt.Fprintf(c.env.Stdout, "%s\t%s\tcreated %s\n", k.ID, k.Name, k.CreatedAt.Format("2006-01-02 15:04:05"))
		}
	case "delete":
		if err := as.DeleteAccessKey(ctx, u.ID, *id); err != nil {
			return err
		}
		fmt.Fprintf(c.env.Stdout, "deleted %s\n", *id)
	default:
		return usageError{errorf("unknown subcommand %q", args[0])}
	}
	return nil
}
