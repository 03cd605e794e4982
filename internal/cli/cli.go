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
	"runtime"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/coffer-storage/coffer/internal/config"
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
		"kms":     &kmsCmd{env: env},
		"encrypt": &encryptCmd{env: env},
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
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-version" || args[0] == "-v") {
		args = append([]string{"version"}, args[1:]...)
	}
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

// newFlagSet returns a flag set for a command that writes to env.Stderr
// and lists its flags as --name, as the docs spell them.
func newFlagSet(name string, env Env) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.Usage = func() {
		fmt.Fprintf(env.Stderr, "usage: %s [flags]\n", name)
		n := 0
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n > 0 {
			fmt.Fprintln(env.Stderr, "\nflags:")
			config.PrintDefaults(env.Stderr, fs, nil)
		}
	}
	return fs
}

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

// logFormat resolves the "auto" log format: text when w is a terminal
// (a person reads it), JSON otherwise (a log pipeline does).
func logFormat(format string, w io.Writer) string {
	if format != "auto" {
		return format
	}
	if isTerminal(w) {
		return "text"
	}
	return "json"
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// newLogger returns a logger writing to w at level in format (text or
// json, already resolved).
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

func (*versionCmd) Synopsis() string {
	return "print the version, VCS revision and time, and Go version (also: coffer --version)"
}

func (c *versionCmd) Run(_ context.Context, args []string) error {
	fs := newFlagSet("coffer version", c.env)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{errorf("unexpected arguments: %v", fs.Args())}
	}
	bi, _ := debug.ReadBuildInfo()
	io.WriteString(c.env.Stdout, versionText(bi))
	return nil
}

// versionText describes a build: the module version, the VCS revision,
// its commit time and whether the tree had local changes (stamped by
// `go build` in a checkout), and the Go version. bi may be nil.
func versionText(bi *debug.BuildInfo) string {
	if bi == nil {
		return "coffer (unknown version: no build information)\n"
	}
	vcs := map[string]string{}
	for _, s := range bi.Settings {
		vcs[s.Key] = s.Value
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "coffer %s\n", v)
	if rev := vcs["vcs.revision"]; rev != "" {
		fmt.Fprintf(&b, "  revision  %s\n", rev)
		if t := vcs["vcs.time"]; t != "" {
			fmt.Fprintf(&b, "  committed %s\n", t)
		}
		modified := vcs["vcs.modified"]
		if modified == "" {
			modified = "unknown"
		}
		fmt.Fprintf(&b, "  modified  %s\n", modified)
	} else {
		fmt.Fprintf(&b, "  revision  unknown (built without VCS information: go run, -buildvcs=false, or outside a checkout)\n")
	}
	goos, goarch := vcs["GOOS"], vcs["GOARCH"]
	if goos == "" || goarch == "" {
		goos, goarch = runtime.GOOS, runtime.GOARCH
	}
	fmt.Fprintf(&b, "  go        %s %s/%s\n", bi.GoVersion, goos, goarch)
	return b.String()
}
