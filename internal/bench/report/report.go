// Package report is the result of a `coffer bench` run and its three
// renderings: a terminal summary in the spirit of k6 (Text), a JSON
// document for scripts (JSON) and one self-contained HTML page with charts
// drawn as inline SVG (HTML), viewable without a network.
//
// Result is plain data: the bench package fills it in, this package only
// formats it. Latencies are in milliseconds, sizes in bytes, times in
// seconds since the start of the run.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/coffer-storage/coffer/internal/bench/stats"
)

// Result is everything a run measured.
type Result struct {
	RunID       string    `json:"run_id"` // names what the run created: objects under bench-<run id>/, accounts bench-<run id>-N@example.com
	Scenario    string    `json:"scenario"`
	Target      string    `json:"target,omitempty"`
	S3Target    string    `json:"s3_target,omitempty"`
	Started     time.Time `json:"started"`
	DurationS   float64   `json:"duration_s"` // time under load (sum of rounds)
	Interrupted bool      `json:"interrupted"`
	Load        Load      `json:"load"`
	Plan        Plan      `json:"plan"`
	Setup       Setup     `json:"setup"`

	Requests  Requests      `json:"requests"`
	LatencyMS stats.Summary `json:"latency_ms"` // every request that got a response
	// OKLatencyMS is the latency of admitted requests that succeeded
	// (neither failed nor shed); ShedLatencyMS the time the server took
	// to refuse the shed ones (nil if none was shed).
	OKLatencyMS   stats.Summary  `json:"ok_latency_ms"`
	ShedLatencyMS *stats.Summary `json:"shed_latency_ms,omitempty"`
	Endpoints     []Endpoint     `json:"endpoints"` // per request name, in first-seen order
	Iterations    Iterations     `json:"iterations"`
	Trends        []Trend        `json:"trends,omitempty"` // other timings, e.g. time to first byte
	Checks        []Check        `json:"checks"`
	Data          Data           `json:"data"`

	// Errors counts failed requests by class: "http_500", "timeout",
	// "connection_refused", "connection_reset", "connection_closed",
	// "bad_response" (a 2xx whose content failed a check), "other".
	Errors map[string]int64 `json:"errors"`
	// Shed counts requests the server deliberately refused under load:
	// 429 or 503 with Retry-After (or S3 SlowDown). They are not failures.
	Shed         map[string]int64 `json:"shed"`
	ErrorSamples []string         `json:"error_samples,omitempty"`

	Audit   Audit   `json:"audit"`
	Cleanup Cleanup `json:"cleanup"`
	Server  Server  `json:"server"`
	Series  []Point `json:"series"` // one point per second under load

	Compare *Comparison `json:"compare,omitempty"`
	Notes   []string    `json:"notes,omitempty"`
}

// Load describes the load model.
type Load struct {
	Mode     string  `json:"mode"` // constant-vus, ramping-vus or constant-arrival-rate
	VUs      int     `json:"vus,omitempty"`
	MaxVUs   int     `json:"max_vus"`
	Duration string  `json:"duration,omitempty"`
	Stages   []Stage `json:"stages,omitempty"`
	Rate     float64 `json:"rate_per_s,omitempty"`
	Size     int64   `json:"size_bytes,omitempty"`
	Think    string  `json:"think,omitempty"`
	Timeout  string  `json:"timeout"`
	Rounds   int     `json:"rounds,omitempty"`
}

// Stage is one k6-style ramp: go to Target VUs over Duration.
type Stage struct {
	Duration string `json:"duration"`
	Target   int    `json:"target"`
}

// Plan is what the run said, before its setup, it would write on the
// target: the numbers of its "the setup will upload …" and "the load will
// upload …" lines, to hold against Setup.Bytes and Data.UploadedBytes.
type Plan struct {
	SetupBytes int64 `json:"setup_bytes"`
	// PerIteration is the object bytes one iteration uploads (on average
	// for s3-mixed; 0: the load uploads nothing).
	PerIteration int64 `json:"per_iteration_bytes"`
	// LoadBytes is the estimate for the whole load at a constant arrival
	// rate (--rate): arrivals × PerIteration; 0 in the closed models, where
	// the amount depends on the server's speed.
	LoadBytes int64 `json:"load_bytes,omitempty"`
}

// Setup is what the setup phase created (not counted in the results).
type Setup struct {
	Users     int     `json:"users"`
	Sessions  int     `json:"sessions"`
	Objects   int     `json:"objects"`
	Bytes     int64   `json:"bytes"` // of the objects
	Retries   int64   `json:"retries"`
	DurationS float64 `json:"duration_s"`
}

