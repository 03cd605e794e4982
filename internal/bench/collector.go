package bench

import (
	"fmt"
	"sync"
	"time"

	"github.com/coffer-storage/coffer/internal/bench/report"
	"github.com/coffer-storage/coffer/internal/bench/stats"
)

const maxErrorSamples = 10

// collector aggregates the measurements of one target. Every method is
// safe for concurrent use; the critical sections are a few counter
// updates and one histogram increment.
type collector struct {
	mu    sync.Mutex
	epoch time.Time // time 0 of the series

	names   map[string]*nameStats
	order   []string
	all     stats.Histogram
	allOK   stats.Histogram // admitted and answered successfully
	allShed stats.Histogram // deliberately refused: the time to refuse
	total   int64
	failed  int64
	shed    int64
	errors  map[string]int64
	shedBy  map[string]int64
	samples []errorSample

	iters, itersFailed, itersInterrupted, dropped int64
	iterHist                                      stats.Histogram

	trends     map[string]*stats.Histogram
	trendOrder []string

	checks     map[string]*report.Check
	checkOrder []string

	// the current interval of the time series
	iv                   stats.Histogram
	ivReq, ivErr, ivShed int64
	series               []report.Point
	active               time.Duration // time under load, summed over rounds
}

// errorSample is one distinct failure message and how often it was seen.
type errorSample struct {
	msg string
	n   int64
}

type nameStats struct {
	count, failed, shed int64
	hist, ok, shedHist  stats.Histogram
}

func newCollector(epoch time.Time) *collector {
	return &collector{
		epoch:  epoch,
		names:  map[string]*nameStats{},
		errors: map[string]int64{},
		shedBy: map[string]int64{},
		trends: map[string]*stats.Histogram{},
		checks: map[string]*report.Check{},
	}
}

// request records one request. responded says whether d is a real latency
// (a response arrived); class and msg describe a failure or shed.
func (c *collector) request(name string, d time.Duration, responded bool, oc outcome, class, msg string) {
	if oc == outcomeCanceled {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ns := c.names[name]
	if ns == nil {
		ns = &nameStats{}
		c.names[name] = ns
		c.order = append(c.order, name)
	}
	ns.count++
	c.total++
	c.ivReq++
	if responded {
		ns.hist.RecordDuration(d)
		c.all.RecordDuration(d)
		c.iv.RecordDuration(d)
		switch oc {
		case outcomeOK:
			ns.ok.RecordDuration(d)
			c.allOK.RecordDuration(d)
		case outcomeShed:
			ns.shedHist.RecordDuration(d)
			c.allShed.RecordDuration(d)
		}
	}
	switch oc {
	case outcomeFailed:
		ns.failed++
		c.failed++
		c.ivErr++
		c.errors[class]++
		c.sample(name, class, msg)
	case outcomeShed:
		ns.shed++
		c.shed++
		c.ivShed++
		c.shedBy[class]++
	}
}

// fail turns an already recorded successful request into a failure (its
// response arrived but its content failed a check).
func (c *collector) fail(name, class, msg string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ns := c.names[name]; ns != nil {
		ns.failed++
	}
	c.failed++
	c.ivErr++
	c.errors[class]++
	c.sample(name, class, msg)
}

// sample keeps the first few distinct failure messages.
func (c *collector) sample(name, class, msg string) {
	m := fmt.Sprintf("%s: %s: %s", name, class, msg)
	for i := range c.samples {
		if c.samples[i].msg == m {
			c.samples[i].n++
			return
		}
	}
	if len(c.samples) < maxErrorSamples {
		c.samples = append(c.samples, errorSample{msg: m, n: 1})
	}
}

func (c *collector) check(name string, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := c.checks[name]
	if ch == nil {
		ch = &report.Check{Name: name}
		c.checks[name] = ch
		c.checkOrder = append(c.checkOrder, name)
	}
	if ok {
		ch.Passes++
	} else {
		ch.Fails++
	}
}

func (c *collector) trend(name string, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.trends[name]
	if h == nil {
		h = &stats.Histogram{}
		c.trends[name] = h
		c.trendOrder = append(c.trendOrder, name)
	}
	h.RecordDuration(d)
}

func (c *collector) iteration(d time.Duration, oc outcome) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch oc {
	case outcomeOK:
		c.iters++
		c.iterHist.RecordDuration(d)
	case outcomeFailed:
		c.iters++
		c.itersFailed++
		c.iterHist.RecordDuration(d)
	default:
		c.itersInterrupted++
	}
}

