package cli

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/coffer-storage/coffer/internal/auth"
	"github.com/coffer-storage/coffer/internal/blob"
	"github.com/coffer-storage/coffer/internal/blob/diskblob"
	"github.com/coffer-storage/coffer/internal/blob/s3blob"
	"github.com/coffer-storage/coffer/internal/cache"
	"github.com/coffer-storage/coffer/internal/config"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/postgres"
	"github.com/coffer-storage/coffer/internal/meta/sqlite"
	"github.com/coffer-storage/coffer/internal/object"
	"github.com/coffer-storage/coffer/internal/server"
)

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// stores names the stores an admin command works on: the data folder of
// the embedded shape, or the scale-out backends (same flags and COFFER_*
// variables as coffer serve).
type stores struct {
	data, meta, blob, keyFile string
	log                       *slog.Logger
}

// openMeta opens the metadata store, creating the data folder (or
// tightening it, as coffer serve does).
func (st *stores) openMeta(ctx context.Context) (meta.Store, error) {
	restrictUmask()
	if err := server.PrepareDataDir(st.data, st.log); err != nil {
		return nil, err
	}
	if st.meta != "" {
		pg, err := postgres.Open(ctx, st.meta, postgres.Options{MaxConns: 4})
		if err != nil {
			return nil, err
		}
		// Through the cache's store, so that the changes of bucket and
		// object records made here are announced to the nodes' caches.
		return cache.NewStore(pg, cache.NewBus(), cache.StoreOptions{}), nil
	}
	return sqlite.Open(ctx, filepath.Join(st.data, "meta.db"), sqlite.Options{})
}

// openBlobs opens the blob store.
func (st *stores) openBlobs(ctx context.Context) (blob.Store, error) {
	if st.blob != "" {
		opts, err := s3blob.ParseURL(st.blob)
		if err != nil {
			return nil, err
		}
		return s3blob.Open(ctx, opts)
	}
	return diskblob.Open(filepath.Join(st.data, "blobs"))
}

// serverKey loads (or creates) the server key and checks it against the
// metadata store m, as coffer serve does: a command holding another key
// than the nodes' is refused before it writes anything made with it.
func (st *stores) serverKey(ctx context.Context, m meta.Store) ([]byte, error) {
	return server.OpenKey(ctx, m, st.data, st.keyFile)
}

// openMetaKey opens the metadata store and the server key checked against
// it (openMeta, then serverKey); the caller closes the store.
func (st *stores) openMetaKey(ctx context.Context) (meta.Store, []byte, error) {
	m, err := st.openMeta(ctx)
	if err != nil {
		return nil, nil, err
	}
	key, err := st.serverKey(ctx, m)
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	return m, key, nil
}

// dataFlag adds --data, --meta, --blob and --server-key-file (and their
// COFFER_* variables) to an admin command.
func dataFlag(fs *flag.FlagSet, env Env) *stores {
	st := &stores{data: config.Defaults().Data, log: newLogger(env.Stderr, "warn", "text")}
	for _, f := range []struct {
		name, usage string
		v           *string
	}{
		{"data", "data folder", &st.data},
		{"meta", "metadata database URL (postgres://…); default SQLite in the data folder", &st.meta},
		{"blob", "blob store URL (s3://BUCKET?endpoint=…); default the data folder", &st.blob},
		{"server-key-file", "server key file; default DATA/server.key", &st.keyFile},
	} {
		if v := env.Getenv(config.EnvName(f.name)); v != "" {
			*f.v = v
		}
		fs.StringVar(f.v, f.name, *f.v, f.usage)
	}
	return st
}

type userCmd struct{ env Env }

func (*userCmd) Synopsis() string {
	return "manage accounts: 'user create --email E --password P [--admin]', 'user quota --email E --bytes N', " +
		"'user admin --email E --on|--off', 'user disable|enable --email E', 'user password --email E --password P', " +
		"'user delete --email E [--purge]'"
}

