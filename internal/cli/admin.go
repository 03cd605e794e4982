package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"time"

	"github.com/coffer-storage/coffer/internal/auth"
	"github.com/coffer-storage/coffer/internal/config"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/object"
	"github.com/coffer-storage/coffer/internal/server"
)

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// stores is what an admin command works on: the stores coffer serve opens
// with the same flags and COFFER_* variables (config.BindStores),
// resolved the same way (config.ResolvePaths): a relative --data or
// COFFER_DATA names the same folder for both.
//
// # What a command makes
//
// An admin command makes nothing it does not need, so that one that fails
// leaves nothing behind:
//   - The scale-out shape (--meta postgres://…) needs no data folder, and
//     no command makes one.
//   - In the embedded shape, only the commands that create something in a
//     new data folder (user create, invite create: newData) make it; the
//     others refuse a data folder that does not exist (a mistyped --data)
//     instead of making an empty one.
//   - Only a command that seals an S3 secret (key create) reads the server
//     key and checks it against the metadata store, as coffer serve does;
//     on the scale-out shape it must be the cluster's key file, never a
//     key made on the spot. The others neither read nor record it.
type stores struct {
	cfg    config.Config
	log    *slog.Logger
	getenv func(string) string
}

// dataUse says whether a command may make a data folder that does not
// exist.
type dataUse int

const (
	existingData dataUse = iota // refuse a missing data folder
	newData                     // make it: the command creates its first contents
)

// dataFlag adds --data, --meta, --blob and --server-key-file (and their
// COFFER_* variables, read by parse) to an admin command.
func dataFlag(fs *flag.FlagSet, env Env) *stores {
	st := &stores{cfg: config.Defaults(), log: newLogger(env.Stderr, "warn", "text"), getenv: env.Getenv}
	// One command at a time needs few connections (--meta-max-conns is
	// coffer serve's).
	st.cfg.MetaMaxConns = 4
	st.cfg.BindStores(fs)
	return st
}

// parse parses args into fs, then reads the variables of the stores'
// flags (and --kms) that args did not set, and checks and resolves the
// configuration as coffer serve does.
func (st *stores) parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := config.ApplyEnv(fs, st.getenv, append(config.StoreFlags, "kms")...); err != nil {
		return usageError{err}
	}
	if err := st.cfg.Validate(); err != nil {
		return usageError{err}
	}
	if err := st.cfg.ResolvePaths(); err != nil {
		return usageError{err}
	}
	restrictUmask() // what it writes is 0600
	return nil
}

// dataDir makes the data folder ready, as coffer serve does (tightening
// its mode); it makes a missing one only for newData.
func (st *stores) dataDir(use dataUse) error {
	if use == existingData {
		if _, err := os.Stat(st.cfg.Data); errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("there is no data folder at %s (give --data or COFFER_DATA; for the scale-out shape --meta and --blob); "+
				"coffer serve and coffer user create make a new one", st.cfg.Data)
		}
	}
	return server.PrepareDataDir(st.cfg.Data, st.log)
}

// openMeta opens the metadata store as coffer serve does
// (server.OpenStores): PostgreSQL, or SQLite in the data folder (see
// dataDir), through the cache of bucket and object records, so that the
// changes of such records made here are announced to the nodes' caches.
// The caller closes it.
func (st *stores) openMeta(ctx context.Context, use dataUse) (*server.Stores, error) {
	return server.OpenStores(ctx, st.cfg, server.StoreOptions{Meta: true, PrepareData: func() error { return st.dataDir(use) }})
}

// openBlobs opens the blob store as coffer serve does, without its read
// cache; the caller closes it.
func (st *stores) openBlobs(ctx context.Context) (*server.Stores, error) {
	return server.OpenStores(ctx, st.cfg, server.StoreOptions{Blobs: true, PrepareData: func() error { return st.dataDir(existingData) }})
}

// keyFile is where the command finds the server key: made if missing
// only in the embedded shape (as coffer serve would make it), never on a
// shared metadata store.
func (st *stores) keyFile() server.KeyFile {
	return server.KeyFile{Data: st.cfg.Data, File: st.cfg.ServerKeyFile, Create: st.cfg.Meta == ""}
}

