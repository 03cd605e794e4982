package report

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/coffer-storage/coffer/internal/bench/stats"
)

// Text writes the terminal summary of r.
func Text(w io.Writer, r *Result) error {
	tw := &errWriter{w: w}
	text(tw, r)
	if r.Compare != nil {
		fmt.Fprintf(tw, "\n==== compared endpoint: %s ====\n", r.Compare.Target)
		text(tw, r.Compare.Result)
		fmt.Fprintf(tw, "\n==== %s (A) vs %s (B), %d alternating rounds each ====\n", r.S3Target, r.Compare.Target, r.Compare.Rounds)
		CompareTable(tw, r.Compare.Ratios)
	}
	return tw.err
}

// CompareTable writes the ratio table of a comparison.
func CompareTable(w io.Writer, ratios []Ratio) {
	nw := len("metric")
	for _, x := range ratios {
		nw = max(nw, len(x.Metric))
	}
	t := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(t, "  %-*s\tA\tB\tA/B\t\t\n", nw, "metric")
	for _, x := range ratios {
		verdict := ""
		switch {
		case x.B == 0 || x.A == x.B:
		case (x.A > x.B) == (x.Better == "higher"):
			verdict = "A better"
		default:
			verdict = "B better"
		}
		ratio := "-"
		if x.B != 0 {
			ratio = fmt.Sprintf("%.2f", x.Ratio)
		}
		fmt.Fprintf(t, "  %-*s\t%s\t%s\t%s\t%s\t\n", nw, x.Metric, num(x.A), num(x.B), ratio, verdict)
	}
	t.Flush()
}

