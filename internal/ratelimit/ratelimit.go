// Package ratelimit is Coffer's admission control: it decides, before a
// request does any work, whether the node serves it now or refuses it at
// once (429 or 503 with Retry-After) instead of letting it queue.
//
// Three bounds apply to every request of every listener, in this order:
//
//  1. Per client: at most PerClient requests in flight per client address
//     (IPv6 addresses by /64), and a smaller share, PerClientAnonymous, for
//     requests that carry no credentials; and never more than half of
//     the bounds below (ClientShare): of MaxInFlight, and of its class's
//     current limit on the listener. One host cannot take every slot,
//     however small the node is configured or the adaptive limit has
//     become. Refusal: RateLimited (429; S3 SlowDown).
//  2. Per node: at most MaxInFlight requests in flight in all. Refusal:
//     Unavailable (503).
//  3. Per listener and request class (Control, Read, Write): an adaptive
//     concurrency limit that follows what the node can actually serve.
//     Refusal: Unavailable (503).
//
// # The adaptive limit
//
// Coffer's work is CPU-bound (hashing, copying, TLS and encryption to
// come), and an overloaded Go server does not queue requests anywhere
// visible: it starts a goroutine for each, and they all slow down together
// until clients time out. The limiter therefore watches the one queue that
// does form, the Go scheduler's run queue: every Interval it reads how long
// runnable goroutines waited for a CPU (runtime/metrics
// /sched/latencies:seconds) and compares the Quantile of that delay with
// Target, as CoDel compares a queue's sojourn time with its target.
//
//   - Delay above target for Sustain intervals in a row, or above four
//     times the target for two (overload, not a spike): the lowest-priority
//     class that is busy (Write, then Read, on every listener) has its limit
//     cut to Decrease times its peak concurrency of the last interval (down
//     to half when the delay is far above the target), never below
//     MinLimit (concurrency
//     ordinary clients use, never shed). Bulk uploads give way first;
//     cheap requests (Control: lists, HEAD, token refresh) are cut only
//     when no bulk work is left to cut (then they are the overload), so
//     they neither queue behind uploads nor pay for them.
//   - Delay below target: every class grows by Increase of its limit (at
//     least 1), up to MaxInFlight: the one that refused requests in the
//     last interval because its limit held it back, and the one that did
//     not use its limit too. A limit is the memory of an overload, and it
//     fades while the node is healthy: a burst of logins that cut the
//     Control class must not leave it throttled when the next load comes,
//     shedding while the node has capacity to spare (issue 23: a bench's
//     setup cut Control to 6, and its load then ran against that limit).
//
// Requests beyond a class's limit are refused at once, never queued, so a
// refusal takes microseconds and admitted requests keep the latency of an
// unloaded node. Probes (health, readiness) are never shed, and requests
// that finish admitted work (Request.Finishes: a multipart complete) pass
// the adaptive limit.
//
// # Limits
//
// The signal sees only this process's CPU: a node whose bottleneck is
// elsewhere (a slow PostgreSQL or S3 store) is bounded by MaxInFlight and
// the metadata pool's bounded waits instead.
//
// # Quotas
//
// Quotas (quota.go) is the other half: token buckets of requests and body
// bytes per identity (user, S3 access key, share link, anonymous client
// address) over time, with the IETF RateLimit headers, optionally
// cluster-wide through blocks reserved from the metadata store.
package ratelimit

