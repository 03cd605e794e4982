package bench_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/coffer-storage/coffer/test/testenv"
)

// overloadReport is the part of a bench report the overload test reads.
type overloadReport struct {
	Requests struct {
		Total, Failed, Shed int64
	} `json:"requests"`
	Endpoints []struct {
		Name          string `json:"name"`
		Count, Shed   int64
		OKLatencyMS   summary  `json:"ok_latency_ms"`
		ShedLatencyMS *summary `json:"shed_latency_ms"`
	} `json:"endpoints"`
	ShedLatencyMS *summary         `json:"shed_latency_ms"`
	Errors        map[string]int64 `json:"errors"`
	Shed          map[string]int64 `json:"shed"` // by class
	Iterations    struct {
		Total int64   `json:"total"`
		Rate  float64 `json:"rate"`
	} `json:"iterations"`
	Audit struct {
		Acknowledged, Verified, Missing, Corrupt int64
	} `json:"audit"`
	Server struct {
		Samples []struct {
			RSS float64 `json:"rss_bytes"`
		} `json:"samples"`
	} `json:"server"`
}

type summary struct {
	Count         uint64
	P50, P95, P99 float64
	Max           float64
}

func runOverloadBench(t *testing.T, args ...string) overloadReport {
	t.Helper()
	out := filepath.Join(t.TempDir(), "report.json")
	cmd := exec.Command(testenv.Binary(t), append(append([]string{"bench"}, args...), "--json", out)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("coffer bench %v: %v\n%s\n%s", args, err, stdout.String(), stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var r overloadReport
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	t.Logf("coffer bench %v:\n%s", args, stdout.String())
	return r
}

func (r overloadReport) endpoint(t *testing.T, name string) (ok summary, shed *summary, count, shedN int64) {
	t.Helper()
	for _, e := range r.Endpoints {
		if e.Name == name {
			return e.OKLatencyMS, e.ShedLatencyMS, e.Count, e.Shed
		}
	}
	t.Fatalf("no %q requests in the report", name)
	return
}

// TestOverloadShedsEarly is an open-model overload at twice the node's
// capacity: 1 MiB uploads through the file API (with Expect:
// 100-continue, as SDKs and curl send them) arrive at 2 × the rate the
// node served closed-loop a moment before (4 × and 8 × if nothing was
// shed, because then the node was not overloaded). It checks what the node does,
// never how fast: it sheds the excess (503 with Retry-After: the bench
// counts a 503 without one, or any other error, as failed), nothing fails
// (no 408 caused by the server's own slowness), every acknowledged upload
// is intact, and memory stays bounded. How fast it sheds, the admitted
// uploads' latency against capacity and the goodput are measured by
// scripts/bench-overload.sh (docs/PERFORMANCE.md, "Overload"), not here:
// they depend on what else the machine runs (an admitted p99 of 278 ms
// against 171 ms allowed failed this test while other work shared the
// cores).
func TestOverloadShedsEarly(t *testing.T) {
	srv := testenv.Start(t, "--max-in-flight-per-client", "0", "--admission", "adaptive")
	// Capacity: what 16 closed-loop VUs get through, to set the arrival
	// rate. 4 VUs were below saturation: "2x" of their rate was served at
	// 115-193 % of it, and CI 49 measured 31.4/s at 4 VUs while the
	// neighbouring suites were heavy, then served 63/s whole once they
	// were not. 16 is where the closed loop's rate stopped growing in
	// bench-overload.sh's ramp.
	capRun := runOverloadBench(t, "upload-proxy", "--target", srv.URL, "--vus", "16", "--users", "16", "--duration", "6s", "--expect-continue")
	capacity := capRun.Iterations.Rate
	capOK, _, _, _ := capRun.endpoint(t, "upload")
	if capRun.Requests.Failed != 0 || capacity <= 0 {
		t.Fatalf("capacity run: %.1f uploads/s, %d failed (%v)", capacity, capRun.Requests.Failed, capRun.Errors)
	}
	t.Logf("capacity %.1f uploads/s, upload p99 %.1f ms", capacity, capOK.P99)

	// The capacity was measured while other work may have shared the
	// cores, so "2x" of it can be a rate the node serves whole once that
	// work ends. The node was then not overloaded and proves nothing
	// either way: every arrival must have been served intact (checked
	// below for each run), and the rate doubles, up to 8x.
	var r overloadReport
	for mult := 2.0; ; mult *= 2 {
		r = runOverloadBench(t, "upload-proxy", "--target", srv.URL, "--rate", fmt.Sprintf("%.0f/s", max(mult*capacity, 1)),
			"--vus", "300", "--users", "8", "--duration", "12s", "--timeout", "30s", "--expect-continue")
		ok, _, _, shedN := r.endpoint(t, "upload")
		goodput := float64(r.Audit.Acknowledged) / 12
		// For the log only (measured, not asserted: see the doc comment).
		t.Logf("%.0fx: goodput %.1f/s (%.0f%% of capacity), shed %d (upload %d), time to shed %+v, admitted upload %+v, errors %v",
			mult, goodput, 100*goodput/capacity, r.Requests.Shed, shedN, r.ShedLatencyMS, ok, r.Errors)
		if r.Requests.Failed != 0 {
			t.Errorf("%d requests failed under overload (%v); the excess must be shed with Retry-After, not fail", r.Requests.Failed, r.Errors)
		}
		if r.Requests.Shed != 0 {
			break
		}
		if a := r.Audit; a.Missing != 0 || a.Corrupt != 0 || a.Verified != a.Acknowledged || a.Acknowledged == 0 {
			t.Errorf("audit at %.0fx: %+v", mult, a)
		}
		if mult >= 8 {
			t.Fatalf("nothing was shed at %.0f times the capacity", mult)
		}
	}
	for class, n := range r.Shed {
		// The per-client bound is off: shedding is the node's 503 +
		// Retry-After (a 429 would count as shed without the header).
		if class != "http_503" {
			t.Errorf("%d requests shed as %s, want only 503 with Retry-After", n, class)
		}
	}
	if a := r.Audit; a.Missing != 0 || a.Corrupt != 0 || a.Verified != a.Acknowledged || a.Acknowledged == 0 {
		t.Errorf("audit: %+v", a)
	}
	var rss float64
	for _, s := range r.Server.Samples {
		rss = max(rss, s.RSS)
	}
	if rss > 256<<20 {
		t.Errorf("server RSS reached %.0f MiB under overload", rss/(1<<20))
	}
}
