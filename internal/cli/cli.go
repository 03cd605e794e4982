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

	// badFlags, set by Run, notes that a flag set refused the command
	// line (see routeHelp): a usage error, exit status 2.
	badFlags *bool
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
		"fsck":    &fsckCmd{env: env},
		"key":     &keyCmd{env: env},
		"invite":  &inviteCmd{env: env},
		"kms":     &kmsCmd{env: env},
		"encrypt": &encryptCmd{env: env},
		"version": &versionCmd{env: env},
		"bench":   &benchCmd{env: env},
		"restore": &restoreCmd{env: env},
	}
}

// Run runs the coffer command line and returns the exit status.
func Run(ctx context.Context, args []string, env Env) int {
	if env.Getenv == nil {
		env.Getenv = os.Getenv
	}
	env.badFlags = new(bool)
	cmds := commands(env)
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-version" || args[0] == "-v") {
		args = append([]string{"version"}, args[1:]...)
	}
	if len(args) == 2 && args[0] == "help" {
		args = []string{args[1], "-h"} // coffer help CMD = coffer CMD -h
	}
	if len(args) == 0 || isHelpArg(args[0]) || args[0] == "help" {
		// Asked for, help is output (stdout, exit 0); without a command
		// it is the error message (stderr, exit 2).
		if len(args) == 0 {
			usage(env.Stderr, cmds)
			return 2
		}
		usage(env.Stdout, cmds)
		return 0
	}
	c, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(env.Stderr, "coffer: unknown command %q\n\n", args[0])
		usage(env.Stderr, cmds)
		return 2
	}
	err := c.Run(ctx, args[1:])
	if err != nil && len(args) == 2 && isHelpArg(args[1]) && !errors.Is(err, flag.ErrHelp) {
		// A command that takes a subcommand first (coffer user create …)
		// refused -h as one: describe the command and its subcommands.
		fmt.Fprintf(env.Stdout, "usage: coffer %s SUBCOMMAND [flags]\n\n%s\n\nRun 'coffer %s SUBCOMMAND -h' for a subcommand's flags.\n",
			args[0], c.Synopsis(), args[0])
		return 0
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		var ue usageError
		if errors.As(err, &ue) || *env.badFlags {
			fmt.Fprintf(env.Stderr, "coffer %s: %v\n", args[0], err)
			return 2
		}
		fmt.Fprintf(env.Stderr, "coffer %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

// isHelpArg reports whether arg asks for help as Go's flag package reads it.
func isHelpArg(arg string) bool {
	switch arg {
	case "-h", "--h", "-help", "--help":
		return true
	}
	return false
}

type usageError struct{ error }

// newFlagSet returns a flag set for a command that lists its flags as
// --name, as the docs spell them, with its help routed by routeHelp.
func newFlagSet(name string, env Env) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "usage: %s [flags]\n", name)
		n := 0
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n > 0 {
			fmt.Fprintln(w, "\nflags:")
			config.PrintDefaults(w, fs, nil)
		}
	}
	routeHelp(fs, env)
	return fs
}

// routeHelp sends fs's flag errors to env.Stderr and its usage to where it
// belongs: to env.Stdout when it is what the user asked for (-h, --help:
// `coffer serve -h | less`), to env.Stderr with the error when a flag was
// wrong. Call it once fs.Usage is set; the usage must write to fs.Output().
//
// The flag package calls Usage in both cases, but on an error it first
// writes the error message to the output: a usage printed before anything
// else was written is help.
func routeHelp(fs *flag.FlagSet, env Env) {
	out := &flagOutput{w: env.Stderr}
	fs.SetOutput(out)
	usage := fs.Usage
	fs.Usage = func() {
		if out.wrote {
			if env.badFlags != nil {
				*env.badFlags = true
			}
			usage()
			return
		}
		fs.SetOutput(env.Stdout)
		defer fs.SetOutput(out)
		usage()
	}
}

// flagOutput is a flag set's error output; it notes that something was
// written.
type flagOutput struct {
	w     io.Writer
	wrote bool
}

func (o *flagOutput) Write(p []byte) (int, error) {
	o.wrote = true
	return o.w.Write(p)
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