import (
	"math"
	"net/netip"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// Class is what kind of work a request is, for the adaptive limit.
type Class uint8

// Classes, in the order they are protected (Control last to be cut).
const (
	Control Class = iota // metadata: lists, HEAD, auth, deletes, small requests
	Read                 // object downloads
	Write                // object uploads and copies
	numClasses
)

// String names the class (a metric label).
func (c Class) String() string {
	switch c {
	case Control:
		return "control"
	case Read:
		return "read"
	case Write:
		return "write"
	}
	return "unknown"
}

// Config of a Controller. MaxInFlight, PerClient, Target and MinLimit,
// which the server's settings govern (--max-in-flight,
// --max-in-flight-per-client, --overload-target, --admission-floor), are
// taken as given; the other zero values take the defaults noted.
type Config struct {
	// MaxInFlight bounds the requests in flight on the node.
	MaxInFlight int
	// PerClient bounds the requests in flight from one client address
	// (IPv6: one /64) that carry credentials; 0 (or less): no per-client
	// bound.
	PerClient int
	// PerClientAnonymous bounds the requests in flight from one client
	// address that carry no credentials. Default PerClient/4 (at least 1).
	PerClientAnonymous int

	// Fixed turns the adaptive class limits off: only MaxInFlight and the
	// per-client bounds apply.
	Fixed bool
	// Target is the scheduling delay above which the node counts as
	// overloaded.
	Target time.Duration
	// Quantile of the scheduling delays of an interval compared with
	// Target. Default 0.9.
	Quantile float64
	// Interval between limit adjustments. Default 100ms.
	Interval time.Duration
	// MinLimit is the lowest limit of the bulk classes (Read, Write):
	// concurrency that is never shed for the CPU's sake, enough for every
	// CPU to stay busy while transfers also wait for disks and networks
	// (the server's is 8 × GOMAXPROCS unless --admission-floor says).
	MinLimit int
	// MinControl is the lowest limit of the Control class. Default
	// MinLimit (at least 2). Its requests are short, but under load each
	// waits for a CPU as long as a bulk one does, so by Little's law the
	// concurrency that keeps up with the node's rate is the bulk classes'
	// too: with a quarter of it (4 on 2 cores), 4 control slots held
	// upload iterations (refresh, list, upload) to 105/s while the
	// process used less than one of its two cores (issue 23).
	MinControl int
	// Sustain is how many consecutive intervals the delay must stay above
	// the target before limits are cut (CoDel's "above target for an
	// interval", not a spike). Default 3.
	Sustain int
	// Decrease is the factor applied to a class's peak concurrency on
	// overload. Default 0.75.
	Decrease float64
	// Increase is the fraction a binding limit grows by per interval
	// without overload. Default 0.05.
	Increase float64
	// RetryAfter is advertised on refusals. Default 1s.
	RetryAfter time.Duration

	// Delay, if set, replaces the scheduler measurement (tests): it returns
	// the delay quantile of the interval just ended.
	Delay func() time.Duration

	// OnIdle, if set, is called once the node has admitted no request and
	// held none in flight for Idle, and again only after a request has
	// come and gone. The control loop checks at the end of each interval
	// (no timer of its own) and calls it; it must return promptly. Idle
	// defaults to 10s.
	OnIdle func()
	Idle   time.Duration
}

func (c Config) withDefaults() Config {
	if c.PerClientAnonymous <= 0 && c.PerClient > 0 {
		c.PerClientAnonymous = max(1, c.PerClient/4)
	}
	if c.Quantile <= 0 || c.Quantile >= 1 {
		c.Quantile = 0.9
	}
	if c.Interval <= 0 {
		c.Interval = 100 * time.Millisecond
	}
	if c.MinControl <= 0 {
		c.MinControl = max(2, c.MinLimit)
	}
	if c.Sustain <= 0 {
		c.Sustain = 3
	}
	if c.Decrease <= 0 || c.Decrease >= 1 {
		c.Decrease = 0.75
	}
	if c.Increase <= 0 {
		c.Increase = 0.05
	}
	if c.RetryAfter <= 0 {
		c.RetryAfter = time.Second
	}
	if c.Idle <= 0 {
		c.Idle = 10 * time.Second
	}
	return c
}

// Reason says why a request was refused (a metric label).
type Reason string

// Reasons.
const (
	ReasonPerClient   Reason = "per_client"
	ReasonMaxInFlight Reason = "max_in_flight"
	ReasonOverload    Reason = "overload"
)

// ClientShare is the most one client address may hold of a bound of n
// concurrent requests: half of it, at least 1. With MaxInFlight 8, one
// address holds at most 4 requests whatever PerClient says, so one host
// never starves the others. (PerClientAnonymous, a quarter of PerClient,
// still bounds requests without credentials when it is smaller; a
// quarter of a small bound would leave an anonymous browser one request
// at a time on a node under load.)
func ClientShare(n int) int { return max(1, n/2) }

// Controller admits requests for one node. Safe for concurrent use.
type Controller struct {
	cfg      Config
	inFlight atomic.Int64

	mu      sync.Mutex
	clients map[netip.Addr]int32

	lmu       sync.Mutex // guards listeners (the slice; classes lock themselves)
	listeners []*Listener

	delay    atomic.Int64  // last measured delay quantile, ns
	runnable atomic.Uint64 // last average of runnable goroutines per CPU, math.Float64bits
	runq     *runqSampler
	overload atomic.Bool
	recent   []time.Duration // the last Sustain delays, newest last (adjust only)
	quiet    time.Duration   // how long nothing was admitted or in flight (idle only)
	// The loop's buffers, reused each interval (adjust and activity): an
	// idle node's loop allocates nothing, so its heap stays as small as
	// the last idle trim left it.
	ls       []*Listener
	all      []snap
	idled    bool // OnIdle was called for this quiet period (idle only)
	stop     chan struct{}
	done     chan struct{}
	sampler  *schedSampler
	onReject func(listener string, c Class, r Reason)
}

// New returns a Controller and starts its control loop; Close stops it.
// onReject, if not nil, is called for every refusal (metrics).
func New(cfg Config, onReject func(listener string, c Class, r Reason)) *Controller {
	cfg = cfg.withDefaults()
	c := &Controller{
		cfg: cfg, clients: map[netip.Addr]int32{},
		stop: make(chan struct{}), done: make(chan struct{}),
		onReject: onReject,
	}
	if cfg.Delay == nil {
		c.sampler = newSchedSampler()
	}
	c.runq = newRunqSampler()
	go c.loop()
	return c
}

// Close stops the control loop.
func (c *Controller) Close() {
	select {
	case <-c.stop:
	default:
		close(c.stop)
	}
	<-c.done
}

// Config returns the effective configuration.
func (c *Controller) Config() Config { return c.cfg }

// Delay returns the scheduling delay quantile of the last interval.
func (c *Controller) Delay() time.Duration { return time.Duration(c.delay.Load()) }

// Runnable returns the average number of runnable goroutines per CPU in
// the last interval.
func (c *Controller) Runnable() float64 { return math.Float64frombits(c.runnable.Load()) }

// Listener returns the admission of one listener (its own class limits).
func (c *Controller) Listener(name string) *Listener {
	c.lmu.Lock()
	defer c.lmu.Unlock()
	for _, l := range c.listeners {
		if l.name == name {
			return l
		}
	}
	l := &Listener{c: c, name: name}
	for i := range l.classes {
		l.classes[i] = &classLimit{limit: float64(c.cfg.MaxInFlight), clients: map[netip.Addr]int32{}}
	}
	c.listeners = append(c.listeners, l)
	return l
}

// Listener admits the requests of one listener.
type Listener struct {
	c       *Controller
	name    string
	classes [numClasses]*classLimit
}

// classLimit is one class's adaptive limit and its counters for the
// current interval.
type classLimit struct {
	mu       sync.Mutex
	limit    float64
	inFlight int
	peak     int // highest inFlight this interval
	admitted int
	// clients counts each client's requests in flight in this class (with
	// the per-client bound on), for its share of the limit.
	clients map[netip.Addr]int32
}

// Request describes a request to admit.
type Request struct {
	Client      netip.Addr // the client's address (after trusted proxies)
	Credentials bool       // carries credentials (checked later by the API)
	Class       Class
	Probe       bool // health or readiness: never refused, not counted
	// Finishes marks a request that completes work the node already
	// admitted and paid for (a multipart upload's complete: its parts'
	// bytes are received, hashed and stored). It passes its class's
	// adaptive limit (and is counted in it), so an overload never throws
	// away the expensive work for the cheap step that would keep it: at
	// 200 VUs on two cores, a quarter of the direct flow's completes were
	// shed, each leaving a received 1 MiB part as garbage. MaxInFlight and
	// the per-client bounds still apply; a complete costs a metadata
	// transaction, and there are at most as many as uploads admitted.
	Finishes bool
}

// Ticket is an admitted request; call Done exactly once when it ends.
type Ticket struct {
	l      *Listener
	class  *classLimit
	client netip.Addr
	probe  bool
	// classShare: counted in class.clients (its share of the class).
	classShare bool
}

// Admit admits r or returns the refusal (errcode RateLimited or
// Unavailable, with RetryAfter set).
func (l *Listener) Admit(r Request) (*Ticket, error) {
	if r.Probe {
		return &Ticket{probe: true}, nil
	}
	c := l.c
	key := clientKey(r.Client)
	perClient := c.cfg.PerClient > 0
	if perClient {
		max := int32(c.cfg.PerClient)
		if !r.Credentials {
			max = int32(c.cfg.PerClientAnonymous)
		}
		max = min(max, int32(ClientShare(c.cfg.MaxInFlight)))
		c.mu.Lock()
		n := c.clients[key]
		if n >= max {
			c.mu.Unlock()
			l.rejected(r.Class, ReasonPerClient)
			return nil, errcode.Retry(errcode.RateLimited, c.cfg.RetryAfter,
				"too many concurrent requests from your address (limit %d); retry shortly", max)
		}
		c.clients[key] = n + 1
		c.mu.Unlock()
	}
	t := &Ticket{l: l, client: key}
	if c.inFlight.Add(1) > int64(c.cfg.MaxInFlight) {
		c.inFlight.Add(-1)
		t.releaseClient()
		l.rejected(r.Class, ReasonMaxInFlight)
		return nil, errcode.Retry(errcode.Unavailable, c.cfg.RetryAfter, "server is at capacity; retry shortly")
	}
	cl := l.classes[r.Class%numClasses]
	cl.mu.Lock()
	if !c.cfg.Fixed && !r.Finishes && float64(cl.inFlight) >= math.Floor(cl.limit) {
		cl.mu.Unlock()
		c.inFlight.Add(-1)
		t.releaseClient()
		l.rejected(r.Class, ReasonOverload)
		return nil, errcode.Retry(errcode.Unavailable, c.cfg.RetryAfter, "server is overloaded; retry shortly")
	}
	// The client's share of the class's limit (which adapts; with Fixed
	// it stays MaxInFlight, whose share is checked above).
	if perClient && !c.cfg.Fixed {
		share := int32(ClientShare(int(cl.limit)))
		if n := cl.clients[key]; n >= share {
			cl.mu.Unlock()
			c.inFlight.Add(-1)
			t.releaseClient()
			l.rejected(r.Class, ReasonPerClient)
			return nil, errcode.Retry(errcode.RateLimited, c.cfg.RetryAfter,
				"too many concurrent requests from your address (limit %d now); retry shortly", share)
		}
		cl.clients[key]++
		t.classShare = true
	}
	cl.inFlight++
	cl.admitted++
	cl.peak = max(cl.peak, cl.inFlight)
	cl.mu.Unlock()
	t.class = cl
	return t, nil
}

func (l *Listener) rejected(c Class, r Reason) {
	if l.c.onReject != nil {
		l.c.onReject(l.name, c, r)
	}
}

// Done releases the ticket's slots.
func (t *Ticket) Done() {
	if t == nil || t.probe {
		return
	}
	t.class.mu.Lock()
	t.class.inFlight--
	if t.classShare {
		if n := t.class.clients[t.client]; n <= 1 {
			delete(t.class.clients, t.client)
		} else {
			t.class.clients[t.client] = n - 1
		}
	}
	t.class.mu.Unlock()
	t.l.c.inFlight.Add(-1)
	t.releaseClient()
}

func (t *Ticket) releaseClient() {
	c := t.l.c
	if c.cfg.PerClient <= 0 {
		return
	}
	c.mu.Lock()
	if n := c.clients[t.client]; n <= 1 {
		delete(c.clients, t.client)
	} else {
		c.clients[t.client] = n - 1
	}
	c.mu.Unlock()
}

// clientKey maps an address to the unit the per-client bound counts:
// IPv4 addresses as they are, IPv6 addresses by their /64 (one
// subscriber's allocation).
func clientKey(a netip.Addr) netip.Addr {
	a = a.Unmap()
	if a.Is6() {
		p, err := a.Prefix(64)
		if err == nil {
			return p.Addr()
		}
	}
	return a
}

// Limit returns a class's current limit (for metrics and tests).
func (l *Listener) Limit(c Class) int {
	cl := l.classes[c%numClasses]
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return int(cl.limit)
}

// InFlight returns a class's requests in flight.
func (l *Listener) InFlight(c Class) int {
	cl := l.classes[c%numClasses]
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.inFlight
}

// Name is the listener's name.
func (l *Listener) Name() string { return l.name }

func (c *Controller) loop() {
	defer close(c.done)
	if c.cfg.Fixed {
		if c.cfg.OnIdle == nil {
			<-c.stop
			return
		}
		// No limits to adjust: wake only to notice idleness.
		every := max(c.cfg.Interval, c.cfg.Idle/10)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-c.stop:
				return
			case <-t.C:
				c.idle(c.activity(), every)
			}
		}
	}
	t := time.NewTicker(c.cfg.Interval)
	defer t.Stop()
	sample := time.NewTicker(max(c.cfg.Interval/10, time.Millisecond))
	defer sample.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-sample.C:
			c.runq.sample()
		case <-t.C:
			c.idle(c.adjust(), c.cfg.Interval)
		}
	}
}

