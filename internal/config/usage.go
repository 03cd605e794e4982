package config

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// PrintDefaults writes the flags of fs as `coffer … -h` shows them: each as
// --name (the spelling of the docs; Go's flag package accepts one dash or
// two), its usage, its default, and its environment variable if env names
// one (env may be nil).
//
// A command whose flags read the environment passes the same function
// that reads it (serve: EnvName, via ApplyEnv), so the help and the
// behaviour cannot disagree.
func PrintDefaults(w io.Writer, fs *flag.FlagSet, env func(name string) string) {
	fs.VisitAll(func(f *flag.Flag) {
		typ, usage := flag.UnquoteUsage(f)
		if t, ok := f.Value.(interface{ Type() string }); ok {
			typ = t.Type()
		}
		head := "  --" + f.Name
		if typ != "" {
			head += " " + typ
		}
		var notes []string
		if !isZeroDefault(f) {
			if typ == "string" {
				notes = append(notes, fmt.Sprintf("default %q", f.DefValue))
			} else {
				notes = append(notes, "default "+f.DefValue)
			}
		}
		if env != nil {
			if name := env(f.Name); name != "" {
				notes = append(notes, "env "+name)
			}
		}
		if len(notes) > 0 {
			usage += " (" + strings.Join(notes, "; ") + ")"
		}
		fmt.Fprintf(w, "%s\n      %s\n", head, strings.ReplaceAll(usage, "\n", "\n      "))
	})
}

// isZeroDefault reports whether f's default is its type's zero value,
// which the help does not mention.
func isZeroDefault(f *flag.Flag) bool {
	switch f.DefValue {
	case "", "0", "0s", "false":
		return true
	}
	return false
}

// usage is the help of the `coffer serve` flag set.
func usage(fs *flag.FlagSet) func() {
	return func() {
		w := fs.Output()
		fmt.Fprintf(w, "usage: %s [flags]\n\n", fs.Name())
		fmt.Fprintln(w, "Every flag can also be set by its environment variable (env COFFER_…); a flag on the command line wins.")
		fmt.Fprintln(w, "\nflags:")
		PrintDefaults(w, fs, EnvName)
	}
}