func (c *userCmd) Run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usageError{errorf("need a subcommand: create, quota, admin, disable, enable, password or delete")}
	}
	fs := flag.NewFlagSet("coffer user "+args[0], flag.ContinueOnError)
	routeHelp(fs, c.env)
	data := dataFlag(fs, c.env)
	email := fs.String("email", "", "account email")
	password := fs.String("password", "", "password (create, password)")
	var quota int64
	fs.Func("bytes", "quota in bytes, e.g. 10GiB; 0 = unlimited (quota)", func(s string) error {
		n, err := config.ParseBytes(s)
		quota = n
		return err
	})
	admin := fs.Bool("admin", false, "make the account an administrator (create)")
	on := fs.Bool("on", false, "grant the admin role (admin)")
	off := fs.Bool("off", false, "revoke the admin role (admin)")
	purge := fs.Bool("purge", false, "also delete the account's buckets and objects (delete)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	switch args[0] {
	case "create", "quota", "admin", "disable", "enable", "password", "delete":
	default:
		return usageError{errorf("unknown subcommand %q", args[0])}
	}
	if args[0] == "admin" && *on == *off {
		return usageError{errorf("give exactly one of --on and --off")}
	}
	if *email == "" {
		return usageError{errorf("--email is required")}
	}
	if args[0] == "password" && *password == "" {
		return usageError{errorf("--password is required")}
	}
	m, key, err := data.openMetaKey(ctx)
	if err != nil {
		return err
	}
	defer m.Close()
	// Changes go through the account service: on PostgreSQL the store
	// announces them to the running nodes in the same transaction; against
	// SQLite the server sees them within its cache TTL (1 s).
	as := auth.NewService(m, key, auth.Config{})
	if args[0] == "create" {
		u, b, err := as.CreateUser(ctx, auth.NewUser{Email: *email, Password: *password, Admin: *admin})
		if err != nil {
			return err
		}
		role := "user"
		if u.Admin {
			role = "administrator"
		}
		fmt.Fprintf(c.env.Stdout, "created %s %s (%s) with bucket %s\n", role, u.Email, u.ID, b.Name)
		return nil
	}
	u, err := as.UserByEmail(ctx, *email)
	if err != nil {
		return err
	}
	out := c.env.Stdout
	switch args[0] {
	case "admin":
		if _, err := as.SetAdmin(ctx, u.ID, *on); err != nil {
			return err
		}
		if *on {
			fmt.Fprintf(out, "%s is an administrator\n", u.Email)
		} else {
			fmt.Fprintf(out, "%s is no longer an administrator\n", u.Email)
		}
	case "quota":
		if _, err := as.SetQuota(ctx, u.ID, quota); err != nil {
			return err
		}
		fmt.Fprintf(out, "quota of %s set to %d bytes (usage %d)\n", u.Email, quota, u.UsageBytes)
	case "disable":
		if _, err := as.Disable(ctx, u.ID); err != nil {
			return err
		}
		fmt.Fprintf(out, "%s is disabled; its sessions, S3 keys and presigned URLs are refused\n", u.Email)
	case "enable":
		if _, err := as.Enable(ctx, u.ID); err != nil {
			return err
		}
		fmt.Fprintf(out, "%s is enabled; it may log in again (earlier sessions stay revoked)\n", u.Email)
	case "password":
		if _, err := as.SetPassword(ctx, u.ID, *password); err != nil {
			return err
		}
		fmt.Fprintf(out, "password of %s reset; its sessions are revoked\n", u.Email)
	case "delete":
		res, err := as.DeleteUser(ctx, u.ID, *purge)
		if err != nil {
			return err
		}
		if len(res.BackendUploads) > 0 {
			if err := data.abortBackendUploads(ctx, m, res.BackendUploads); err != nil {
				return err
			}
		}
		fmt.Fprintf(out, "deleted %s: %d buckets, %d objects, %d uploads in progress (blobs are reclaimed by the janitor)\n",
			u.Email, res.Buckets, res.Objects, res.Uploads)
	}
	return nil
}

// abortBackendUploads aborts a deleted account's multipart uploads at the
// blob backend (scale-out shape).
func (st *stores) abortBackendUploads(ctx context.Context, m meta.Store, ups []meta.Upload) error {
	b, err := st.openBlobs(ctx)
	if err != nil {
		return err
	}
	if c, ok := b.(blob.Closer); ok {
		defer c.Close()
	}
	object.New(m, b, object.Config{}, st.log).AbortBackendUploads(ctx, ups)
	return nil
}

type gcCmd struct{ env Env }

func (*gcCmd) Synopsis() string {
	return "reclaim replaced/deleted blobs and orphans now (server must be stopped)"
}

func (c *gcCmd) Run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("coffer gc", flag.ContinueOnError)
	routeHelp(fs, c.env)
	data := dataFlag(fs, c.env)
	if err := fs.Parse(args); err != nil {
		return err
	}
	m, err := data.openMeta(ctx)
	if err != nil {
		return err
	}
	defer m.Close()
	b, err := data.openBlobs(ctx)
	if err != nil {
		return err
	}
	if c, ok := b.(blob.Closer); ok {
		defer c.Close()
	}
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
	routeHelp(fs, c.env)
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
	m, key, err := data.openMetaKey(ctx)
	if err != nil {
		return err
	}
	defer m.Close()
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
