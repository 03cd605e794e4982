// Package cli implements the coffer command: one struct per subcommand,
// each with its own flag set and a Run(ctx, args) method.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"sort"
)

// Env is what a command may touch of the outside world.
type Env struct {
	Stdout, Stderr io.Writer
	Getenv         func(string) string
}

type command interface {
	Run(ctx context.Context, args []string) error
	Synopsis() string
}

func commands(env Env) map[string]command {
	return map[string]command{
		"serve":   &serveCmd{env: env},
		"user":    &userCmd{env: env},
		"gc":      &gcCmd{env: env},
		"key":     &keyCmd{env: env},
		"invite":  &inviteCmd{env: env},
		"version": &versionCmd{env: env},
		"bench":   &benchCmd{env: env},
	}
}

// Run runs the coffer command line and returns the exit status.
func Run(ctx context.Context, args []string, env Env) int {
	if env.Getenv == nil {
		env.Getenv = os.Getenv
	}
	cmds := commands(env)
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(env.Stderr, cmds)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(env.Stderr, "coffer: unknown command %q\n\n", args[0])
		usage(env.Stderr, cmds)
		return 2
	}
	if err := c.Run(ctx, args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(env.Stderr, "coffer %s: %v\n", args[0], err)
			return 2
		}
		fmt.Fprintf(env.Stderr, "coffer %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

type usageError struct{ error }

func usage(w io.Writer, cmds map[string]command) {
	fmt.Fprintln(w, "usage: coffer <command> [flags]\n\ncommands:")
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, cmds[n].Synopsis())
	}
	fmt.Fprintln(w, "\nRun 'coffer <command> -h' for a command's flags.")
}

func newLogger(w io.Writer, level, format string) *slog.Logger {
	var lv slog.Level
	_ = lv.UnmarshalText([]byte(level))
	opts := &slog.HandlerOptions{Level: lv}
	if format == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

type versionCmd struct{ env Env }

func (*versionCmd) Synopsis() string { return "print build information" }

func (c *versionCmd) Run(_ context.Context, _ []string) error {
	v := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok {
		v = bi.Main.Version
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				v += " " + s.Value
			}
		}
		fmt.Fprintf(c.env.Stdout, "coffer %s %s\n", v, bi.GoVersion)
		return nil
	}
	fmt.Fprintf(c.env.Stdout, "coffer %s\n", v)
	return nil
}