// idle counts the quiet time (busy: whether the interval just ended, of
// length d, admitted or held a request) and calls OnIdle once per quiet
// period.
func (c *Controller) idle(busy bool, d time.Duration) {
	if busy || c.inFlight.Load() > 0 {
		c.quiet, c.idled = 0, false
		return
	}
	c.quiet += d
	if c.cfg.OnIdle != nil && !c.idled && c.quiet >= c.cfg.Idle {
		c.idled = true
		c.cfg.OnIdle()
	}
}

// runqSampler averages the number of runnable goroutines (waiting for a
// CPU) over an interval, from frequent samples of the runtime's gauge.
type runqSampler struct {
	mu         sync.Mutex
	s          []metrics.Sample
	sum, count float64
}

func newRunqSampler() *runqSampler {
	return &runqSampler{s: []metrics.Sample{{Name: "/sched/goroutines/runnable:goroutines"}}}
}

func (r *runqSampler) sample() {
	r.mu.Lock()
	defer r.mu.Unlock()
	metrics.Read(r.s)
	if r.s[0].Value.Kind() == metrics.KindUint64 {
		r.sum += float64(r.s[0].Value.Uint64())
		r.count++
	}
}

// perCPU returns the average since the last call, per GOMAXPROCS.
func (r *runqSampler) perCPU() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.count == 0 {
		return 0
	}
	avg := r.sum / r.count
	r.sum, r.count = 0, 0
	return avg / float64(runtime.GOMAXPROCS(0))
}

