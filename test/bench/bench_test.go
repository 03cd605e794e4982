// Package bench_test runs `coffer bench` end to end: the real binary
// load-tests a real `coffer serve` with every scenario at small scale and
// must exit 0 with nothing missing in its audit.
package bench_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/test/testenv"
)

type benchReport struct {
	Scenario string `json:"scenario"`
	Setup    struct {
		Users int   `json:"users"`
		Bytes int64 `json:"bytes"`
	} `json:"setup"`
	Plan struct {
		SetupBytes   int64 `json:"setup_bytes"`
		PerIteration int64 `json:"per_iteration_bytes"`
		LoadBytes    int64 `json:"load_bytes"`
	} `json:"plan"`
	Data struct {
		UploadedBytes int64 `json:"uploaded_bytes"`
	} `json:"data"`
	Requests struct {
		Total  int64 `json:"total"`
		Failed int64 `json:"failed"`
	} `json:"requests"`
	Endpoints []struct {
		Name  string `json:"name"`
		Count int64  `json:"count"`
	} `json:"endpoints"`
	Iterations struct {
		Total   int64 `json:"total"`
		Dropped int64 `json:"dropped"`
	} `json:"iterations"`
	Audit struct {
		Enabled      bool  `json:"enabled"`
		Acknowledged int64 `json:"acknowledged"`
		Verified     int64 `json:"verified"`
		Missing      int64 `json:"missing"`
		Corrupt      int64 `json:"corrupt"`
		Deleted      int64 `json:"deleted"`
	} `json:"audit"`
	Cleanup struct {
		Enabled  bool     `json:"enabled"`
		Objects  int64    `json:"objects"`
		Accounts int64    `json:"accounts"`
		Warnings []string `json:"warnings"`
	} `json:"cleanup"`
	Server struct {
		Samples []struct {
			RSS float64 `json:"rss_bytes"`
		} `json:"samples"`
	} `json:"server"`
	Compare *struct {
		Result *benchReport `json:"result"`
	} `json:"compare"`
}

// bench runs coffer bench and returns its JSON report.
func bench(t *testing.T, args ...string) benchReport {
	t.Helper()
	return benchEnv(t, nil, args...)
}