// openMetaKey opens the metadata store and the server key checked against
// it, as coffer serve does: a command holding another key than the nodes'
// is refused before it writes anything made with it. The key file is
// checked before the store is opened; the caller closes the store.
func (st *stores) openMetaKey(ctx context.Context) (*server.Stores, []byte, error) {
	if err := st.keyFile().Check(); err != nil {
		return nil, nil, err
	}
	m, err := st.openMeta(ctx, existingData)
	if err != nil {
		return nil, nil, err
	}
	key, err := server.OpenKey(ctx, m.Meta.Cluster, st.keyFile())
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	return m, key, nil
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
	if err := data.parse(fs, args[1:]); err != nil {
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
	use := existingData
	if args[0] == "create" {
		use = newData
	}
	m, err := data.openMeta(ctx, use)
	if err != nil {
		return err
	}
	defer m.Close()
	// Changes go through the account service: on PostgreSQL the store
	// announces them to the running nodes in the same transaction; against
	// SQLite the server sees them within its cache TTL (1 s). None of them
	// needs the server key.
	as := auth.NewService(auth.StoresOf(m.Meta), nil, auth.ConfigFrom(data.cfg))
	if args[0] == "create" {
		u, b, err := as.Users.CreateUser(ctx, auth.NewUser{Email: *email, Password: *password, Admin: *admin})
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
	u, err := as.Users.UserByEmail(ctx, *email)
	if err != nil {
		return err
	}
	out := c.env.Stdout
	switch args[0] {
	case "admin":
		if _, err := as.Users.SetAdmin(ctx, u.ID, *on); err != nil {
			return err
		}
		if *on {
			fmt.Fprintf(out, "%s is an administrator\n", u.Email)
		} else {
			fmt.Fprintf(out, "%s is no longer an administrator\n", u.Email)
		}
	case "quota":
		if _, err := as.Users.SetQuota(ctx, u.ID, quota); err != nil {
			return err
		}
		fmt.Fprintf(out, "quota of %s set to %d bytes (usage %d)\n", u.Email, quota, u.UsageBytes)
	case "disable":
		if _, err := as.Users.Disable(ctx, u.ID); err != nil {
			return err
		}
		fmt.Fprintf(out, "%s is disabled; its sessions, S3 keys and presigned URLs are refused\n", u.Email)
	case "enable":
		if _, err := as.Users.Enable(ctx, u.ID); err != nil {
			return err
		}
		fmt.Fprintf(out, "%s is enabled; it may log in again (earlier sessions stay revoked)\n", u.Email)
	case "password":
		if _, err := as.Users.SetPassword(ctx, u.ID, *password); err != nil {
			return err
		}
		fmt.Fprintf(out, "password of %s reset; its sessions are revoked\n", u.Email)
	case "delete":
		res, err := as.Users.DeleteUser(ctx, u.ID, *purge)
		if err != nil {
			return err
		}
		if len(res.BackendUploads) > 0 {
			if err := data.abortBackendUploads(ctx, m.Meta, res.BackendUploads); err != nil {
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
func (st *stores) abortBackendUploads(ctx context.Context, m meta.Stores, ups []meta.Upload) error {
	b, err := st.openBlobs(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	object.New(object.StoresOf(m), b.Blobs, object.ConfigFrom(st.cfg), st.log).AbortBackendUploads(ctx, ups)
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
	if err := data.parse(fs, args); err != nil {
		return err
	}
	st, err := server.OpenStores(ctx, data.cfg, server.StoreOptions{Meta: true, Blobs: true,
		PrepareData: func() error { return data.dataDir(existingData) }})
	if err != nil {
		return err
	}
	defer st.Close()
	cfg := object.ConfigFrom(data.cfg)
	cfg.GarbageGrace, cfg.OrphanGrace = 1, 1 // now
	svc := object.New(object.StoresOf(st.Meta), st.Blobs, cfg, newLogger(c.env.Stderr, "warn", "text"))
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
	return "S3 access keys and app tokens: 'key create --email E [--name N] [--bucket B [--prefix P]] [--read-only|--write-only] [--expires 30d|DATE] [--policy FILE] [--app-token]', 'key list --email E [--app-token]', 'key delete --email E --id ID [--app-token]'"
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
	token := fs.Bool("app-token", false, "an app token for the file API (a bearer token, scoped and expiring alike) instead of an S3 key")
	var sf scopeFlags
	sf.register(fs)
	if err := data.parse(fs, args[1:]); err != nil {
		return err
	}
	switch args[0] {
	case "create", "list", "delete":
	default:
		return usageError{errorf("unknown subcommand %q", args[0])}
	}
	if *email == "" {
		return usageError{errorf("--email is required")}
	}
	var opts auth.KeyOptions
	if args[0] == "create" {
		var err error
		if opts, err = sf.options(*name, time.Now()); err != nil {
			return err
		}
	} else if sf.set() {
		return usageError{errorf("--bucket, --prefix, --read-only, --write-only, --expires and --policy are for create")}
	}
	var m *server.Stores
	var key []byte // only create seals a secret
	var err error
	if args[0] == "create" {
		m, key, err = data.openMetaKey(ctx)
	} else {
		m, err = data.openMeta(ctx, existingData)
	}
	if err != nil {
		return err
	}
	defer m.Close()
	as := auth.NewService(auth.StoresOf(m.Meta), key, auth.ConfigFrom(data.cfg))
	u, err := m.Meta.Accounts.GetUserByEmail(ctx, auth.NormalizeEmail(*email))
	if err != nil {
		return err
	}
	switch args[0] {
	case "create":
		if *token {
			k, err := as.Keys.CreateAppToken(ctx, u.ID, opts)
			if err != nil {
				return err
			}
			fmt.Fprintf(c.env.Stdout, "id:      %s\ntoken:   %s\nscope:   %s\nexpires: %s\n(the token is shown only now)\n",
				k.ID, k.Secret, describeScope(k.Scope), describeExpiry(k.ExpiresAt, time.Now()))
			return nil
		}
		k, err := as.Keys.CreateAccessKey(ctx, u.ID, opts)
		if err != nil {
			return err
		}
		fmt.Fprintf(c.env.Stdout, "access_key_id:     %s\nsecret_access_key: %s\nscope:             %s\nexpires:           %s\n(the secret is shown only now)\n",
			k.ID, k.Secret, describeScope(k.Scope), describeExpiry(k.ExpiresAt, time.Now()))
	case "list":
		list := as.Keys.ListAccessKeys
		if *token {
			list = as.Keys.ListAppTokens
		}
		keys, err := list(ctx, u.ID)
		if err != nil {
			return err
		}
		for _, k := range keys {
			fmt.Fprintf(c.env.Stdout, "%s\t%s\tcreated %s\tscope %s\texpires %s\n", k.ID, k.Name, k.CreatedAt.Format("2006-01-02 15:04:05"),
				describeScope(k.Scope), describeExpiry(k.ExpiresAt, time.Now()))
		}
	case "delete":
		del := as.Keys.DeleteAccessKey
		if *token {
			del = as.Keys.DeleteAppToken
		}
		if err := del(ctx, u.ID, *id); err != nil {
			return err
		}
		fmt.Fprintf(c.env.Stdout, "deleted %s\n", *id)
	}
	return nil
}
