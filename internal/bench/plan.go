package bench

import (
	"fmt"
	"time"

	"github.com/coffer-storage/coffer/internal/bench/report"
)

// writes is how many bytes one iteration of the scenario uploads on
// average with options o (withDefaults applied).
func (info scenarioInfo) writes(o Options) int64 {
	switch o.Scenario {
	case "upload-proxy", "upload-direct", "tus", "s3-put":
		return o.Size
	case "batch":
		return batchFiles * o.Size
	case "s3-mixed":
		return o.Size * 30 / 100 // 30% of the iterations PUT
	}
	return 0
}

// setupWrites is how many objects, and bytes, the setup uploads per
// target for the reads.
func (info scenarioInfo) setupWrites(o Options) (objects, bytes int64) {
	switch o.Scenario {
	case "read":
		objects = int64(o.Users) * readPageSize
	case "stream", "soak", "share":
		objects = int64(o.Users)
	case "s3-get", "s3-mixed":
		objects = int64(o.Objects)
	case "proxy-get", "proxy-stream", "proxy-soak":
		small, medium, large := proxyCounts(o)
		return int64(small + medium + large), int64(small)*o.Size + int64(medium)*proxyMedium + int64(large)*proxyLarge
	}
	return objects, objects * o.Size
}

// newPlan is what a run with options o (withDefaults applied) and load
// model m will write on each target.
func newPlan(o Options, m model) report.Plan {
	info := scenarios[o.Scenario]
	_, setup := info.setupWrites(o)
	p := report.Plan{SetupBytes: setup, PerIteration: info.writes(o)}
	if m.mode == modeArrivalRate {
		p.LoadBytes = m.arrivals() * int64(o.Rounds) * p.PerIteration
	}
	return p
}

// writePlan says, before the run, how much it will write on the target
// (o with defaults, m its load model, over targets endpoints): exactly for
// the setup, and for the load an estimate at a constant arrival rate or,
// when VUs run as fast as the server answers, the bytes per iteration (a
// projection follows once the load runs). The report's setup bytes and
// uploaded bytes are the same quantities, measured.
func writePlan(o Options, m model, targets int) []string {
	info := scenarios[o.Scenario]
	p := newPlan(o, m)
	var lines []string
	where := ""
	if targets > 1 {
		where = fmt.Sprintf(" on each of %d endpoints", targets)
	}
	if n, _ := info.setupWrites(o); n > 0 {
		each := report.IBytes(float64(o.Size))
		if o.Scenario == "proxy-soak" {
			each = "1 KiB to 10 MiB"
		}
		lines = append(lines, fmt.Sprintf("the setup will upload %s%s (%d objects × %s)", report.IBytes(float64(p.SetupBytes)), where, n, each))
	}
	load := m.duration * time.Duration(o.Rounds)
	avg := ""
	if o.Scenario == "s3-mixed" {
		avg = " on average"
	}
	switch {
	case p.PerIteration == 0:
		lines = append(lines, "the load uploads nothing")
	case m.mode == modeArrivalRate:
		lines = append(lines, fmt.Sprintf("the load will upload about %s%s (%g it/s × %s = %d iterations × %s%s)",
			report.IBytes(float64(p.LoadBytes)), where, m.rate, load, m.arrivals()*int64(o.Rounds), report.IBytes(float64(p.PerIteration)), avg))
	default:
		lines = append(lines, fmt.Sprintf("the load uploads %s per iteration%s with up to %d VUs for %s%s: how much in all depends on the server's speed (a projection follows after %s)",
			report.IBytes(float64(p.PerIteration)), avg, m.vus, load, where, projectAfter))
	}
	if o.Keep {
		lines = append(lines, "--keep: what the run creates stays on the target")
	} else if p.PerIteration > 0 || info.uploads {
		lines = append(lines, "the run deletes what it created after the audit (--keep leaves it)")
	}
	return lines
}

// projectAfter is when a closed-model run projects its writes.
const projectAfter = 2 * time.Second

// projection extrapolates what the load will have uploaded by its end
// from the uploads acknowledged in its first el.
func projection(el time.Duration, uploaded int64, total time.Duration) string {
	rate := float64(uploaded) / max(el.Seconds(), 0.001)
	return fmt.Sprintf("uploaded %s in %s (%s/s): about %s by the end of the load (%s)",
		report.IBytes(float64(uploaded)), el.Round(100*time.Millisecond), report.IBytes(rate), report.IBytes(rate*total.Seconds()), total)
}
