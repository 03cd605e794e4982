package bench

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coffer-storage/coffer/internal/bench/report"
)

// scenario is one kind of iteration.
type scenario interface {
	// setup prepares what iterations need (not measured).
	setup(ctx context.Context) error
	// iterate runs one iteration as VU v. It returns the first failure
	// (a *reqError, already recorded).
	iterate(ctx context.Context, v *vu) error
	// fetch builds the request that reads an acknowledged upload back.
	fetch(ctx context.Context, e *ledgerEntry) (*request, error)
}

type scenarioInfo struct {
	doc     string
	s3      bool  // runs against --s3-target
	size    int64 // default --size
	uploads bool  // uploads objects: audited
	objects int   // default --objects (0: 100)
	make    func(t *target) scenario
}

var scenarios = map[string]scenarioInfo{
	"upload-proxy": {doc: "refresh the session, list the first page, upload --size (1 MiB) through the file API with a SHA-256", size: defaultSize, uploads: true,
		make: fileKind("upload-proxy")},
	"upload-direct": {doc: "refresh, list, create a direct upload, PUT the parts to their presigned URLs, complete", size: defaultSize, uploads: true,
		make: fileKind("upload-direct")},
	"read": {doc: "list a page of 10 prepared files and download each", size: defaultSize, uploads: true,
		make: fileKind("read")},
	"batch": {doc: "the batch endpoints: one form upload of 5 files of --size (50 KiB), then one zip download of them, audited entry by entry", size: batchSize, uploads: true,
		make: fileKind("batch")},
	"tus": {doc: "tus 1.0 upload of --size (1 MiB): create with the first quarter, PATCH the rest in quarters with sha256 Upload-Checksum", size: defaultSize, uploads: true,
		make: fileKind("tus")},
	"share": {doc: "anonymous downloads of a --size (1 MiB) object through its share link (/s/{token}), one link per user", size: defaultSize, uploads: true,
		make: fileKind("share")},
	"ping": {doc: "GET /healthz (the breaking-point test)",
		make: fileKind("ping")},
	"stream": {doc: "download a --size (10 MiB) object, timing the first byte apart", size: streamSize, uploads: true,
		make: fileKind("stream")},
	"soak": {doc: "30% ping, 25% list, 25% download, 20% upload of --size (deleting the VU's oldest beyond 8); watch the server's memory and goroutines", size: defaultSize, uploads: true,
		make: fileKind("soak")},
	"s3-put": {doc: "SigV4 PUT of --size objects", s3: true, size: 1 << 20, uploads: true,
		make: func(t *target) scenario { return &s3Scenario{t: t, kind: "s3-put"} }},
	"s3-get": {doc: "SigV4 GET of --objects prepared objects", s3: true, size: 1 << 20, uploads: true,
		make: func(t *target) scenario { return &s3Scenario{t: t, kind: "s3-get"} }},
	"s3-mixed": {doc: "45% GET, 30% PUT, 15% DELETE, 10% HEAD over a shared pool of objects", s3: true, size: 1 << 20, uploads: true,
		make: func(t *target) scenario { return &s3Scenario{t: t, kind: "s3-mixed"} }},
	"proxy-get": {doc: "read proxy: SigV4 GET of --objects prepared --size (1 KiB) objects (at 10 VUs, or ramped with --stages)", s3: true, size: 1 << 10, uploads: true,
		make: proxyKind("proxy-get")},
	"proxy-stream": {doc: "read proxy: SigV4 GET of --objects (10) prepared --size (10 MiB) objects, time to first byte recorded", s3: true, size: proxyLarge, objects: 10, uploads: true,
		make: proxyKind("proxy-stream")},
	"proxy-soak": {doc: "read proxy: 50% GET --size (1 KiB), 20% GET 1 MiB, 20% GET 10 MiB, 10% HEAD; the server's memory sampled", s3: true, size: 1 << 10, uploads: true,
		make: proxyKind("proxy-soak")},
}

func proxyKind(kind string) func(t *target) scenario {
	return func(t *target) scenario { return &proxyScenario{t: t, kind: kind} }
}

