// Package metrics owns Coffer's Prometheus registry (no global state) and
// the HTTP instrumentation every listener shares.
package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/coffer-storage/coffer/internal/memo"
)

// Metrics holds the registry and the collectors Coffer updates directly.
type Metrics struct {
	Registry *prometheus.Registry

	requests  *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	bytesIn   *prometheus.CounterVec
	bytesOut  *prometheus.CounterVec
	inFlight  *prometheus.GaugeVec
	Rejected  *prometheus.CounterVec
	startTime time.Time
	observed  memo.Map[obsKey, *obsChildren] // see children
	metaOps   *storeOps
	blobOps   *storeOps
}

// New returns Metrics with Go runtime and process collectors registered.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		Registry: reg,
		observed: memo.Map[obsKey, *obsChildren]{Max: maxObserved},
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "coffer_http_requests_total", Help: "HTTP requests by API, route, method and status code.",
		}, []string{"api", "route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "coffer_http_request_duration_seconds",
			Help:    "HTTP request duration by API and route, from headers read to response written.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}, []string{"api", "route"}),
		bytesIn: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "coffer_http_request_bytes_total", Help: "Request body bytes received, by API.",
		}, []string{"api"}),
		bytesOut: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "coffer_http_response_bytes_total", Help: "Response body bytes sent, by API.",
		}, []string{"api"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "coffer_http_in_flight_requests", Help: "Requests being served, by API.",
		}, []string{"api"}),
		Rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "coffer_http_rejected_total", Help: "Requests refused by admission control, by API, class and reason (per_client, max_in_flight, overload).",
		}, []string{"api", "class", "reason"}),
		startTime: time.Now(),
		metaOps: newStoreOps("coffer_meta_op_duration_seconds",
			"Metadata operations (statements, transactions, the backends' own operations) by name, from start to end."),
		blobOps: newStoreOps("coffer_blob_op_duration_seconds",
			"Blob store operations by kind: put (the whole body written and durable), get (until the reader is open), stat, delete, list."),
	}
	reg.MustRegister(m.requests, m.duration, m.bytesIn, m.bytesOut, m.inFlight, m.Rejected, m.metaOps.vec, m.blobOps.vec,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}

// InFlight returns the in-flight gauge of an API.
func (m *Metrics) InFlight(api string) prometheus.Gauge { return m.inFlight.WithLabelValues(api) }

// Observe records one finished request.
func (m *Metrics) Observe(api, route string, status int, d time.Duration, in, out int64) {
	if route == "" {
		route = "unmatched"
	}
	c := m.children(api, route, status)
	c.requests.Inc()
	c.duration.Observe(d.Seconds())
	if in > 0 {
		c.bytesIn.Add(float64(in))
	}
	if out > 0 {
		c.bytesOut.Add(float64(out))
	}
}

// observed holds the children Observe updates, by API, route and status:
// WithLabelValues hashes and checks its label values, and formats the
// status, on every call, and a vector's child never changes (none is ever
// deleted). At most maxObserved keys (routes are few: a
// label); the others are looked up on every request.
type obsKey struct {
	api, route string
	status     int
}

type obsChildren struct {
	requests          prometheus.Counter
	duration          prometheus.Observer
	bytesIn, bytesOut prometheus.Counter
}

const maxObserved = 1024

func (m *Metrics) children(api, route string, status int) *obsChildren {
	k := obsKey{api, route, status}
	if c, ok := m.observed.Get(k); ok {
		return c
	}
	c := &obsChildren{
		requests: m.requests.WithLabelValues(api, route, strconv.Itoa(status)),
		duration: m.duration.WithLabelValues(api, route),
		bytesIn:  m.bytesIn.WithLabelValues(api),
		bytesOut: m.bytesOut.WithLabelValues(api),
	}
	m.observed.Put(k, c)
	return c
}

// GaugeFunc registers a gauge computed on scrape. labels are constant
// label pairs (name, value, name, value, ...); a name may be registered
// several times with different label values.
func (m *Metrics) GaugeFunc(name, help string, f func() float64, labels ...string) {
	cl := prometheus.Labels{}
	for i := 0; i+1 < len(labels); i += 2 {
		cl[labels[i]] = labels[i+1]
	}
	m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: cl}, f))
}

// CounterFunc registers a counter computed on scrape; labels as in
// GaugeFunc.
func (m *Metrics) CounterFunc(name, help string, f func() float64, labels ...string) {
	cl := prometheus.Labels{}
	for i := 0; i+1 < len(labels); i += 2 {
		cl[labels[i]] = labels[i+1]
	}
	m.Registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: cl}, f))
}

// storeOpBuckets are the buckets of the store operation histograms: from
// a cached SQLite read (tens of µs) to a slow remote store (seconds).
var storeOpBuckets = []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// storeOps is a histogram of store operations by op, its children
// remembered (op names are a fixed set: the metadata operations' and the
// blob store's).
type storeOps struct {
	vec      *prometheus.HistogramVec
	children memo.Map[string, prometheus.Observer]
}

func newStoreOps(name, help string) *storeOps {
	return &storeOps{
		vec:      prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: storeOpBuckets}, []string{"op"}),
		children: memo.Map[string, prometheus.Observer]{Max: 256},
	}
}

func (s *storeOps) observe(op string, d time.Duration) {
	c, ok := s.children.Get(op)
	if !ok {
		c = s.vec.WithLabelValues(op)
		s.children.Put(op, c)
	}
	c.Observe(d.Seconds())
}

// MetaOp records one metadata operation (metasql.Observe): the histogram
// coffer_meta_op_duration_seconds{op}.
func (m *Metrics) MetaOp(op string, d time.Duration, _ error) { m.metaOps.observe(op, d) }

// BlobOp records one blob store operation (put: the whole body written;
// get: until the reader is open; stat, delete, list): the histogram
// coffer_blob_op_duration_seconds{op}.
func (m *Metrics) BlobOp(op string, d time.Duration) { m.blobOps.observe(op, d) }
