package report

import (
	"fmt"
	"html"
	"html/template"
	"io"
	"math"
	"strings"
	"sync"
)

// HTML writes r as one self-contained page: tables and charts (inline
// SVG, no script, no external resource), viewable offline.
func HTML(w io.Writer, r *Result) error {
	return pageTmpl().Execute(w, pageData{R: r, Charts: charts(r), Text: textOf(r)})
}

type pageData struct {
	R      *Result
	Charts []template.HTML
	Text   string
}

func textOf(r *Result) string {
	var b strings.Builder
	Text(&b, r)
	return b.String()
}

// series is one line of a chart.
type series struct {
	name   string
	color  string
	dashed bool
	xs, ys []float64
}

// chart draws lines over time as an SVG.
type chart struct {
	title, unit string
	lines       []series
}

var palette = []string{"#1f77b4", "#ff7f0e", "#d62728", "#2ca02c", "#9467bd", "#8c564b"}

func charts(r *Result) []template.HTML {
	var b *Result
	if r.Compare != nil {
		b = r.Compare.Result
	}
	pick := func(res *Result, f func(Point) float64) (xs, ys []float64) {
		for _, p := range res.Series {
			xs = append(xs, p.T)
			ys = append(ys, f(p))
		}
		return xs, ys
	}
	line := func(name, color string, res *Result, dashed bool, f func(Point) float64) series {
		xs, ys := pick(res, f)
		return series{name: name, color: color, dashed: dashed, xs: xs, ys: ys}
	}
	// withB adds the compared endpoint's lines, dashed.
	withB := func(c chart, fs ...func(Point) float64) chart {
		if b == nil {
			return c
		}
		n := len(c.lines)
		for i := 0; i < n; i++ {
			l := line(c.lines[i].name+" (B)", c.lines[i].color, b, true, fs[i])
			c.lines[i].name += " (A)"
			c.lines = append(c.lines, l)
		}
		return c
	}
	rps := func(p Point) float64 { return p.RPS }
	p50 := func(p Point) float64 { return p.P50MS }
	p95 := func(p Point) float64 { return p.P95MS }
	p99 := func(p Point) float64 { return p.P99MS }
	errs := func(p Point) float64 { return float64(p.Errors) }
	shed := func(p Point) float64 { return float64(p.Shed) }
	vus := func(p Point) float64 { return float64(p.VUs) }

	cs := []chart{
		withB(chart{title: "Requests per second", unit: "req/s", lines: []series{line("requests/s", palette[0], r, false, rps)}}, rps),
		withB(chart{title: "Latency", unit: "ms", lines: []series{
			line("p50", palette[3], r, false, p50), line("p95", palette[1], r, false, p95), line("p99", palette[2], r, false, p99),
		}}, p50, p95, p99),
		withB(chart{title: "Failed and shed requests per interval", unit: "requests", lines: []series{
			line("failed", palette[2], r, false, errs), line("shed (429/503)", palette[4], r, false, shed),
		}}, errs, shed),
		withB(chart{title: "Active VUs", unit: "VUs", lines: []series{line("VUs", palette[5], r, false, vus)}}, vus),
	}
	if len(r.Server.Samples) > 0 {
		var xs, rss, gor []float64
		for _, s := range r.Server.Samples {
			xs = append(xs, s.T)
			rss = append(rss, s.RSSBytes/(1<<20))
			gor = append(gor, s.Goroutines)
		}
		cs = append(cs,
			chart{title: "Server resident memory", unit: "MiB", lines: []series{{name: "RSS", color: palette[0], xs: xs, ys: rss}}},
			chart{title: "Server goroutines", unit: "goroutines", lines: []series{{name: "goroutines", color: palette[1], xs: xs, ys: gor}}},
		)
	}
	// One time axis for every chart, so they line up.
	var span float64
	for _, c := range cs {
		for _, l := range c.lines {
			if n := len(l.xs); n > 0 {
				span = max(span, l.xs[n-1])
			}
		}
	}
	out := make([]template.HTML, len(cs))
	for i, c := range cs {
		out[i] = template.HTML(c.svg(span)) // built from numbers and escaped names only
	}
	return out
}

