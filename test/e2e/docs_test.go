package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/coffer-storage/coffer/test/testenv"
)

// TestArchitectureNamesEveryPackage keeps docs/architecture.md true to the
// tree: its package map names every package `go list ./...` finds and no
// other, and the page points nowhere outside the repository.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	if testenv.ScaleOut() {
		t.Skip("the same in both shapes")
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	mod := exec.Command("go", "list", "-m")
	mod.Dir = root
	modPath, err := mod.Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	var pkgs []string
	for line := range strings.Lines(string(out)) {
		pkgs = append(pkgs, strings.TrimPrefix(strings.TrimSpace(line), strings.TrimSpace(string(modPath))+"/"))
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	named := packageMap(t, string(doc))
	for _, p := range pkgs {
		if !slices.Contains(named, p) {
			t.Errorf("docs/architecture.md does not name package %s", p)
		}
	}
	for _, p := range named {
		if !slices.Contains(pkgs, p) {
			t.Errorf("docs/architecture.md names %s, which is not a package", p)
		}
	}
	for _, re := range []string{`\.\./`, `\]\(/`, "`/[\\w.-]+/", `(?m)(^|\s)/(work|home|root|tmp)/`} {
		if m := regexp.MustCompile(re).FindString(string(doc)); m != "" {
			t.Errorf("docs/architecture.md points outside the repository (%q)", m)
		}
	}
}

// packageMap reads the package map (the first code block under
// "## Packages"): a line starting in column one names a package path;
// an indented line names sub-packages of the last one ("memblob/
// diskblob/").
func packageMap(t *testing.T, doc string) []string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, "\n## Packages")
	if !ok {
		t.Fatal(`docs/architecture.md has no "## Packages" section`)
	}
	_, rest, _ = strings.Cut(rest, "```\n")
	block, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatal("docs/architecture.md: no package map code block")
	}
	var named []string
	parent := ""
	for line := range strings.Lines(block) {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if line[0] != ' ' {
			parent = strings.TrimSuffix(fields[0], "/")
			named = append(named, parent)
			continue
		}
		for _, f := range fields {
			if !strings.HasSuffix(f, "/") {
				break
			}
			named = append(named, parent+"/"+strings.TrimSuffix(f, "/"))
		}
	}
	return named
}
