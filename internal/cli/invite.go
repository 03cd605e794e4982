package cli

import (
	"context"
	"flag"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/coffer-storage/coffer/internal/auth"
	"github.com/coffer-storage/coffer/internal/config"
)

// inviteCmd manages the invites of the signup policy "invite", on the
// stores directly (like the other admin commands).
type inviteCmd struct{ env Env }

func (*inviteCmd) Synopsis() string {
	return "invite codes for --signup invite: 'invite create [--email E] [--expires 7d] [--uses N]', 'invite list', 'invite revoke --id ID'"
}

func (c *inviteCmd) Run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usageError{errorf("need a subcommand: create, list or revoke")}
	}
	fs := flag.NewFlagSet("coffer invite "+args[0], flag.ContinueOnError)
	routeHelp(fs, c.env)
	data := dataFlag(fs, c.env)
	email := fs.String("email", "", "only this email may sign up with the invite (create; default any)")
	uses := fs.Int("uses", 1, "how many signups the invite allows (create)")
	expires := auth.DefaultInviteTTL
	fs.Func("expires", "lifetime of the invite, in days (7d) or a duration (12h) (create; default 7d)", func(s string) error {
		d, err := config.ParseDuration(s)
		if err == nil && d <= 0 {
			err = fmt.Errorf("must be more than 0")
		}
		expires = d
		return err
	})
	id := fs.String("id", "", "invite ID, from 'coffer invite list' (revoke)")
	if err := data.parse(fs, args[1:]); err != nil {
		return err
	}
	switch args[0] {
	case "create", "list":
	case "revoke":
		if *id == "" {
			return usageError{errorf("--id is required")}
		}
	default:
		return usageError{errorf("unknown subcommand %q", args[0])}
	}
	if *uses < 1 {
		return usageError{errorf("--uses must be at least 1")}
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
	// Invite codes are random and stored hashed: no server key.
	as := auth.NewService(auth.StoresOf(m.Meta), nil, auth.ConfigFrom(data.cfg))
	switch args[0] {
	case "create":
		inv, code, err := as.Signups.CreateInvite(ctx, auth.InviteRequest{Email: *email, TTL: expires, Uses: *uses})
		if err != nil {
			return err
		}
		who := inv.Email
		if who == "" {
			who = "anyone"
		}
		fmt.Fprintf(c.env.Stdout, "invite:  %s\ncode:    %s\nfor:     %s\nuses:    %d\nexpires: %s\n(the code is shown only now; sign up with it as \"invite_code\")\n",
			inv.ID, code, who, inv.Uses, inv.ExpiresAt.Format(time.RFC3339))
	case "list":
		invs, err := as.Signups.ListInvites(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(c.env.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tSTATE\tUSES LEFT\tEMAIL\tEXPIRES\tCREATED")
		now := time.Now()
		for _, inv := range invs {
			who := inv.Email
			if who == "" {
				who = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%s\t%s\t%s\n", inv.ID, inv.State(now), inv.UsesLeft, inv.Uses, who,
				inv.ExpiresAt.Format(time.RFC3339), inv.CreatedAt.Format(time.RFC3339))
		}
		return tw.Flush()
	case "revoke":
		if err := as.Signups.RevokeInvite(ctx, *id); err != nil {
			return err
		}
		fmt.Fprintf(c.env.Stdout, "revoked %s\n", *id)
	}
	return nil
}
