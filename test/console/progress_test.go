package console_test

import (
	"os"
	"os/exec"
	"testing"
)

// TestProgressThrottle runs the console's unit test of its upload
// progress throttle (web/console/src/progress.test.mjs) with node: the
// dashboard and Golden Retriever see a file's progress at most every
// PROGRESS_EVERY ms, and always its last.
func TestProgressThrottle(t *testing.T) { nodeTest(t, "progress.test.mjs") }

// TestWholeFileReader runs the console's unit test of its tus file reader
// (web/console/src/filesource.test.mjs): a PATCH of a whole file sends
// the File itself, which Chromium's network service reads directly,
// instead of a slice, which its browser process streams (issue 23).
func TestWholeFileReader(t *testing.T) { nodeTest(t, "filesource.test.mjs") }

// nodeTest runs web/console/src/name with node --test.
func nodeTest(t *testing.T, name string) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("COFFER_REQUIRE_CLIENTS") == "1" {
			t.Fatal("node is required (scripts/test.sh installs it)")
		}
		t.Skip("node not found")
	}
	out, err := exec.Command(node, "--test", "../../web/console/src/"+name).CombinedOutput()
	if err != nil {
		t.Fatalf("node --test: %v\n%s", err, out)
	}
}
