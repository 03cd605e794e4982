package cli

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
)

func run(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = Run(context.Background(), args, Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }})
	return code, out.String(), errb.String()
}

// TestHelpGoesToStdout: help that was asked for is output, as in every
// Unix tool: on stdout, exit 0, nothing on stderr (`coffer serve -h |
// less` showed nothing: the help went to stderr). It does nothing else:
// the working folder stays empty (no coffer-data).
func TestHelpGoesToStdout(t *testing.T) {
	t.Chdir(t.TempDir())
	cases := [][]string{{"-h"}, {"--help"}, {"help"}, {"help", "serve"}}
	for name := range commands(Env{}) {
		cases = append(cases, []string{name, "-h"}, []string{name, "--help"}, []string{name, "-help"})
	}
	for _, sub := range []string{
		"user create", "user quota", "user admin", "user disable", "user enable", "user password", "user delete",
		"key create", "key list", "key delete", "invite create", "invite list", "invite revoke",
		"kms rotate", "kms rewrap", "kms status",
	} {
		cases = append(cases, append(strings.Fields(sub), "-h"))
	}
	// Flags before the help: they are read, nothing runs.
	cases = append(cases, []string{"serve", "--data", "elsewhere", "-h"}, []string{"bench", "upload-proxy", "--vus", "3", "--help"})
	for _, args := range cases {
		code, stdout, stderr := run(args...)
		if code != 0 || stderr != "" || !strings.HasPrefix(strings.ToLower(stdout), "usage") {
			t.Errorf("coffer %s: exit %d, stdout %.60q, stderr %q; want 0 and the help on stdout only",
				strings.Join(args, " "), code, stdout, stderr)
		}
	}
	if left, _ := os.ReadDir("."); len(left) > 0 {
		t.Errorf("asking for help left %v in the working folder", left)
	}
	// Each command's help is its own: its flags, or its subcommands.
	for args, want := range map[string]string{
		"serve -h":       "--signup-rate",
		"bench -h":       "--admin-token",
		"user -h":        "user create --email E",
		"user create -h": "-password",
		"help serve":     "--signup-rate",
		"-h":             "Run 'coffer <command> -h'",
	} {
		if _, stdout, _ := run(strings.Fields(args)...); !strings.Contains(stdout, want) {
			t.Errorf("coffer %s lacks %q:\n%s", args, want, stdout)
		}
	}
}

// TestErrorsGoToStderr: a wrong command line is an error: the message
// (and the usage that explains it) on stderr, nothing on stdout, exit 2.
func TestErrorsGoToStderr(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, args := range [][]string{
		{},
		{"nope"},
		{"serve", "--no-such-flag"},
		{"serve", "--signup-rate", "many"},
		{"bench"},
		{"bench", "upload-proxy", "--vus", "x"},
		{"user"},
		{"user", "create", "--bogus"},
		{"key", "list", "--email"},
		{"version", "extra"},
	} {
		code, stdout, stderr := run(args...)
		if code != 2 || stdout != "" || stderr == "" {
			t.Errorf("coffer %s: exit %d, stdout %q, stderr %.80q; want 2 and the error on stderr only",
				strings.Join(args, " "), code, stdout, stderr)
		}
	}
}
