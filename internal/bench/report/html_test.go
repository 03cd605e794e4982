package report

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"
)

func TestAxis(t *testing.T) {
	for _, c := range []struct{ v, top, step float64 }{
		{2300, 3000, 1000}, // 575 a step rounds up to 1000
		{9.2, 10, 2.5},
		{1, 1, 0.25},
		{100, 100, 25},
		{0.03, 0.03, 0.01},
	} {
		top, step := axis(c.v, 4)
		if math.Abs(top-c.top) > 1e-9 || math.Abs(step-c.step) > 1e-9 {
			t.Errorf("axis(%v) = %v, %v; want %v, %v", c.v, top, step, c.top, c.step)
		}
	}
}

func sampleResult() *Result {
	r := &Result{Scenario: "s3-put", S3Target: "http://127.0.0.1:9000", Started: time.Unix(0, 0),
		Load:   Load{Mode: "constant-vus", VUs: 4, MaxVUs: 4, Duration: "3s", Timeout: "1m0s"},
		Errors: map[string]int64{"http_500": 2}, Shed: map[string]int64{},
		Endpoints: []Endpoint{{Name: "put<script>", Count: 10}},
		Audit:     Audit{Enabled: true, Acknowledged: 10, Verified: 10},
		Server:    Server{Samples: []Sample{{T: 0, RSSBytes: 1 << 20, Goroutines: 10}, {T: 2, RSSBytes: 2 << 20, Goroutines: 12}}},
	}
	for i := 1; i <= 3; i++ {
		r.Series = append(r.Series, Point{T: float64(i), RPS: 100 * float64(i), P50MS: 1, P95MS: 2, P99MS: 3, VUs: 4})
	}
	return r
}

func TestHTMLIsSelfContained(t *testing.T) {
	r := sampleResult()
	b := *r
	b.S3Target = "http://b"
	r.Compare = &Comparison{Target: "http://b", Rounds: 2, Result: &b, Ratios: Ratios(r, &b)}
	var buf bytes.Buffer
	if err := HTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if got := strings.Count(page, "<svg"); got != 6 {
		t.Errorf("%d charts, want 6 (RPS, latency, errors, VUs, RSS, goroutines)", got)
	}
	for _, s := range []string{"requests/s (A)", "requests/s (B)", "Server resident memory", "http_500", "Comparison"} {
		if !strings.Contains(page, s) {
			t.Errorf("page lacks %q", s)
		}
	}
	if strings.Contains(page, "put<script>") {
		t.Error("request names are not escaped")
	}
	for _, ext := range []string{"<script", "<link", "src=", "@import", "url("} {
		if strings.Contains(page, ext) {
			t.Errorf("page refers to something outside itself: %q", ext)
		}
	}
}