func text(w io.Writer, r *Result) {
	fmt.Fprintf(w, "\n  scenario: %s", r.Scenario)
	if r.Target != "" {
		fmt.Fprintf(w, "   target: %s", r.Target)
	}
	if r.S3Target != "" {
		fmt.Fprintf(w, "   s3: %s", r.S3Target)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  load:     %s", loadLine(r.Load))
	fmt.Fprintf(w, "   ran %.1fs", r.DurationS)
	if r.Interrupted {
		fmt.Fprint(w, " (INTERRUPTED: partial results)")
	}
	fmt.Fprintln(w)
	s := r.Setup
	fmt.Fprintf(w, "  setup:    %d users, %d sessions, %d objects (%s) in %.1fs (%d retries after 429/503), not counted\n\n",
		s.Users, s.Sessions, s.Objects, IBytes(float64(s.Bytes)), s.DurationS, s.Retries)

	var passes, fails int64
	for _, c := range r.Checks {
		passes += c.Passes
		fails += c.Fails
	}
	dots(w, "checks", fmt.Sprintf("%s  ✓ %d  ✗ %d", pct(passes, passes+fails), passes, fails))
	for _, c := range r.Checks {
		mark := "✓"
		if c.Fails > 0 {
			mark = "✗"
		}
		fmt.Fprintf(w, "    %s %-40s ✓ %-8d ✗ %d\n", mark, c.Name, c.Passes, c.Fails)
	}
	fmt.Fprintln(w)

	// Names are padded by hand: the table aligns numbers to the right.
	nw := len("request")
	for _, e := range r.Endpoints {
		nw = max(nw, len(e.Name))
	}
	for _, tr := range r.Trends {
		nw = max(nw, len(tr.Name))
	}
	t := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(t, "  %-*s\tcount\trate\tfailed\tshed\tmin\tavg\tp50\tp90\tp95\tp99\tmax\t\n", nw, "request")
	row := func(name string, count, failed, shed int64, rps float64, l stats.Summary) {
		rate, fs, ss := fmt.Sprintf("%.1f/s", rps), fmt.Sprint(failed), fmt.Sprint(shed)
		if failed < 0 { // a timing, not requests
			rate, fs, ss = "-", "-", "-"
		}
		fmt.Fprintf(t, "  %-*s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", nw, name, count, rate, fs, ss,
			ms(l.Min), ms(l.Avg), ms(l.P50), ms(l.P90), ms(l.P95), ms(l.P99), ms(l.Max))
	}
	for _, e := range r.Endpoints {
		row(e.Name, e.Count, e.Failed, e.Shed, e.RPS, e.LatencyMS)
	}
	if len(r.Endpoints) != 1 {
		row("all", r.Requests.Total, r.Requests.Failed, r.Requests.Shed, r.Requests.RPS, r.LatencyMS)
	}
	for _, tr := range r.Trends {
		row(tr.Name, int64(tr.MS.Count), -1, -1, 0, tr.MS)
	}
	t.Flush()
	fmt.Fprintln(w)

	it := r.Iterations
	dots(w, "iterations", fmt.Sprintf("%d  %.1f/s  failed %d  interrupted %d  dropped %d", it.Total, it.Rate, it.Failed, it.Interrupted, it.Dropped))
	d := it.DurationMS
	dots(w, "iteration_duration", fmt.Sprintf("avg=%s p50=%s p90=%s p95=%s p99=%s max=%s", ms(d.Avg), ms(d.P50), ms(d.P90), ms(d.P95), ms(d.P99), ms(d.Max)))
	dots(w, "data_sent", fmt.Sprintf("%s  %s/s", IBytes(float64(r.Data.SentBytes)), IBytes(r.Data.SentPerSec)))
	dots(w, "data_received", fmt.Sprintf("%s  %s/s", IBytes(float64(r.Data.ReceivedBytes)), IBytes(r.Data.ReceivedPerSec)))
	if p := r.Plan; p.PerIteration > 0 {
		planned := fmt.Sprintf("%s per iteration", IBytes(float64(p.PerIteration)))
		if p.LoadBytes > 0 {
			planned = "about " + IBytes(float64(p.LoadBytes))
		}
		dots(w, "data_uploaded", fmt.Sprintf("%s  acknowledged object bytes (announced: %s)", IBytes(float64(r.Data.UploadedBytes)), planned))
	}
	dots(w, "requests_failed", fmt.Sprintf("%s  %d of %d", pct(r.Requests.Failed, r.Requests.Total), r.Requests.Failed, r.Requests.Total))
	dots(w, "errors", classes(r.Errors))
	dots(w, "shed (429/503 + Retry-After)", classes(r.Shed))
	if r.ShedLatencyMS != nil {
		dots(w, "time to shed", summaryStr(*r.ShedLatencyMS))
		dots(w, "admitted and ok", summaryStr(r.OKLatencyMS))
	}
	for _, e := range r.ErrorSamples {
		fmt.Fprintf(w, "    e.g. %s\n", e)
	}

	a := r.Audit
	switch {
	case !a.Enabled:
		dots(w, "audit", "off")
	case a.Skipped != "":
		dots(w, "audit", "skipped: "+a.Skipped)
	default:
		verdict := "OK"
		if !a.OK() {
			verdict = "FAILED"
		}
		dots(w, "audit", fmt.Sprintf("%s  acknowledged %d  verified %d  missing %d  corrupt %d  unverified %d  deleted %d  (%.1fs)",
			verdict, a.Acknowledged, a.Verified, a.Missing, a.Corrupt, a.Unverified, a.Deleted, a.DurationS))
		for _, s := range a.Samples {
			fmt.Fprintf(w, "    %s\n", s)
		}
	}
	switch c := r.Cleanup; {
	case c.Enabled:
		verdict := "OK"
		if len(c.Warnings) > 0 {
			verdict = "INCOMPLETE"
		}
		dots(w, "cleanup", fmt.Sprintf("%s  %s  (%.1fs)", verdict, c.Summary(), c.DurationS))
		for _, s := range c.Warnings {
			fmt.Fprintf(w, "    warning: %s\n", s)
		}
	case c.Kept != "":
		dots(w, "cleanup", c.Kept)
	}
	if n := len(r.Server.Samples); n > 0 {
		first, last := r.Server.Samples[0], r.Server.Samples[n-1]
		var maxRSS, maxG float64
		for _, s := range r.Server.Samples {
			maxRSS = max(maxRSS, s.RSSBytes)
			maxG = max(maxG, s.Goroutines)
		}
		dots(w, "server_rss", fmt.Sprintf("start %s  end %s  max %s", IBytes(first.RSSBytes), IBytes(last.RSSBytes), IBytes(maxRSS)))
		dots(w, "server_goroutines", fmt.Sprintf("start %.0f  end %.0f  max %.0f", first.Goroutines, last.Goroutines, maxG))
		if g, ok := r.Server.AfterWarmup(); ok {
			dots(w, "after_warmup", fmt.Sprintf("from %.0fs: rss %s -> %s (%+.1f MiB, max %s)  goroutines %.0f -> %.0f (%+.0f, max %.0f)",
				g.WarmupS, IBytes(g.StartRSS), IBytes(g.EndRSS), (g.EndRSS-g.StartRSS)/(1<<20), IBytes(g.MaxRSS),
				g.StartG, g.EndG, g.EndG-g.StartG, g.MaxG))
		}
	} else if r.Server.Note != "" {
		dots(w, "server", r.Server.Note)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
}

func loadLine(l Load) string {
	var b strings.Builder
	switch l.Mode {
	case "ramping-vus":
		var st []string
		for _, s := range l.Stages {
			st = append(st, fmt.Sprintf("%s:%d", s.Duration, s.Target))
		}
		fmt.Fprintf(&b, "ramping VUs %s (max %d)", strings.Join(st, ","), l.MaxVUs)
	case "constant-arrival-rate":
		fmt.Fprintf(&b, "%g iterations/s for %s (up to %d VUs)", l.Rate, l.Duration, l.MaxVUs)
	default:
		fmt.Fprintf(&b, "%d VUs for %s", l.VUs, l.Duration)
	}
	if l.Rounds > 1 {
		fmt.Fprintf(&b, " × %d rounds", l.Rounds)
	}
	if l.Size > 0 {
		fmt.Fprintf(&b, ", size %s", IBytes(float64(l.Size)))
	}
	if l.Think != "" {
		fmt.Fprintf(&b, ", think %s", l.Think)
	}
	fmt.Fprintf(&b, ", timeout %s", l.Timeout)
	return b.String()
}

func dots(w io.Writer, name, value string) {
	const width = 32
	pad := width - len([]rune(name))
	fmt.Fprintf(w, "  %s%s: %s\n", name, strings.Repeat(".", max(pad, 1)), value)
}

func classes(m map[string]int64) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, "  ")
}

func pct(n, of int64) string {
	if of == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f%%", 100*float64(n)/float64(of))
}

// ms formats a duration given in milliseconds.
func ms(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v < 1:
		return fmt.Sprintf("%.0fµs", v*1000)
	case v < 10:
		return fmt.Sprintf("%.2fms", v)
	case v < 1000:
		return fmt.Sprintf("%.1fms", v)
	default:
		return fmt.Sprintf("%.2fs", v/1000)
	}
}

// IBytes formats a byte count in binary units (1.5 GiB).
func IBytes(v float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f B", v)
	}
	return fmt.Sprintf("%.1f %s", v, units[i])
}

func num(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.4f", v)
	}
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

// summaryStr is a latency summary in one line.
func summaryStr(s stats.Summary) string {
	return fmt.Sprintf("p50=%s p95=%s p99=%s max=%s", ms(s.P50), ms(s.P95), ms(s.P99), ms(s.Max))
}