// Requests totals every request of the run.
type Requests struct {
	Total     int64   `json:"total"`
	Failed    int64   `json:"failed"`
	Shed      int64   `json:"shed"`
	RPS       float64 `json:"rps"`
	ErrorRate float64 `json:"error_rate"` // failed / total
}

// Endpoint is the totals of one request name ("upload", "get", ...).
type Endpoint struct {
	Name      string        `json:"name"`
	Count     int64         `json:"count"`
	Failed    int64         `json:"failed"`
	Shed      int64         `json:"shed"`
	RPS       float64       `json:"rps"`
	LatencyMS stats.Summary `json:"latency_ms"`
	// OKLatencyMS and ShedLatencyMS as in Result.
	OKLatencyMS   stats.Summary  `json:"ok_latency_ms"`
	ShedLatencyMS *stats.Summary `json:"shed_latency_ms,omitempty"`
}

// Iterations totals the scenario's iterations.
type Iterations struct {
	Total       int64         `json:"total"` // completed, successful or not
	Failed      int64         `json:"failed"`
	Interrupted int64         `json:"interrupted"` // shed, or cut by the end of the run
	Dropped     int64         `json:"dropped"`     // arrival-rate mode: no VU was free
	Rate        float64       `json:"rate"`
	DurationMS  stats.Summary `json:"duration_ms"`
}

// Trend is a named timing other than request latency.
type Trend struct {
	Name string        `json:"name"`
	MS   stats.Summary `json:"ms"`
}

// Check is one named assertion on responses.
type Check struct {
	Name   string `json:"name"`
	Passes int64  `json:"passes"`
	Fails  int64  `json:"fails"`
}

// Data is what went over the wire (bytes read and written on the
// connections, headers included), and the object bytes of the uploads the
// server acknowledged during the load (what Plan announced).
type Data struct {
	SentBytes      int64   `json:"sent_bytes"`
	ReceivedBytes  int64   `json:"received_bytes"`
	SentPerSec     float64 `json:"sent_per_s"`
	ReceivedPerSec float64 `json:"received_per_s"`
	UploadedBytes  int64   `json:"uploaded_bytes"`
}

const mib = 1 << 20

// Audit is the integrity check after the run: every upload acknowledged
// with a 2xx is read back and its SHA-256 compared.
type Audit struct {
	Enabled      bool     `json:"enabled"`
	Skipped      string   `json:"skipped,omitempty"` // why it did not run
	Acknowledged int64    `json:"acknowledged"`
	Deleted      int64    `json:"deleted"` // deleted on purpose by the scenario; not checked
	Verified     int64    `json:"verified"`
	Missing      int64    `json:"missing"`
	Corrupt      int64    `json:"corrupt"`
	Unverified   int64    `json:"unverified"` // could not be read (errors other than not found)
	Samples      []string `json:"samples,omitempty"`
	DurationS    float64  `json:"duration_s"`
}

// OK reports whether the audit found nothing wrong.
func (a Audit) OK() bool { return a.Missing == 0 && a.Corrupt == 0 && a.Unverified == 0 }

// Cleanup is what the run deleted of what it created on the target
// after the audit: its objects, the S3 bucket it created, unfinished
// direct uploads, S3 keys and accounts.
type Cleanup struct {
	Enabled   bool     `json:"enabled"` // false with --keep, or when the run created nothing
	Objects   int64    `json:"objects"`
	Uploads   int64    `json:"uploads"` // unfinished direct uploads aborted
	Buckets   int64    `json:"buckets"`
	Keys      int64    `json:"keys"`
	Accounts  int64    `json:"accounts"`
	Warnings  []string `json:"warnings,omitempty"` // what could not be deleted, and why
	Kept      string   `json:"kept,omitempty"`     // with --keep: what the run left
	DurationS float64  `json:"duration_s"`
}

// Summary says in one line what the cleanup deleted.
func (c Cleanup) Summary() string {
	return fmt.Sprintf("deleted %d objects, %d unfinished uploads, %d buckets, %d keys, %d accounts",
		c.Objects, c.Uploads, c.Buckets, c.Keys, c.Accounts)
}

// Server is what was sampled from the server's /metrics.
type Server struct {
	MetricsURL string   `json:"metrics_url,omitempty"`
	Note       string   `json:"note,omitempty"`
	Samples    []Sample `json:"samples"`
}

// Sample is one reading of the server's metrics.
type Sample struct {
	T          float64 `json:"t_s"`
	RSSBytes   float64 `json:"rss_bytes"`
	Goroutines float64 `json:"goroutines"`
}

