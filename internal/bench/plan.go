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
	case "upload-proxy", "upload-direct", "s3-put":
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

// writePlan says, before the run, how much it will write on the target
// (o with defaults, m its load model, over targets endpoints): exactly for
// the setup, and for the load an estimate at a constant arrival rate or,
// when VUs run as fast as the server answers, the bytes per iteration (a
// projection follows once the load runs).
func writePlan(o Options, m model, targets int) []string {
	info := scenarios[o.Scenario]
	var lines []string
	where := ""
	if targets > 1 {
		where = fmt.Sprintf(" on each of %d endpoints", targets)
	}
	if n, b := info.setupWrites(o); n > 0 {
		each := report.IBytes(float64(o.Size))
		if o.Scenario == "proxy-soak" {
			each = "1 KiB to 10 MiB"
		}
		lines = append(lines, fmt.Sprintf("the setup will upload %s%s (%d objects × %s)", report.IBytes(float64(b)), where, n, each))
	}
	per := info.writes(o)
	load := m.duration * time.Duration(o.Rounds)
	switch {
	case per == 0:
		lines = append(lines, "the load uploads nothing")
	case m.mode == modeArrivalRate:
		total := m.rate * load.Seconds() * float64(per)
		lines = append(lines, fmt.Sprintf("the load will upload about %s%s (%g it/s × %s × %s)",
			report.IBytes(total), where, m.rate, load, report.IBytes(float64(per))))
	default:
		lines = append(lines, fmt.Sprintf("the load uploads %s per iteration with up to %d VUs for %s%s: how much in all depends on the server's speed (a projection follows after %s)",
			report.IBytes(float64(per)), m.vus, load, where, projectAfter))
	}
	if o.Keep {
		lines = append(lines, "--keep: what the run creates stays on the target")
	} else if per > 0 || info.uploads {
		lines = append(lines, "the run deletes what it created after the audit (--keep leaves it)")
	}
	return lines
}

// projectAfter is when a closed-model run projects its writes.
const projectAfter = 2 * time.Second

// projection extrapolates what the load will have sent by its end from
// what it sent in its first el.
func projection(el time.Duration, sent int64, total time.Duration) string {
	rate := float64(sent) / max(el.Seconds(), 0.001)
	return fmt.Sprintf("sent %s in %s (%s/s): about %s by the end of the load (%s)",
		report.IBytes(float64(sent)), el.Round(100*time.Millisecond), report.IBytes(rate), report.IBytes(rate*total.Seconds()), total)
}