// activity reports whether any class admitted or held a request since
// the last call (Fixed: adjust, which does the same, does not run).
func (c *Controller) activity() (busy bool) {
	c.lmu.Lock()
	c.ls = append(c.ls[:0], c.listeners...)
	c.lmu.Unlock()
	for _, l := range c.ls {
		for _, cl := range l.classes {
			cl.mu.Lock()
			busy = busy || cl.peak > 0 || cl.admitted > 0
			cl.peak, cl.admitted = cl.inFlight, 0
			cl.mu.Unlock()
		}
	}
	return busy
}

// adjust runs once per interval: measure, then cut or grow the limits. It
// reports whether any class admitted or held a request in the interval.
func (c *Controller) adjust() (busy bool) {
	var d time.Duration
	if c.cfg.Delay != nil {
		d = c.cfg.Delay()
	} else {
		d = c.sampler.quantile(c.cfg.Quantile)
	}
	c.delay.Store(int64(d))
	c.runnable.Store(math.Float64bits(c.runq.perCPU()))
	// The delay that held for the last Sustain intervals: a spike (a GC
	// cycle, a burst of connections) does not count as overload.
	if len(c.recent) == c.cfg.Sustain {
		c.recent = c.recent[:copy(c.recent, c.recent[1:])] // in place: no allocation per interval
	}
	c.recent = append(c.recent, d)
	held := d
	for _, x := range c.recent {
		held = min(held, x)
	}
	if len(c.recent) < c.cfg.Sustain {
		held = 0
	}
	// A severe overload (four times the target, twice in a row) is acted
	// on sooner: at its onset every interval of waiting admits a burst.
	if n := len(c.recent); n >= 2 && min(c.recent[n-1], c.recent[n-2]) > 4*c.cfg.Target {
		held = max(held, min(c.recent[n-1], c.recent[n-2]))
	}
	overloaded := held > c.cfg.Target
	c.overload.Store(overloaded)
	d = held
	// Cut harder the further the delay is above the target (down to
	// half), gently when it is just above.
	decrease := c.cfg.Decrease
	if overloaded {
		decrease = min(decrease, max(0.5, float64(c.cfg.Target)/float64(held)))
	}

	c.lmu.Lock()
	c.ls = append(c.ls[:0], c.listeners...)
	c.lmu.Unlock()

	all := c.all[:0]
	for _, l := range c.ls {
		for class, cl := range l.classes {
			cl.mu.Lock()
			all = append(all, snap{cl: cl, class: Class(class), peak: cl.peak, inFlight: cl.inFlight})
			busy = busy || cl.peak > 0 || cl.admitted > 0
			cl.peak, cl.admitted = cl.inFlight, 0
			cl.mu.Unlock()
		}
	}
	c.all = all
	floor := func(cl Class) float64 {
		if cl == Control {
			return float64(c.cfg.MinControl)
		}
		return float64(c.cfg.MinLimit)
	}
	maxLimit := float64(c.cfg.MaxInFlight)
	if overloaded {
		// Cut the lowest-priority class that is doing work above its
		// floor. Control (cheap requests) is cut only when every bulk
		// class is at its floor already: then the cheap requests are
		// what overloads the node.
		for class := Write; ; class-- {
			cut := false
			for _, s := range all {
				if s.class != class {
					continue
				}
				s.cl.mu.Lock()
				s.cl.limit = max(floor(class), min(s.cl.limit, float64(s.peak))*decrease)
				s.cl.mu.Unlock()
				// Work above the floor was cut; at the floor there is
				// nothing left to take from this class.
				cut = cut || float64(s.peak) > floor(class)
			}
			if cut || class == Control {
				break
			}
		}
		return busy
	}
	for _, s := range all {
		s.cl.mu.Lock()
		s.cl.limit = min(maxLimit, s.cl.limit+max(1, s.cl.limit*c.cfg.Increase))
		s.cl.mu.Unlock()
	}
	return busy
}