// Point is one interval (normally a second) of the run.
type Point struct {
	T        float64 `json:"t_s"` // end of the interval
	Requests int64   `json:"requests"`
	RPS      float64 `json:"rps"`
	P50MS    float64 `json:"p50_ms"`
	P95MS    float64 `json:"p95_ms"`
	P99MS    float64 `json:"p99_ms"`
	Errors   int64   `json:"errors"`
	Shed     int64   `json:"shed"`
	VUs      int     `json:"vus"`
	Target   string  `json:"target,omitempty"` // compare runs: which endpoint
}

// Comparison is the same load run against a second endpoint in
// alternating rounds.
type Comparison struct {
	Target string  `json:"target"`
	Rounds int     `json:"rounds"`
	Result *Result `json:"result"`
	Ratios []Ratio `json:"ratios"`
}

// Ratio compares one metric: A is the main target, B the compared one.
type Ratio struct {
	Metric string  `json:"metric"`
	A      float64 `json:"a"`
	B      float64 `json:"b"`
	Ratio  float64 `json:"ratio"`  // A / B (0 when B is 0)
	Better string  `json:"better"` // "higher" or "lower"
}

// JSON writes r as indented JSON.
func JSON(w io.Writer, r *Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// Ratios compares the headline metrics of a and b.
func Ratios(a, b *Result) []Ratio {
	row := func(metric string, x, y float64, better string) Ratio {
		r := Ratio{Metric: metric, A: x, B: y, Better: better}
		if y != 0 {
			r.Ratio = x / y
		}
		return r
	}
	out := []Ratio{
		row("requests/s", a.Requests.RPS, b.Requests.RPS, "higher"),
		row("sent MiB/s", a.Data.SentPerSec/mib, b.Data.SentPerSec/mib, "higher"),
		row("received MiB/s", a.Data.ReceivedPerSec/mib, b.Data.ReceivedPerSec/mib, "higher"),
		row("latency avg ms", a.LatencyMS.Avg, b.LatencyMS.Avg, "lower"),
		row("latency p50 ms", a.LatencyMS.P50, b.LatencyMS.P50, "lower"),
		row("latency p95 ms", a.LatencyMS.P95, b.LatencyMS.P95, "lower"),
		row("latency p99 ms", a.LatencyMS.P99, b.LatencyMS.P99, "lower"),
		row("error rate", a.Requests.ErrorRate, b.Requests.ErrorRate, "lower"),
	}
	bEP := map[string]Endpoint{}
	for _, e := range b.Endpoints {
		bEP[e.Name] = e
	}
	for _, e := range a.Endpoints {
		o, ok := bEP[e.Name]
		if !ok {
			continue
		}
		out = append(out,
			row(e.Name+" requests/s", e.RPS, o.RPS, "higher"),
			row(e.Name+" p50 ms", e.LatencyMS.P50, o.LatencyMS.P50, "lower"),
			row(e.Name+" p95 ms", e.LatencyMS.P95, o.LatencyMS.P95, "lower"),
		)
	}
	return out
}

// Growth is how the server's memory and goroutines moved after the
// warm-up: the first sixth of the samples. Start is the median of the
// next sixth, End the median of the last sixth (medians, so one sample
// taken in a burst does not decide it), Max the highest after warm-up.
type Growth struct {
	WarmupS                  float64
	StartRSS, EndRSS, MaxRSS float64
	StartG, EndG, MaxG       float64
	Samples                  int
}

// AfterWarmup measures the growth after the warm-up; ok is false with
// fewer than 12 samples.
func (s Server) AfterWarmup() (g Growth, ok bool) {
	n := len(s.Samples)
	if n < 12 {
		return g, false
	}
	k := n / 6
	after := s.Samples[k:]
	med := func(ss []Sample, f func(Sample) float64) float64 {
		v := make([]float64, len(ss))
		for i, x := range ss {
			v[i] = f(x)
		}
		sort.Float64s(v)
		return v[len(v)/2]
	}
	rss := func(x Sample) float64 { return x.RSSBytes }
	gor := func(x Sample) float64 { return x.Goroutines }
	g = Growth{WarmupS: s.Samples[k].T, Samples: len(after),
		StartRSS: med(s.Samples[k:2*k], rss), EndRSS: med(s.Samples[n-k:], rss),
		StartG: med(s.Samples[k:2*k], gor), EndG: med(s.Samples[n-k:], gor)}
	for _, x := range after {
		g.MaxRSS = max(g.MaxRSS, x.RSSBytes)
		g.MaxG = max(g.MaxG, x.Goroutines)
	}
	return g, true
}
