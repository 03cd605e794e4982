// Package console_test drives Coffer's web console in a real Chromium
// (Debian's chromium, through Playwright from PyPI) against the real
// binary: console_flow.py holds the flows, this test starts the server and
// an administrator for it.
//
// It needs COFFER_CHROMIUM (the browser), COFFER_PLAYWRIGHT_PYTHON (a
// Python with playwright installed) and axe-core under COFFER_NODE_MODULES
// (the accessibility check); scripts/test.sh installs them. Without them it
// skips, or fails with COFFER_REQUIRE_CLIENTS=1.
// COFFER_CONSOLE_SHOTS names a folder for the screenshots.
package console_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/test/testenv"
)

func TestConsoleInChromium(t *testing.T) {
	chromium, python := os.Getenv("COFFER_CHROMIUM"), os.Getenv("COFFER_PLAYWRIGHT_PYTHON")
	axe := filepath.Join(os.Getenv("COFFER_NODE_MODULES"), "axe-core", "axe.min.js")
	if _, err := os.Stat(axe); chromium == "" || python == "" || os.Getenv("COFFER_NODE_MODULES") == "" || err != nil {
		if os.Getenv("COFFER_REQUIRE_CLIENTS") == "1" {
			t.Fatal("COFFER_CHROMIUM, COFFER_PLAYWRIGHT_PYTHON and axe-core in COFFER_NODE_MODULES are required (scripts/test.sh sets them)")
		}
		t.Skip("set COFFER_CHROMIUM, COFFER_PLAYWRIGHT_PYTHON and COFFER_NODE_MODULES (with axe-core) to run the browser test")
	}
	s := testenv.Start(t, "--audit-log", filepath.Join(t.TempDir(), "audit.log"))
	const email, password = "console-admin@example.com", "console admin password"
	if out, err := s.Command("user", "create", "--data", s.Data, "--email", email, "--password", password, "--admin").CombinedOutput(); err != nil {
		t.Fatalf("user create: %v\n%s", err, out)
	}
	cmd := exec.Command(python, "console_flow.py")
	cmd.Env = append(os.Environ(),
		"CONSOLE_URL="+s.URL,
		"CONSOLE_ADMIN="+email+":"+password,
		"CONSOLE_CHROMIUM="+chromium,
		"CONSOLE_AXE="+axe,
		"CONSOLE_WORK="+t.TempDir(),
	)
	if shots := os.Getenv("COFFER_CONSOLE_SHOTS"); shots != "" {
		abs, err := filepath.Abs(shots)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(abs, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd.Env = append(cmd.Env, "CONSOLE_SHOTS="+abs)
	}
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("console_flow.py (%s):\n%s", time.Since(start).Round(time.Second), out)
	if err != nil {
		t.Fatalf("browser flows failed: %v\nserver log:\n%s", err, s.Stderr())
	}
}