// benchEnv runs coffer bench with extra environment variables and returns
// its JSON report.
func benchEnv(t *testing.T, env []string, args ...string) benchReport {
	t.Helper()
	out := filepath.Join(t.TempDir(), "report.json")
	cmd := exec.Command(testenv.Binary(t), append(append([]string{"bench"}, args...), "--json", out)...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("coffer bench %v: %v after %v\nstdout:\n%s\nstderr:\n%s", args, err, time.Since(start), stdout.String(), stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var r benchReport
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("report: %v", err)
	}
	t.Logf("%s: %d requests, %d iterations, audit %+v in %v", r.Scenario, r.Requests.Total, r.Iterations.Total, r.Audit, time.Since(start).Round(time.Millisecond))
	return r
}

func checkReport(t *testing.T, r benchReport, uploads bool) {
	t.Helper()
	if r.Requests.Total == 0 || r.Iterations.Total == 0 {
		t.Errorf("%s: nothing ran: %d requests, %d iterations", r.Scenario, r.Requests.Total, r.Iterations.Total)
	}
	if r.Requests.Failed != 0 {
		t.Errorf("%s: %d requests failed", r.Scenario, r.Requests.Failed)
	}
	a := r.Audit
	if a.Missing != 0 || a.Corrupt != 0 {
		t.Errorf("%s: audit %+v", r.Scenario, a)
	}
	if uploads && (!a.Enabled || a.Acknowledged == 0 || a.Verified != a.Acknowledged-a.Deleted) {
		t.Errorf("%s: audit %+v, want every acknowledged upload verified", r.Scenario, a)
	}
}

// checkCleanup checks that the run deleted what it left on the target.
func checkCleanup(t *testing.T, r benchReport, uploads bool) {
	t.Helper()
	a, c := r.Audit, r.Cleanup
	if uploads && (!c.Enabled || c.Objects < a.Acknowledged-a.Deleted) {
		t.Errorf("%s: cleanup %+v, want at least the %d objects left by the run deleted", r.Scenario, c, a.Acknowledged-a.Deleted)
	}
	for _, w := range c.Warnings {
		t.Errorf("%s: cleanup warning: %s", r.Scenario, w)
	}
}

func TestEveryScenarioAgainstARealServer(t *testing.T) {
	srv := testenv.Start(t)
	const d = "3s"
	for _, c := range []struct {
		scenario string
		uploads  bool
		extra    []string
	}{
		{"upload-proxy", true, nil},
		{"upload-direct", true, nil},
		{"tus", true, nil},
		{"read", true, []string{"--size", "64KiB"}},
		{"batch", true, nil},
		{"share", true, []string{"--size", "64KiB"}},
		{"ping", false, nil},
		{"stream", true, nil},
		{"soak", true, []string{"--size", "256KiB", "--sample-interval", "500ms"}},
		{"s3-put", true, []string{"--s3-target", srv.S3URL, "--size", "256KiB"}},
		{"s3-get", true, []string{"--s3-target", srv.S3URL, "--size", "64KiB", "--objects", "20"}},
		{"s3-mixed", true, []string{"--s3-target", srv.S3URL, "--size", "16KiB", "--objects", "20", "--s3-payload", "unsigned"}},
	} {
		t.Run(c.scenario, func(t *testing.T) {
			args := append([]string{c.scenario, "--target", srv.URL, "--vus", "4", "--duration", d}, c.extra...)
			r := bench(t, args...)
			checkReport(t, r, c.uploads)
			checkCleanup(t, r, c.uploads)
			if c.scenario == "soak" && len(r.Server.Samples) < 3 {
				t.Errorf("soak sampled the server %d times, want it sampled throughout", len(r.Server.Samples))
			}
			if c.scenario == "soak" {
				// The soak mixes writes into its reads: uploads, and deletes
				// of each VU's oldest upload beyond 8.
				n := map[string]int64{}
				for _, e := range r.Endpoints {
					n[e.Name] = e.Count
				}
				if n["upload"] == 0 || n["list"] == 0 || n["download"] == 0 || n["ping"] == 0 {
					t.Errorf("soak endpoints %v, want ping, list, download and upload", n)
				}
				if n["upload"] > 4*8+8 && n["delete"] == 0 {
					t.Errorf("soak uploaded %d objects over 4 VUs and deleted none, want the oldest beyond 8 deleted", n["upload"])
				}
			}
		})
	}
}

func TestRampAndCompare(t *testing.T) {
	srv := testenv.Start(t)
	// A ramp with arrival-rate pacing is covered by unit tests; here the
	// stages run against the real server.
	checkReport(t, bench(t, "ping", "--target", srv.URL, "--stages", "1s:8,1s:0"), false)

	// Compare the server's S3 API with itself (one key, one bucket).
	c := srv.NewUser(t)
	var key struct {
		ID     string `json:"access_key_id"`
		Secret string `json:"secret_access_key"`
	}
	if st := c.JSON(t, "POST", "/api/v1/keys", map[string]string{"name": "compare"}, &key); st != 201 {
		t.Fatalf("creating a key: status %d", st)
	}
	r := bench(t, "s3-put", "--target", srv.URL, "--s3-target", srv.S3URL, "--access-key", key.ID, "--secret-key", key.Secret,
		"--compare", srv.S3URL, "--compare-access-key", key.ID, "--compare-secret-key", key.Secret,
		"--rounds", "2", "--vus", "2", "--duration", "700ms", "--size", "16KiB")
	checkReport(t, r, true)
	if r.Compare == nil || r.Compare.Result == nil {
		t.Fatal("no comparison in the report")
	}
	checkReport(t, *r.Compare.Result, true)
}