// snap is one class's counters at the end of an interval.
type snap struct {
	cl             *classLimit
	class          Class
	peak, inFlight int
}

// schedSampler turns the runtime's cumulative histogram of scheduling
// latencies into a quantile per interval.
type schedSampler struct {
	s           []metrics.Sample
	prev, delta []uint64
}

const schedMetric = "/sched/latencies:seconds"

func newSchedSampler() *schedSampler {
	s := &schedSampler{s: []metrics.Sample{{Name: schedMetric}}}
	metrics.Read(s.s)
	if h := s.hist(); h != nil {
		s.prev = append([]uint64(nil), h.Counts...)
	}
	return s
}

func (s *schedSampler) hist() *metrics.Float64Histogram {
	if s.s[0].Value.Kind() != metrics.KindFloat64Histogram {
		return nil
	}
	return s.s[0].Value.Float64Histogram()
}

// quantile returns the q-quantile of the delays recorded since the last
// call (0 if none).
func (s *schedSampler) quantile(q float64) time.Duration {
	metrics.Read(s.s)
	h := s.hist()
	if h == nil {
		return 0
	}
	if len(s.prev) != len(h.Counts) {
		s.prev = make([]uint64, len(h.Counts))
	}
	if len(s.delta) != len(h.Counts) {
		s.delta = make([]uint64, len(h.Counts))
	}
	var total uint64
	delta := s.delta
	for i, n := range h.Counts {
		delta[i] = n - s.prev[i]
		total += delta[i]
	}
	copy(s.prev, h.Counts)
	return histQuantile(delta, h.Buckets, total, q)
}

// histQuantile returns the upper bound of the bucket holding the
// q-quantile (buckets[i], buckets[i+1] bound counts[i]).
func histQuantile(counts []uint64, buckets []float64, total uint64, q float64) time.Duration {
	if total == 0 {
		return 0
	}
	want := uint64(math.Ceil(q * float64(total)))
	var seen uint64
	for i, n := range counts {
		seen += n
		if seen >= want {
			hi := buckets[i+1]
			if math.IsInf(hi, 1) {
				hi = buckets[i]
			}
			return time.Duration(hi * float64(time.Second))
		}
	}
	return 0
}
