package deploy

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/coffer-storage/coffer/internal/config"
	"github.com/coffer-storage/coffer/test/testenv"
)

// require finds a tool or, without it, skips the test (fails it when the
// test command installed the tools: COFFER_REQUIRE_CLIENTS=1).
func require(t *testing.T, name, env, why string) string {
	t.Helper()
	if p := os.Getenv(env); env != "" && p != "" {
		return p
	}
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if os.Getenv("COFFER_REQUIRE_CLIENTS") == "1" {
		t.Fatalf("%s not found (%s)", name, why)
	}
	t.Skipf("%s not found (%s)", name, why)
	return ""
}

// TestSystemdUnit: deploy/systemd/coffer.service passes systemd-analyze
// verify (with ExecStart pointing at a real binary), carries the
// hardening the issue asks for, and starts coffer serve with settings
// coffer accepts.
func TestSystemdUnit(t *testing.T) {
	unit, err := os.ReadFile(filepath.Join(repoRoot(), "deploy", "systemd", "coffer.service"))
	if err != nil {
		t.Fatal(err)
	}
	directives := map[string][]string{}
	for l := range strings.Lines(string(unit)) {
		l = strings.TrimSpace(l)
		if k, v, ok := strings.Cut(l, "="); ok && !strings.HasPrefix(l, "#") {
			directives[k] = append(directives[k], v)
		}
	}
	for k, want := range map[string]string{
		"ProtectSystem": "strict", "NoNewPrivileges": "yes", "DynamicUser": "yes", "ReadWritePaths": "/var/lib/coffer",
		"StateDirectory": "coffer", "PrivateTmp": "yes", "ProtectHome": "yes", "CapabilityBoundingSet": "",
	} {
		if !slices.Contains(directives[k], want) {
			t.Errorf("the unit sets %s=%v, want %q", k, directives[k], want)
		}
	}
	if l := directives["LimitNOFILE"]; len(l) == 0 || l[0] == "" {
		t.Error("the unit sets no LimitNOFILE")
	}
	if r := directives["ExecReload"]; len(r) == 0 || !strings.Contains(r[0], "-HUP $MAINPID") {
		t.Errorf("ExecReload is %v, want a SIGHUP (coffer re-reads its TLS certificate)", r)
	}
	// Its command line and environment are a valid configuration whose
	// data folder is the state directory.
	exec0 := strings.Fields(directives["ExecStart"][0])
	if len(exec0) < 2 || exec0[0] != "/usr/local/bin/coffer" || exec0[1] != "serve" {
		t.Fatalf("ExecStart is %v, want /usr/local/bin/coffer serve", exec0)
	}
	cfg := config.Defaults()
	fs := cfg.FlagSet("coffer serve")
	fs.SetOutput(io.Discard)
	if err := fs.Parse(exec0[2:]); err != nil {
		t.Errorf("ExecStart: %v", err)
	}
	env := map[string]string{}
	for _, e := range directives["Environment"] {
		k, v, _ := strings.Cut(e, "=")
		env[k] = v
	}
	if err := config.ApplyEnv(fs, func(k string) string { return env[k] }); err != nil {
		t.Errorf("Environment: %v", err)
	}
	if cfg.Data != "/var/lib/coffer" {
		t.Errorf("the unit's data folder is %q, want its StateDirectory /var/lib/coffer", cfg.Data)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("the unit's configuration is invalid: %v", err)
	}

	sa := require(t, "systemd-analyze", "", "Debian's systemd package")
	// verify wants ExecStart's binary to exist: point it at the one built.
	local := bytes.ReplaceAll(unit, []byte("/usr/local/bin/coffer"), []byte(testenv.Binary(t)))
	path := filepath.Join(t.TempDir(), "coffer.service")
	if err := os.WriteFile(path, local, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(sa, "verify", path).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestHelmChart: helm lint, and helm template in both shapes, render
// workloads running coffer serve as a non-root user with a read-only root,
// the probes on paths the server answers, COFFER_* variables that coffer
// reads, and the data folder on a volume; the scale-out shape without its
// Secret refuses to render.
func TestHelmChart(t *testing.T) {
	helm := require(t, "helm", "COFFER_HELM", "scripts/test.sh builds it with go install helm.sh/helm/v3/cmd/helm")
	chart := filepath.Join(repoRoot(), "deploy", "helm", "coffer")
	if out, err := exec.Command(helm, "lint", "--strict", chart).CombinedOutput(); err != nil {
		t.Fatalf("helm lint: %v\n%s", err, out)
	}
	cfgFlags := map[string]bool{}
	defaults := config.Defaults()
	defaults.FlagSet("coffer serve").VisitAll(func(f *flag.Flag) { cfgFlags[config.EnvName(f.Name)] = true })
	for _, c := range []struct {
		mode string
		set  []string
		kind string
	}{
		{"embedded", nil, "StatefulSet"},
		{"scaleout", []string{"--set", "mode=scaleout", "--set", "scaleout.existingSecret=coffer-stores", "--set", "replicas=3", "--set", "metrics.tokenSecret=m"}, "Deployment"},
	} {
		out, err := exec.Command(helm, append([]string{"template", "t", chart}, c.set...)...).Output()
		if err != nil {
			var ee *exec.ExitError
			errors.As(err, &ee)
			t.Fatalf("helm template (%s): %v\n%s", c.mode, err, ee.Stderr)
		}
		dec := yaml.NewDecoder(bytes.NewReader(out))
		kinds := map[string]int{}
		for {
			var doc struct {
				Kind string
				Spec struct {
					Replicas int
					Template struct {
						Spec struct {
							SecurityContext struct {
								RunAsNonRoot bool `yaml:"runAsNonRoot"`
								RunAsUser    int  `yaml:"runAsUser"`
							} `yaml:"securityContext"`
							Containers []struct {
								Args []string
								Env  []struct {
									Name      string
									Value     string
									ValueFrom any `yaml:"valueFrom"`
								}
								Liveness struct {
									HTTPGet struct{ Path string } `yaml:"httpGet"`
								} `yaml:"livenessProbe"`
								Readiness struct {
									HTTPGet struct{ Path string } `yaml:"httpGet"`
								} `yaml:"readinessProbe"`
								SecurityContext struct {
									ReadOnlyRootFilesystem   bool `yaml:"readOnlyRootFilesystem"`
									AllowPrivilegeEscalation bool `yaml:"allowPrivilegeEscalation"`
								} `yaml:"securityContext"`
								VolumeMounts []struct {
									Name      string
									MountPath string `yaml:"mountPath"`
								} `yaml:"volumeMounts"`
							}
						}
					}
				}
			}
			if err := dec.Decode(&doc); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("helm template (%s): %v", c.mode, err)
			}
			kinds[doc.Kind]++
			if doc.Kind != c.kind {
				continue
			}
			ps := doc.Spec.Template.Spec
			if !ps.SecurityContext.RunAsNonRoot || ps.SecurityContext.RunAsUser == 0 {
				t.Errorf("%s: the pod may run as root", c.mode)
			}
			if c.mode == "embedded" && doc.Spec.Replicas != 1 {
				t.Errorf("embedded: %d replicas, want exactly 1 (SQLite has one writer)", doc.Spec.Replicas)
			}
			for _, ct := range ps.Containers {
				if len(ct.Args) == 0 || ct.Args[0] != "serve" {
					t.Errorf("%s: the container runs %v, want coffer serve", c.mode, ct.Args)
				}
				cfg := config.Defaults()
				fs := cfg.FlagSet("coffer serve")
				fs.SetOutput(io.Discard)
				if err := fs.Parse(ct.Args[1:]); err != nil {
					t.Errorf("%s: args: %v", c.mode, err)
				}
				data := ""
				for _, e := range ct.Env {
					if strings.HasPrefix(e.Name, "COFFER_") && !cfgFlags[e.Name] {
						t.Errorf("%s: env %s, which no flag reads", c.mode, e.Name)
					}
					if e.Name == "COFFER_DATA" {
						data = e.Value
					}
				}
				if !slices.ContainsFunc(ct.VolumeMounts, func(m struct {
					Name      string
					MountPath string `yaml:"mountPath"`
				}) bool {
					return m.MountPath == data
				}) {
					t.Errorf("%s: the data folder %q is not a mounted volume", c.mode, data)
				}
				if ct.Liveness.HTTPGet.Path != "/healthz" || ct.Readiness.HTTPGet.Path != "/readyz" {
					t.Errorf("%s: probes %q and %q, want /healthz and /readyz", c.mode, ct.Liveness.HTTPGet.Path, ct.Readiness.HTTPGet.Path)
				}
				if !ct.SecurityContext.ReadOnlyRootFilesystem || ct.SecurityContext.AllowPrivilegeEscalation {
					t.Errorf("%s: the container's root is writable or it may escalate", c.mode)
				}
			}
		}
		if kinds[c.kind] != 1 || kinds["Service"] != 1 {
			t.Errorf("%s: rendered %v, want one %s and one Service", c.mode, kinds, c.kind)
		}
	}
	if out, err := exec.Command(helm, "template", "t", chart, "--set", "mode=scaleout").CombinedOutput(); err == nil || !strings.Contains(string(out), "existingSecret") {
		t.Errorf("scaleout without its Secret rendered (%v): %s", err, out)
	}
	// kubeconform validates against the Kubernetes JSON schemas, which it
	// downloads from GitHub: not reachable from the test machines.
	t.Log("kubeconform not run: its schemas come from GitHub, which the test machines cannot reach")
}

// TestDockerImage builds the image and runs its health check when a
// Docker engine answers; the Dockerfile's paths are checked by
// TestDeployFiles either way.
func TestDockerImage(t *testing.T) {
	docker, err := exec.LookPath("docker")
	if err != nil {
		t.Skip("no container runtime (docker) here: the image's build is untested; TestDeployFiles checks the Dockerfile against the tree")
	}
	if out, err := exec.Command(docker, "info", "--format", "{{.ServerVersion}}").CombinedOutput(); err != nil {
		t.Skipf("docker is installed but no engine answers (%v: %s): the image's build is untested; TestDeployFiles checks the Dockerfile against the tree", err, bytes.TrimSpace(out))
	}
	tag := "coffer-test:" + strings.ToLower(t.Name())
	build := exec.Command(docker, "build", "--build-arg", "VERSION=v0.0.0-test", "-t", tag, ".")
	build.Dir = repoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("docker build: %v\n%s", err, out)
	}
	defer exec.Command(docker, "rmi", "-f", tag).Run()
	out, err := exec.Command(docker, "run", "--rm", tag, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "coffer v0.0.0-test") {
		t.Errorf("docker run %s version: %v\n%s", tag, err, out)
	}
}