func fileKind(kind string) func(t *target) scenario {
	return func(t *target) scenario { return &fileScenario{t: t, kind: kind} }
}

// Scenarios lists the scenario names.
func Scenarios() []string {
	var out []string
	for n := range scenarios {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// ScenarioDoc describes a scenario in one line.
func ScenarioDoc(name string) string { return scenarios[name].doc }

// target is one endpoint under test with everything measured on it.
type target struct {
	label  string // "A"/"B" in compare runs
	opts   Options
	runID  string
	runNum uint32
	s3     *s3Endpoint // S3 scenarios

	counters      byteCounters // run traffic
	setupCounters byteCounters
	client        *http.Client // run traffic
	setupClient   *http.Client // setup and audit, not measured
	col           *collector
	ledger        ledger
	sc            scenario
	vus           []*vu
	users         []*user

	made         made      // what the run created, for the cleanup
	log          io.Writer // setup and audit progress
	setupRetries atomic.Int64
	setupObjects atomic.Int64
	setupStats   report.Setup

	paymu   sync.Mutex
	paysrcs map[int64]*payloadSource
}

func (t *target) setupDoer() doer {
	return &retrier{c: &caller{client: t.setupClient, timeout: t.opts.Timeout}, retries: &t.setupRetries}
}

// payloads returns the payload source of objects of size n.
func (t *target) payloads(n int64) *payloadSource {
	t.paymu.Lock()
	defer t.paymu.Unlock()
	if p := t.paysrcs[n]; p != nil {
		return p
	}
	if t.paysrcs == nil {
		t.paysrcs = map[int64]*payloadSource{}
	}
	p := newPayloadSource(n, uint64(t.runNum)^uint64(n))
	t.paysrcs[n] = p
	return p
}

// objectKey names an object uploaded by VU vu (or the setup) in this run.
func (t *target) objectKey(kind string, vu int, seq uint64) string {
	return fmt.Sprintf("bench-%s/%s/vu%04d/%08d", t.runID, kind, vu, seq)
}

func (t *target) email(i int) string { return fmt.Sprintf("bench-%s-%d@example.com", t.runID, i) }
func (t *target) password() string   { return "bench password " + t.runID }

// newVUs makes n VUs recording into t's collector.
func (t *target) newVUs(n int) {
	t.vus = make([]*vu, n)
	for i := range t.vus {
		t.vus[i] = &vu{id: i, t: t, call: &caller{client: t.client, timeout: t.opts.Timeout, col: t.col, expect: t.opts.ExpectContinue},
			rng: mrand.New(mrand.NewPCG(uint64(t.runNum), uint64(i)))}
	}
}

// Run runs the benchmark o describes. log receives setup, audit and
// cleanup progress; progress, if non-nil, a live progress line.
//
// Ending load (a first Ctrl-C) ends the load early: the run still audits
// the uploads acknowledged so far, deletes what it created (unless
// o.Keep) and returns its partial result with Interrupted set. Ending
// finish (a second Ctrl-C) cuts the audit and the cleanup short too.
//
// Run returns an error only if the run could not take place (bad
// options, setup failure, after cleaning up what the setup created); a
// failed audit is in the result.
func Run(load, finish context.Context, o Options, log, progress io.Writer) (*report.Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	info := scenarios[o.Scenario]
	var rb [4]byte
	rand.Read(rb[:])
	runNum := binary.BigEndian.Uint32(rb[:])
	runID := hex.EncodeToString(rb[:])
	epoch := time.Now()
	m := newModel(o)
	maxVUs := o.maxVUs()

	mk := func(label, s3base, access, secret string) *target {
		t := &target{label: label, opts: o, runID: runID, runNum: runNum, log: log}
		t.client = newHTTPClient(maxVUs, o.Timeout, &t.counters)
		t.setupClient = newHTTPClient(max(o.SetupConcurrency, o.AuditConcurrency), o.Timeout, &t.setupCounters)
		t.col = newCollector(epoch)
		if info.s3 {
			bucket := o.Bucket
			if bucket == "" {
				bucket = "coffer-bench-" + runID
			}
			t.s3 = &s3Endpoint{base: s3base, bucket: bucket, access: access, secret: secret, region: o.Region, unsigned: o.UnsignedPayload}
		}
		t.sc = info.make(t)
		t.newVUs(maxVUs)
		return t
	}
	targets := []*target{mk("", o.S3Target, o.AccessKey, o.SecretKey)}
	if o.Compare != "" {
		targets[0].label = "A"
		targets = append(targets, mk("B", o.Compare, o.CompareAccessKey, o.CompareSecretKey))
	}
	for _, line := range writePlan(o, m, len(targets)) {
		fmt.Fprintf(log, "bench: %s\n", line)
	}

	// cleanup deletes what the run created on every target (after the
	// audit, which reads it), bounded by o.CleanupTimeout and finish.
	cleanup := func() []report.Cleanup {
		out := make([]report.Cleanup, len(targets))
		for i, t := range targets {
			if o.Keep {
				out[i] = report.Cleanup{Kept: t.keptNote()}
				continue
			}
			ctx, cancel := context.WithTimeout(finish, o.CleanupTimeout)
			out[i] = t.cleanup(ctx)
			cancel()
		}
		return out
	}
	for _, t := range targets {
		err := t.preflight(load)
		if err == nil {
			err = t.setup(load)
		}
		if err != nil {
			cleanup()
			return nil, err
		}
	}

	// Time 0 of the series and samples is the start of the load.
	loadStart := time.Now()
	for _, t := range targets {
		t.col.epoch = loadStart
	}
	var smp *sampler
	sampleCtx, stopSampling := context.WithCancel(load)
	var sampleWG sync.WaitGroup
	if o.MetricsURL != "" {
		smp = &sampler{url: o.MetricsURL, client: &http.Client{Timeout: 5 * time.Second}, epoch: loadStart, interval: o.SampleInterval}
		sampleWG.Go(func() { smp.run(sampleCtx) })
	}

	fmt.Fprintf(log, "bench: running %s (%s) for %s\n", o.Scenario, m.mode, m.duration*time.Duration(o.Rounds*len(targets)))
	projected := m.mode == modeArrivalRate || info.writes(o) == 0 // said before the start
	for rnd := 0; rnd < o.Rounds && load.Err() == nil; rnd++ {
		for _, t := range targets {
			if load.Err() != nil {
				break
			}
			if len(targets) > 1 {
				fmt.Fprintf(log, "bench: round %d/%d on %s (%s)\n", rnd+1, o.Rounds, t.label, t.s3.base)
			}
			r := &round{t: t, m: m, opts: o, label: t.label, progress: progress}
			if !projected {
				r.project = func(el time.Duration, uploaded int64) {
					each := ""
					if len(targets) > 1 {
						each = " on each endpoint"
					}
					fmt.Fprintf(log, "bench: %s%s\n", projection(el, uploaded, m.duration*time.Duration(o.Rounds)), each)
				}
				projected = true
			}
			r.run(load)
		}
	}
	interrupted := load.Err() != nil
	stopSampling()
	sampleWG.Wait()

	results := make([]*report.Result, len(targets))
	for i, t := range targets {
		res := t.result(o, m, epoch)
		res.Interrupted = interrupted
		switch {
		case !info.uploads || o.NoAudit:
			res.Audit = report.Audit{Enabled: false}
		default:
			actx, cancel := context.WithTimeout(finish, o.AuditTimeout)
			entries := t.ledger.snapshot()
			t.logf("auditing %d acknowledged uploads%s", len(entries), t.suffix())
			d := &retrier{c: &caller{client: t.setupClient, timeout: o.Timeout}, attempts: 4}
			res.Audit = audit(actx, entries, t.sc.fetch, d, o.AuditConcurrency)
			cancel()
			if finish.Err() != nil {
				res.Audit.Skipped = "aborted (interrupted twice)"
			}
		}
		results[i] = res
	}
	for i, c := range cleanup() {
		results[i].Cleanup = c
	}
	if smp != nil {
		results[0].Server = smp.result()
	} else {
		results[0].Server = report.Server{Note: "server metrics not sampled (no --target or --metrics-url)"}
	}
	res := results[0]
	if len(results) > 1 {
		res.Compare = &report.Comparison{Target: o.Compare, Rounds: o.Rounds, Result: results[1], Ratios: report.Ratios(res, results[1])}
	}
	return res, nil
}

func (t *target) logf(format string, args ...any) {
	fmt.Fprintf(t.log, "bench: "+format+"\n", args...)
}

func (t *target) suffix() string {
	if t.label == "" {
		return ""
	}
	return " on " + t.label
}

// preflight checks that the endpoint accepts connections, so that an
// unreachable target fails at once instead of producing a run of
// connection errors. A server that is still starting gets a few tries.
func (t *target) preflight(ctx context.Context) error {
	base := t.opts.Target
	if t.s3 != nil {
		base = t.s3.base
	}
	u, err := url.Parse(base)
	if err != nil {
		return err
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), map[string]string{"http": "80", "https": "443"}[u.Scheme])
	}
	d := net.Dialer{Timeout: 5 * time.Second}
	wait := 100 * time.Millisecond
	for try := 1; ; try++ {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			c.Close()
			return nil
		}
		if try == 4 || ctx.Err() != nil {
			return fmt.Errorf("cannot reach %s: %w", base, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// setup prepares t for the run.
func (t *target) setup(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, t.opts.SetupTimeout)
	defer cancel()
	start := time.Now()
	t.logf("setup%s (run id %s)", t.suffix(), t.runID)
	if err := t.sc.setup(ctx); err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("setup did not finish within %s: %w", t.opts.SetupTimeout, err)
		}
		return fmt.Errorf("setup: %w", err)
	}
	t.setupStats.Objects = int(t.setupObjects.Load())
	t.setupStats.Bytes = t.ledger.written()
	t.setupStats.Retries = t.setupRetries.Load()
	t.setupStats.DurationS = time.Since(start).Seconds()
	t.logf("setup done in %.1fs: %d users, %d sessions, %d objects, %d retries after 429/503 or network errors",
		t.setupStats.DurationS, t.setupStats.Users, t.setupStats.Sessions, t.setupStats.Objects, t.setupStats.Retries)
	return nil
}

