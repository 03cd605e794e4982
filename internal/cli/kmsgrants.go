package cli

import (
	"context"
	"flag"
	"fmt"

	"github.com/coffer-storage/coffer/internal/auth"
	"github.com/coffer-storage/coffer/internal/meta"
)

// grants keeps the SSE-KMS key allow list (docs/encryption.md): 'allow'
// and 'disallow' --key K --email E, and 'grants' to list it. The
// provider's default key is everyone's and needs no grant.
func (c *kmsCmd) grants(ctx context.Context, sub string, args []string) error {
	fs := flag.NewFlagSet("coffer kms "+sub, flag.ContinueOnError)
	routeHelp(fs, c.env)
	data := dataFlag(fs, c.env)
	key := fs.String("key", "", "the SSE-KMS key name, as clients name it (allow, disallow)")
	email := fs.String("email", "", "the account's email (allow, disallow)")
	if err := data.parse(fs, args); err != nil {
		return err
	}
	if sub != "grants" && (*key == "" || *email == "") {
		return usageError{errorf("--key and --email are required")}
	}
	m, err := data.openMeta(ctx, existingData)
	if err != nil {
		return err
	}
	defer m.Close()
	if sub == "grants" {
		gs, err := m.Meta.KeyGrants.ListKMSKeyGrants(ctx)
		if err != nil {
			return err
		}
		if len(gs) == 0 {
			fmt.Fprintln(c.env.Stdout, "no grants: only the default key can be named")
		}
		for _, g := range gs {
			who := g.UserID
			if u, err := m.Meta.Accounts.GetUser(ctx, g.UserID); err == nil {
				who = u.Email
			}
			fmt.Fprintf(c.env.Stdout, "%s\t%s\tgranted %s\n", g.Key, who, g.CreatedAt.Format("2006-01-02 15:04:05"))
		}
		return nil
	}
	u, err := m.Meta.Accounts.GetUserByEmail(ctx, auth.NormalizeEmail(*email))
	if err != nil {
		return err
	}
	if sub == "allow" {
		if err := m.Meta.KeyGrants.AllowKMSKey(ctx, meta.KMSKeyGrant{Key: *key, UserID: u.ID}); err != nil {
			return err
		}
		fmt.Fprintf(c.env.Stdout, "%s may now name KMS key %q\n", u.Email, *key)
		return nil
	}
	if err := m.Meta.KeyGrants.DisallowKMSKey(ctx, *key, u.ID); err != nil {
		return err
	}
	fmt.Fprintf(c.env.Stdout, "%s may no longer name KMS key %q\n", u.Email, *key)
	return nil
}