// TestReleaseScript runs scripts/release.sh for this machine's platform
// and darwin/arm64: the binaries exist, SHA256SUMS verifies them, and the
// native one reports the stamped version. A bad version is refused.
func TestReleaseScript(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	script := filepath.Join(repoRoot(), "scripts", "release.sh")
	out := t.TempDir()
	native := runtime.GOOS + "/" + runtime.GOARCH
	cmd := exec.Command(script, "v1.2.3-rc.1")
	cmd.Env = append(os.Environ(), "OUT="+out, "TARGETS="+native+" darwin/arm64", "ALLOW_DIRTY=1")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("release.sh: %v\n%s", err, b)
	}
	sums, err := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(sums), "\n"); n != 2 {
		t.Errorf("SHA256SUMS has %d lines, want 2:\n%s", n, sums)
	}
	check := exec.Command("sha256sum", "-c", "SHA256SUMS")
	check.Dir = out
	if b, err := check.CombinedOutput(); err != nil {
		t.Errorf("sha256sum -c: %v\n%s", err, b)
	}
	bin := filepath.Join(out, "coffer-v1.2.3-rc.1-"+runtime.GOOS+"-"+runtime.GOARCH)
	if b, err := exec.Command(bin, "version").CombinedOutput(); err != nil || !strings.HasPrefix(string(b), "coffer v1.2.3-rc.1\n") {
		t.Errorf("%s version: %v\n%s", bin, err, b)
	}
	if _, err := os.Stat(filepath.Join(out, "coffer-v1.2.3-rc.1-darwin-arm64")); err != nil {
		t.Error(err)
	}
	bad := exec.Command(script, "1.2")
	bad.Env = append(os.Environ(), "OUT="+t.TempDir())
	if b, err := bad.CombinedOutput(); err == nil || !strings.Contains(string(b), "usage") {
		t.Errorf("release.sh 1.2: %v\n%s", err, b)
	}
}