// result assembles t's measurements.
func (t *target) result(o Options, m model, epoch time.Time) *report.Result {
	r := &report.Result{
		RunID:    t.runID,
		Scenario: o.Scenario,
		Target:   o.Target,
		Started:  epoch.UTC().Truncate(time.Second),
		Plan:     newPlan(o, m),
		Setup:    t.setupStats,
		Load: report.Load{
			Mode: m.mode, MaxVUs: m.vus, Size: o.Size, Timeout: o.Timeout.String(),
		},
	}
	if t.s3 != nil {
		r.S3Target = t.s3.base
	}
	switch m.mode {
	case modeRampingVUs:
		for _, s := range m.stages {
			r.Load.Stages = append(r.Load.Stages, report.Stage{Duration: s.Duration.String(), Target: s.Target})
		}
	case modeArrivalRate:
		r.Load.Rate, r.Load.Duration = m.rate, m.duration.String()
	default:
		r.Load.VUs, r.Load.Duration = m.vus, m.duration.String()
	}
	if o.Compare != "" {
		r.Load.Rounds = o.Rounds
	}
	if o.Think > 0 || o.ThinkMax > 0 {
		r.Load.Think = o.Think.String()
		if o.ThinkMax > 0 {
			r.Load.Think += "-" + o.ThinkMax.String()
		}
	}
	t.col.fill(r)
	r.Data.SentBytes, r.Data.ReceivedBytes = t.counters.sent.Load(), t.counters.received.Load()
	r.Data.UploadedBytes = t.ledger.written() - t.setupStats.Bytes
	if r.DurationS > 0 {
		r.Data.SentPerSec = float64(r.Data.SentBytes) / r.DurationS
		r.Data.ReceivedPerSec = float64(r.Data.ReceivedBytes) / r.DurationS
	}
	return r
}

// parallel runs f(ctx, i) for i in [0, n) with at most conc at once. The
// first error cancels the rest and is returned.
func parallel(ctx context.Context, n, conc int, f func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sem := make(chan struct{}, max(conc, 1))
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := f(ctx, i); err != nil {
				cancel(err)
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return ctx.Err()
}
