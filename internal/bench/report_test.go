package bench

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/bench/report"
)

// TestReportJSON checks the JSON document scripts rely on: the keys the
// issue names and numbers that follow from what was recorded.
func TestReportJSON(t *testing.T) {
	epoch := time.Now()
	col := newCollector(epoch)
	for i := range 100 {
		col.request("upload", time.Duration(i+1)*time.Millisecond, true, outcomeOK, "", "")
	}
	col.request("upload", 0, false, outcomeFailed, classTimeout, "deadline")
	col.request("upload", 5*time.Millisecond, true, outcomeFailed, "http_500", "500 Internal Server Error")
	col.request("upload", 5*time.Millisecond, true, outcomeShed, "http_503", "503")
	col.request("upload", time.Second, false, outcomeCanceled, classCanceled, "") // not counted
	col.check("upload status is 201", true)
	col.check("upload status is 201", false)
	col.iteration(10*time.Millisecond, outcomeOK)
	col.tick(epoch.Add(time.Second), time.Second, 4, "")
	col.addActive(2 * time.Second)

	tg := &target{col: col}
	tg.counters.sent.Store(2000)
	res := tg.result(Options{Scenario: "upload-proxy", Target: "http://x", VUs: 4, Duration: 2 * time.Second, Timeout: time.Minute},
		newModel(Options{VUs: 4, Duration: 2 * time.Second}), epoch)
	res.Audit = report.Audit{Enabled: true, Acknowledged: 3, Verified: 2, Missing: 1}
	res.Server = report.Server{Samples: []report.Sample{{T: 1, RSSBytes: 1 << 20, Goroutines: 12}}}

	var buf bytes.Buffer
	if err := report.JSON(&buf, res); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("invalid JSON: %v\n%s", err, buf.Bytes())
	}
	get := func(path ...string) any {
		var v any = doc
		for _, p := range path {
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("%v: %s is not an object", path, p)
			}
			if v, ok = m[p]; !ok {
				t.Fatalf("JSON lacks %v", path)
			}
		}
		return v
	}
	for _, c := range []struct {
		path []string
		want any
	}{
		{[]string{"scenario"}, "upload-proxy"},
		{[]string{"requests", "total"}, 103.0},
		{[]string{"requests", "failed"}, 2.0},
		{[]string{"requests", "shed"}, 1.0},
		{[]string{"requests", "rps"}, 51.5},
		{[]string{"errors", "timeout"}, 1.0},
		{[]string{"errors", "http_500"}, 1.0},
		{[]string{"shed", "http_503"}, 1.0},
		{[]string{"audit", "acknowledged"}, 3.0},
		{[]string{"audit", "verified"}, 2.0},
		{[]string{"audit", "missing"}, 1.0},
		{[]string{"audit", "corrupt"}, 0.0},
		{[]string{"data", "sent_bytes"}, 2000.0},
		{[]string{"data", "sent_per_s"}, 1000.0},
		{[]string{"load", "mode"}, "constant-vus"},
	} {
		if got := get(c.path...); got != c.want {
			t.Errorf("%v = %v, want %v", c.path, got, c.want)
		}
	}
	// 1..100 ms and two 5 ms (102 values): nearest ranks 51, 97 and 101.
	for key, want := range map[string]float64{"p50": 49, "p95": 95, "p99": 99} {
		got := get("latency_ms", key).(float64)
		if got < want*0.99 || got > want*1.01 {
			t.Errorf("latency_ms.%s = %v, want about %v", key, got, want)
		}
	}
	if n := len(get("server", "samples").([]any)); n != 1 {
		t.Errorf("server.samples has %d entries, want 1", n)
	}
	if n := len(get("series").([]any)); n != 1 {
		t.Errorf("series has %d points, want 1", n)
	}
	checks := get("checks").([]any)
	if len(checks) != 1 || checks[0].(map[string]any)["fails"] != 1.0 {
		t.Errorf("checks = %v", checks)
	}

	// The text summary names the same numbers.
	buf.Reset()
	if err := report.Text(&buf, res); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"upload", "timeout=1", "http_500=1", "http_503=1", "missing 1", "FAILED"} {
		if !bytes.Contains(buf.Bytes(), []byte(s)) {
			t.Errorf("text report lacks %q:\n%s", s, buf.Bytes())
		}
	}
}