func (c *collector) droppedIteration() {
	c.mu.Lock()
	c.dropped++
	c.mu.Unlock()
}

// tick closes the current interval (of length dt, ending now) and appends
// it to the series.
func (c *collector) tick(now time.Time, dt time.Duration, vus int, label string) report.Point {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := report.Point{
		T:        now.Sub(c.epoch).Seconds(),
		Requests: c.ivReq,
		P50MS:    float64(c.iv.Quantile(0.50)) / 1e6,
		P95MS:    float64(c.iv.Quantile(0.95)) / 1e6,
		P99MS:    float64(c.iv.Quantile(0.99)) / 1e6,
		Errors:   c.ivErr,
		Shed:     c.ivShed,
		VUs:      vus,
		Target:   label,
	}
	if dt > 0 {
		p.RPS = float64(c.ivReq) / dt.Seconds()
	}
	c.series = append(c.series, p)
	c.iv.Reset()
	c.ivReq, c.ivErr, c.ivShed = 0, 0, 0
	return p
}

func (c *collector) addActive(d time.Duration) {
	c.mu.Lock()
	c.active += d
	c.mu.Unlock()
}

// totals returns the request, failure and shed counts so far.
func (c *collector) totals() (total, failed, shed int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total, c.failed, c.shed
}

// fill writes the collected measurements into r.
func (c *collector) fill(r *report.Result) {
	c.mu.Lock()
	defer c.mu.Unlock()
	secs := c.active.Seconds()
	rate := func(n int64) float64 {
		if secs <= 0 {
			return 0
		}
		return float64(n) / secs
	}
	r.DurationS = secs
	r.Requests = report.Requests{Total: c.total, Failed: c.failed, Shed: c.shed, RPS: rate(c.total)}
	if c.total > 0 {
		r.Requests.ErrorRate = float64(c.failed) / float64(c.total)
	}
	r.LatencyMS = c.all.SummarizeMillis()
	r.OKLatencyMS = c.allOK.SummarizeMillis()
	r.ShedLatencyMS = nil
	if c.shed > 0 {
		s := c.allShed.SummarizeMillis()
		r.ShedLatencyMS = &s
	}
	r.Endpoints = nil
	for _, n := range c.order {
		ns := c.names[n]
		e := report.Endpoint{
			Name: n, Count: ns.count, Failed: ns.failed, Shed: ns.shed, RPS: rate(ns.count),
			LatencyMS: ns.hist.SummarizeMillis(), OKLatencyMS: ns.ok.SummarizeMillis(),
		}
		if ns.shed > 0 {
			s := ns.shedHist.SummarizeMillis()
			e.ShedLatencyMS = &s
		}
		r.Endpoints = append(r.Endpoints, e)
	}
	r.Iterations = report.Iterations{
		Total: c.iters, Failed: c.itersFailed, Interrupted: c.itersInterrupted, Dropped: c.dropped,
		Rate: rate(c.iters), DurationMS: c.iterHist.SummarizeMillis(),
	}
	r.Trends = nil
	for _, n := range c.trendOrder {
		r.Trends = append(r.Trends, report.Trend{Name: n, MS: c.trends[n].SummarizeMillis()})
	}
	r.Checks = []report.Check{}
	for _, n := range c.checkOrder {
		r.Checks = append(r.Checks, *c.checks[n])
	}
	r.Errors = copyMap(c.errors)
	r.Shed = copyMap(c.shedBy)
	r.ErrorSamples = nil
	for _, e := range c.samples {
		r.ErrorSamples = append(r.ErrorSamples, fmt.Sprintf("%s (×%d)", e.msg, e.n))
	}
	r.Series = append([]report.Point{}, c.series...)
}

func copyMap(m map[string]int64) map[string]int64 {
	out := make(map[string]int64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
