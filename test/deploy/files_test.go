// Package deploy checks what the repository ships to deploy Coffer (the
// container image, compose, the systemd unit, the Helm chart, the release
// script, the Grafana dashboard and the Prometheus alerts) against the
// tree and the real binary, with the tools each format has when they can
// be installed (promtool, helm, systemd-analyze, a Docker engine).
package deploy

import (
	"bufio"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/coffer-storage/coffer/internal/config"
	"github.com/coffer-storage/coffer/test/testenv"
)

// dockerfile is what TestDeployFiles reads of the Dockerfile.
type dockerfile struct {
	copies    [][]string // sources of each COPY without --from
	goImage   string     // the build stage's golang:TAG
	user      string     // the final USER
	volumes   []string   // VOLUME paths
	health    []string   // HEALTHCHECK CMD, exec form
	env       map[string]string
	build     string   // the RUN line holding go build
	buildPkgs []string // packages go build builds
}

func parseDockerfile(t *testing.T, path string) dockerfile {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("the repository has no Dockerfile (deploy/compose.yaml builds one): %v", err)
	}
	defer f.Close()
	var d dockerfile
	var lines []string
	sc := bufio.NewScanner(f)
	cont := ""
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(l, "#") || l == "" && cont == "" {
			continue
		}
		if s, ok := strings.CutSuffix(l, "\\"); ok {
			cont += s + " "
			continue
		}
		lines = append(lines, cont+l)
		cont = ""
	}
	for _, l := range lines {
		f := strings.Fields(l)
		switch strings.ToUpper(f[0]) {
		case "FROM":
			if tag, ok := strings.CutPrefix(f[1], "golang:"); ok {
				d.goImage = tag
			}
		case "COPY":
			args := f[1:]
			from := false
			for len(args) > 0 && strings.HasPrefix(args[0], "--") {
				from = from || strings.HasPrefix(args[0], "--from")
				args = args[1:]
			}
			if !from && len(args) >= 2 {
				d.copies = append(d.copies, args[:len(args)-1])
			}
		case "USER":
			d.user = f[1]
		case "VOLUME":
			var v []string
			if err := json.Unmarshal([]byte(strings.TrimSpace(l[len(f[0]):])), &v); err != nil {
				v = f[1:]
			}
			d.volumes = append(d.volumes, v...)
		case "ENV":
			if d.env == nil {
				d.env = map[string]string{}
			}
			for _, kv := range f[1:] {
				if k, v, ok := strings.Cut(kv, "="); ok {
					d.env[k] = v
				}
			}
		case "HEALTHCHECK":
			if _, cmd, ok := strings.Cut(l, " CMD "); ok {
				if err := json.Unmarshal([]byte(strings.TrimSpace(cmd)), &d.health); err != nil {
					d.health = []string{"(shell form: the image has no shell)", cmd}
				}
			}
		case "RUN":
			if strings.Contains(l, "go build") {
				d.build = l
				for _, w := range f {
					if strings.HasPrefix(w, "./") {
						d.buildPkgs = append(d.buildPkgs, w)
					}
				}
			}
		}
	}
	return d
}