// niceStep rounds v up to 1, 2, 2.5 or 5 times a power of ten.
func niceStep(v float64) float64 {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if v <= m*p*(1+1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// axis returns the top of an axis showing values up to v, and its step.
func axis(v float64, ticks int) (top, step float64) {
	step = niceStep(v / float64(ticks))
	top = step * math.Ceil(v/step-1e-9)
	if top <= 0 {
		top = step
	}
	return top, step
}

func label(v float64) string {
	switch {
	case v == 0:
		return "0"
	case math.Abs(v) >= 1e6:
		return fmt.Sprintf("%.3gM", v/1e6)
	case math.Abs(v) >= 1e4:
		return fmt.Sprintf("%.3gk", v/1e3)
	case math.Abs(v) >= 10:
		return fmt.Sprintf("%.0f", v)
	default:
		return fmt.Sprintf("%.3g", v)
	}
}

func (c chart) svg(xspan float64) string {
	const (
		W, H                  = 920.0, 260.0
		left, right, top, bot = 64.0, 16.0, 34.0, 34.0
	)
	pw, ph := W-left-right, H-top-bot
	var xmax, ymax float64
	for _, l := range c.lines {
		for i := range l.xs {
			xmax = max(xmax, l.xs[i])
			ymax = max(ymax, l.ys[i])
		}
	}
	xmax = max(xmax, xspan, 1)
	var ystep float64
	ymax, ystep = axis(max(ymax, 1e-9), 4)
	if ymax < 1 && c.unit != "ms" {
		ymax, ystep = 1, 0.25 // counts: do not draw a 0.0001 axis
	}
	_, xstep := axis(xmax, 8)
	x := func(v float64) float64 { return left + v/xmax*pw }
	y := func(v float64) float64 { return top + ph - v/ymax*ph }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %.0f %.0f" role="img" aria-label="%s">`, W, H, html.EscapeString(c.title))
	fmt.Fprintf(&b, `<text x="%.0f" y="18" class="t">%s</text>`, left, html.EscapeString(c.title))
	// Legend.
	lx := left + 8*float64(len(c.title)) + 24
	for _, l := range c.lines {
		dash := ""
		if l.dashed {
			dash = ` stroke-dasharray="5,3"`
		}
		fmt.Fprintf(&b, `<line x1="%.0f" y1="14" x2="%.0f" y2="14" stroke="%s" stroke-width="2"%s/><text x="%.0f" y="18" class="l">%s</text>`,
			lx, lx+18, l.color, dash, lx+22, html.EscapeString(l.name))
		lx += 22 + 7*float64(len(l.name)) + 18
	}
	// Grid and axes.
	for v := 0.0; v <= ymax*(1+1e-9); v += ystep {
		fmt.Fprintf(&b, `<line x1="%.0f" y1="%.1f" x2="%.0f" y2="%.1f" class="g"/><text x="%.0f" y="%.1f" class="a" text-anchor="end">%s</text>`,
			left, y(v), W-right, y(v), left-6, y(v)+4, label(v))
	}
	for v := 0.0; v <= xmax; v += xstep {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" class="a" text-anchor="middle">%ss</text>`, x(v), H-bot+16, label(v))
	}
	fmt.Fprintf(&b, `<text x="12" y="%.0f" class="a" transform="rotate(-90 12 %.0f)" text-anchor="middle">%s</text>`,
		top+ph/2, top+ph/2, html.EscapeString(c.unit))
	// Lines, broken where samples are missing (between compare rounds).
	for _, l := range c.lines {
		dash := ""
		if l.dashed {
			dash = ` stroke-dasharray="5,3"`
		}
		var pts []string
		flush := func() {
			if len(pts) == 1 {
				pts = append(pts, pts[0])
			}
			if len(pts) > 0 {
				fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.6"%s points="%s"/>`, l.color, dash, strings.Join(pts, " "))
			}
			pts = pts[:0]
		}
		gap := medianStep(l.xs) * 3
		for i := range l.xs {
			if i > 0 && gap > 0 && l.xs[i]-l.xs[i-1] > gap {
				flush()
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(l.xs[i]), y(l.ys[i])))
		}
		flush()
	}
	b.WriteString(`</svg>`)
	return b.String()
}

func medianStep(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	d := make([]float64, 0, len(xs)-1)
	for i := 1; i < len(xs); i++ {
		d = append(d, xs[i]-xs[i-1])
	}
	// Partial selection is overkill for a few thousand points.
	for i := range d {
		for j := i + 1; j < len(d); j++ {
			if d[j] < d[i] {
				d[i], d[j] = d[j], d[i]
			}
		}
		if i >= len(d)/2 {
			break
		}
	}
	return d[len(d)/2]
}

// pageTmpl is parsed on first use: parsing it at init cost every coffer
// process, servers included, ~80 KB of heap and the template packages'
// pages (docs/PERFORMANCE.md, "Issue 23, second pass: idle RSS").
var pageTmpl = sync.OnceValue(func() *template.Template { return parsePage() })

func parsePage() *template.Template {
	return template.Must(template.New("page").Funcs(template.FuncMap{
		"ms":     ms,
		"bytes":  IBytes,
		"ibytes": func(n int64) string { return IBytes(float64(n)) },
		"pct":    func(f float64) string { return fmt.Sprintf("%.3f%%", 100*f) },
		"num":    num,
		"f1":     func(f float64) string { return fmt.Sprintf("%.1f", f) },
	}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>coffer bench: {{.R.Scenario}}</title>
<style>
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:960px;color:#222;padding:0 12px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
table{border-collapse:collapse;margin:6px 0;font-variant-numeric:tabular-nums}
td,th{padding:3px 10px;border-bottom:1px solid #eee;text-align:right}th{background:#f6f6f6}
td:first-child,th:first-child{text-align:left}.ok{color:#18794e;font-weight:600}.bad{color:#c62828;font-weight:600}
.meta{color:#555}svg{width:100%;height:auto;margin:10px 0;background:#fff}
svg .g{stroke:#e4e4e4}svg .a{font-size:11px;fill:#666}svg .t{font-size:14px;font-weight:600;fill:#222}svg .l{font-size:12px;fill:#333}
pre{background:#f6f6f6;padding:10px;overflow-x:auto;font-size:12px}
</style></head><body>
{{$r := .R}}
<h1>coffer bench: {{$r.Scenario}}</h1>
<div class="meta">
{{if $r.Target}}target {{$r.Target}} · {{end}}{{if $r.S3Target}}S3 {{$r.S3Target}} · {{end}}started {{$r.Started.Format "2006-01-02 15:04:05 UTC"}} ·
{{f1 $r.DurationS}} s under load · {{$r.Load.Mode}}, up to {{$r.Load.MaxVUs}} VUs{{if $r.Load.Size}} · size {{ibytes $r.Load.Size}}{{end}}
{{if $r.Interrupted}} · <span class="bad">interrupted: partial results</span>{{end}}
</div>

<h2>Summary</h2>
<table>
<tr><th>requests</th><th>rate</th><th>failed</th><th>error rate</th><th>shed (429/503)</th><th>p50</th><th>p95</th><th>p99</th><th>iterations</th><th>sent</th><th>received</th><th>uploaded</th></tr>
<tr><td>{{$r.Requests.Total}}</td><td>{{f1 $r.Requests.RPS}}/s</td><td>{{$r.Requests.Failed}}</td><td>{{pct $r.Requests.ErrorRate}}</td><td>{{$r.Requests.Shed}}</td>
<td>{{ms $r.LatencyMS.P50}}</td><td>{{ms $r.LatencyMS.P95}}</td><td>{{ms $r.LatencyMS.P99}}</td><td>{{$r.Iterations.Total}}</td>
<td>{{bytes $r.Data.SentPerSec}}/s</td><td>{{bytes $r.Data.ReceivedPerSec}}/s</td><td>{{ibytes $r.Data.UploadedBytes}}</td></tr>
</table>
<p>Audit:
{{with $r.Audit}}{{if not .Enabled}}off{{else if .Skipped}}skipped ({{.Skipped}}){{else}}
<span class="{{if .OK}}ok{{else}}bad{{end}}">{{if .OK}}OK{{else}}FAILED{{end}}</span>:
{{.Acknowledged}} acknowledged, {{.Verified}} verified, {{.Missing}} missing, {{.Corrupt}} corrupt, {{.Unverified}} unverified, {{.Deleted}} deleted by the scenario{{end}}{{end}}
</p>
{{with $r.Cleanup}}{{if .Enabled}}<p>Cleanup: {{.Summary}}{{range .Warnings}}<br><span class="bad">{{.}}</span>{{end}}</p>{{else if .Kept}}<p>Cleanup: {{.Kept}}</p>{{end}}{{end}}

{{if $r.Compare}}
<h2>Comparison: {{$r.S3Target}} (A) vs {{$r.Compare.Target}} (B), {{$r.Compare.Rounds}} alternating rounds each</h2>
<table><tr><th>metric</th><th>A</th><th>B</th><th>A/B</th><th>better</th></tr>
{{range $r.Compare.Ratios}}<tr><td>{{.Metric}}</td><td>{{num .A}}</td><td>{{num .B}}</td><td>{{if .B}}{{printf "%.2f" .Ratio}}{{else}}-{{end}}</td><td>{{.Better}}</td></tr>
{{end}}</table>
{{end}}

<h2>Over time</h2>
{{range .Charts}}{{.}}
{{end}}
{{if $r.Server.Note}}<p class="meta">{{$r.Server.Note}}</p>{{end}}

<h2>Requests</h2>
<table><tr><th>request</th><th>count</th><th>rate</th><th>failed</th><th>shed</th><th>min</th><th>avg</th><th>p50</th><th>p90</th><th>p95</th><th>p99</th><th>max</th></tr>
{{range $r.Endpoints}}<tr><td>{{.Name}}</td><td>{{.Count}}</td><td>{{f1 .RPS}}/s</td><td>{{.Failed}}</td><td>{{.Shed}}</td>
<td>{{ms .LatencyMS.Min}}</td><td>{{ms .LatencyMS.Avg}}</td><td>{{ms .LatencyMS.P50}}</td><td>{{ms .LatencyMS.P90}}</td><td>{{ms .LatencyMS.P95}}</td><td>{{ms .LatencyMS.P99}}</td><td>{{ms .LatencyMS.Max}}</td></tr>
{{end}}{{range $r.Trends}}<tr><td>{{.Name}}</td><td>{{.MS.Count}}</td><td>-</td><td>-</td><td>-</td>
<td>{{ms .MS.Min}}</td><td>{{ms .MS.Avg}}</td><td>{{ms .MS.P50}}</td><td>{{ms .MS.P90}}</td><td>{{ms .MS.P95}}</td><td>{{ms .MS.P99}}</td><td>{{ms .MS.Max}}</td></tr>
{{end}}{{with $r.Iterations}}<tr><td>iteration</td><td>{{.Total}}</td><td>{{f1 .Rate}}/s</td><td>{{.Failed}}</td><td>{{.Interrupted}} interrupted</td>
<td>{{ms .DurationMS.Min}}</td><td>{{ms .DurationMS.Avg}}</td><td>{{ms .DurationMS.P50}}</td><td>{{ms .DurationMS.P90}}</td><td>{{ms .DurationMS.P95}}</td><td>{{ms .DurationMS.P99}}</td><td>{{ms .DurationMS.Max}}</td></tr>{{end}}
</table>

<h2>Checks</h2>
<table><tr><th>check</th><th>passed</th><th>failed</th></tr>
{{range $r.Checks}}<tr><td>{{.Name}}</td><td>{{.Passes}}</td><td{{if .Fails}} class="bad"{{end}}>{{.Fails}}</td></tr>
{{end}}</table>

<h2>Errors</h2>
{{if $r.Errors}}<table><tr><th>class</th><th>failed requests</th></tr>
{{range $k, $v := $r.Errors}}<tr><td>{{$k}}</td><td>{{$v}}</td></tr>{{end}}</table>{{else}}<p>No failed requests.</p>{{end}}
{{if $r.Shed}}<table><tr><th>shed on purpose</th><th>requests</th></tr>
{{range $k, $v := $r.Shed}}<tr><td>{{$k}}</td><td>{{$v}}</td></tr>{{end}}</table>{{end}}
{{range $r.ErrorSamples}}<div class="meta">e.g. {{.}}</div>{{end}}
{{range $r.Audit.Samples}}<div class="bad">{{.}}</div>{{end}}

<h2>Terminal summary</h2>
<pre>{{.Text}}</pre>
</body></html>
`))
}