// TestDeployFiles checks the Dockerfile and deploy/compose.yaml against
// the tree, since no Docker engine runs the tests: the Dockerfile copies
// paths that exist and that .dockerignore keeps, and everything the
// binary's packages need lies in them; it builds statically with the Go
// of go.mod and runs as a non-root user. compose.yaml builds that image,
// its coffer command and COFFER_* variables are a valid coffer serve
// configuration, the key secret belongs to the image's user, every node's
// data folder (its blob cache) is a volume, and every name it refers to
// is defined. (The compose file built coffer:latest from a Dockerfile
// that did not exist.)
func TestDeployFiles(t *testing.T) {
	root := repoRoot()
	d := parseDockerfile(t, filepath.Join(root, "Dockerfile"))

	ignore, _ := os.ReadFile(filepath.Join(root, ".dockerignore"))
	var copied []string
	for _, srcs := range d.copies {
		for _, src := range srcs {
			src = filepath.Clean(src)
			if _, err := os.Stat(filepath.Join(root, src)); err != nil {
				t.Errorf("Dockerfile copies %s: %v", src, err)
			}
			for line := range strings.Lines(string(ignore)) {
				pat := strings.TrimSpace(line)
				if ok, _ := filepath.Match(pat, src); ok && pat != "" && !strings.HasPrefix(pat, "#") {
					t.Errorf(".dockerignore drops %s (%q), which the Dockerfile copies", src, pat)
				}
			}
			copied = append(copied, src)
		}
	}
	if !slices.Contains(copied, "go.mod") || !slices.Contains(copied, "go.sum") {
		t.Errorf("the Dockerfile copies %v: not go.mod and go.sum", copied)
	}
	if len(d.buildPkgs) == 0 || !strings.Contains(d.build, "CGO_ENABLED=0") {
		t.Fatalf("no static go build of a package in the Dockerfile: %q", d.build)
	}
	// Every package of the module the binary needs (and the files they
	// embed) lies under a copied folder.
	list := exec.Command("go", append([]string{"list", "-deps", "-f", "{{if .Module}}{{if .Module.Main}}{{.Dir}}{{end}}{{end}}"}, d.buildPkgs...)...)
	list.Dir = root
	out, err := list.Output()
	if err != nil {
		t.Fatalf("go list %v: %v", d.buildPkgs, err)
	}
	absRoot, _ := filepath.Abs(root)
	for dir := range strings.Lines(string(out)) {
		rel, err := filepath.Rel(absRoot, strings.TrimSpace(dir))
		if err != nil || rel == "." {
			continue
		}
		if !slices.ContainsFunc(copied, func(c string) bool { return rel == c || strings.HasPrefix(rel, c+string(filepath.Separator)) }) {
			t.Errorf("the binary needs %s, which the Dockerfile does not copy", rel)
		}
	}
	gomod, _ := os.ReadFile(filepath.Join(root, "go.mod"))
	goVer := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindStringSubmatch(string(gomod))
	if goVer == nil || !strings.HasPrefix(d.goImage, goVer[1]) {
		t.Errorf("the build stage is golang:%s, go.mod wants go %v", d.goImage, goVer)
	}
	if d.user == "" || d.user == "root" || strings.HasPrefix(d.user, "0") {
		t.Errorf("the image runs as %q, want a non-root user", d.user)
	}
	uid, gid, _ := strings.Cut(d.user, ":")
	// The data folder is a volume, and the health check runs the binary
	// itself (no shell or curl in the image) with a command that exists.
	if data := d.env["COFFER_DATA"]; data == "" || !slices.Contains(d.volumes, data) {
		t.Errorf("the image's data folder %q is not a VOLUME (%v)", data, d.volumes)
	}
	if !slices.Contains(d.volumes, "/data") {
		t.Errorf("the image's volumes are %v, want /data", d.volumes)
	}
	if len(d.health) < 2 || d.health[0] != "/usr/local/bin/coffer" {
		t.Errorf("HEALTHCHECK is %q, want the binary's own check (exec form)", d.health)
	} else if out, err := exec.Command(testenv.Binary(t), d.health[1], "--help").CombinedOutput(); err != nil {
		t.Errorf("HEALTHCHECK runs coffer %s, which does not exist: %v\n%s", d.health[1], err, out)
	}

	// compose.yaml
	b, err := os.ReadFile(filepath.Join(root, "deploy", "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]struct {
			Image       string
			Build       struct{ Context string }
			Command     []string
			Environment map[string]string
			Volumes     []string
			Secrets     []struct {
				Source   string
				UID, GID string
			}
			DependsOn any `yaml:"depends_on"` // a list or a map
		}
		Volumes map[string]any
		Secrets map[string]any
	}
	if err := yaml.Unmarshal(b, &compose); err != nil {
		t.Fatalf("deploy/compose.yaml: %v", err)
	}
	nodes := 0
	for name, s := range compose.Services {
		var deps []string
		switch d := s.DependsOn.(type) {
		case []any:
			for _, x := range d {
				deps = append(deps, x.(string))
			}
		case map[string]any:
			for x := range d {
				deps = append(deps, x)
			}
		}
		for _, dep := range deps {
			if _, ok := compose.Services[dep]; !ok {
				t.Errorf("service %s depends on %s, which is not a service", name, dep)
			}
		}
		for _, v := range s.Volumes {
			if src, _, _ := strings.Cut(v, ":"); !strings.HasPrefix(src, ".") && !strings.HasPrefix(src, "/") {
				if _, ok := compose.Volumes[src]; !ok {
					t.Errorf("service %s mounts volume %s, which is not declared", name, src)
				}
			}
		}
		if !strings.HasPrefix(s.Image, "coffer:") {
			continue
		}
		nodes++
		repo, _, _ := strings.Cut(s.Image, ":")
		df, _ := os.ReadFile(filepath.Join(root, "Dockerfile"))
		if ctx := filepath.Join(root, "deploy", s.Build.Context); s.Build.Context == "" || !fileExists(filepath.Join(ctx, "Dockerfile")) {
			t.Errorf("service %s: image %s, build context %q has no Dockerfile", name, s.Image, s.Build.Context)
		}
		if !strings.Contains(string(df), "docker build -t "+repo+" .") {
			t.Errorf("the Dockerfile does not say how to build %s (docker build -t %s .)", s.Image, repo)
		}
		// Its command and variables are a valid configuration.
		cfg := config.Defaults()
		fs := cfg.FlagSet("coffer serve")
		fs.Usage = func() {}
		if len(s.Command) == 0 || s.Command[0] != "serve" {
			t.Errorf("service %s runs %v, want coffer serve", name, s.Command)
			continue
		}
		if err := fs.Parse(s.Command[1:]); err != nil {
			t.Errorf("service %s: %v", name, err)
		}
		known := map[string]bool{}
		fs.VisitAll(func(f *flag.Flag) { known[config.EnvName(f.Name)] = true })
		for k := range s.Environment {
			if strings.HasPrefix(k, "COFFER_") && !known[k] {
				t.Errorf("service %s sets %s, which no flag reads", name, k)
			}
		}
		if err := config.ApplyEnv(fs, func(k string) string { return s.Environment[k] }); err != nil {
			t.Errorf("service %s: %v", name, err)
		}
		if err := cfg.Validate(); err != nil {
			t.Errorf("service %s: the configuration is invalid: %v", name, err)
		}
		if !slices.ContainsFunc(s.Volumes, func(v string) bool { _, dst, _ := strings.Cut(v, ":"); return dst == cfg.Data }) {
			t.Errorf("service %s: its data folder %s (the blob cache) is not a volume: %v", name, cfg.Data, s.Volumes)
		}
		for _, sec := range s.Secrets {
			if _, ok := compose.Secrets[sec.Source]; !ok {
				t.Errorf("service %s uses secret %s, which is not declared", name, sec.Source)
			}
			if sec.UID != uid || sec.GID != gid {
				t.Errorf("service %s: secret %s belongs to %s:%s, the image runs as %s", name, sec.Source, sec.UID, sec.GID, d.user)
			}
		}
	}
	if nodes == 0 {
		t.Error("deploy/compose.yaml runs no coffer node")
	}
}

// repoRoot is the repository's root folder.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
