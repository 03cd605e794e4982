package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coffer-storage/coffer/internal/bench/report"
)

// maxShedPause caps how long a VU honours a Retry-After.
const maxShedPause = 5 * time.Second

// vu is one virtual user: it runs iterations one after the other.
type vu struct {
	id   int
	t    *target
	call *caller // counted
	rng  *rand.Rand
	seq  uint64
	sess *session // file API scenarios
}

// next returns a sequence number unique within the VU.
func (v *vu) next() uint64 {
	v.seq++
	return v.seq
}

// round runs the load model once against t. It returns when the model
// ends and iterations in flight have finished (or been cancelled after the
// grace period), or when ctx ends.
type round struct {
	t        *target
	m        model
	opts     Options
	label    string    // shown in compare runs
	progress io.Writer // live progress line, or nil
	active   atomic.Int64
	// project, if set, is called once projectAfter into the round with
	// the object bytes uploaded so far (how much the run will write).
	project func(el time.Duration, uploaded int64)
}

func (r *round) run(ctx context.Context) {
	runCtx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()
	start := time.Now()
	written := r.t.ledger.written()
	uploaded := func() int64 { return r.t.ledger.written() - written }
	stop := make(chan struct{}) // closed when the model ends
	var wg sync.WaitGroup

	tickDone := make(chan struct{})
	tickStop := make(chan struct{})
	go r.ticker(start, uploaded, tickStop, tickDone)

	if r.m.mode == modeArrivalRate {
		r.arrivals(runCtx, start, stop, &wg)
	} else {
		r.rampVUs(runCtx, start, stop, &wg)
	}
	close(stop)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(r.opts.Grace):
		cancelRun()
		<-done
	case <-ctx.Done():
		<-done
	}
	close(tickStop)
	<-tickDone
	r.t.col.addActive(time.Since(start))
}

// rampVUs starts and stops VUs to follow the model until it ends.
func (r *round) rampVUs(ctx context.Context, start time.Time, stop chan struct{}, wg *sync.WaitGroup) {
	var mu sync.Mutex
	busy := make([]bool, len(r.t.vus)) // slot has a goroutine (maybe finishing)
	var running []chan struct{}        // per-VU stop channels of wanted VUs, in start order
	tk := time.NewTicker(controllerPeriod)
	defer tk.Stop()
	for {
		el := time.Since(start)
		if el >= r.m.duration {
			return
		}
		want := min(r.m.vusAt(el), len(r.t.vus))
		for len(running) > want {
			close(running[len(running)-1])
			running = running[:len(running)-1]
		}
		mu.Lock()
		for i := 0; i < len(busy) && len(running) < want; i++ {
			if busy[i] {
				continue
			}
			busy[i] = true
			own := make(chan struct{})
			running = append(running, own)
			r.active.Add(1)
			wg.Add(1)
			go func(v *vu) {
				defer wg.Done()
				r.loop(ctx, v, stop, own)
				r.active.Add(-1)
				mu.Lock()
				busy[v.id] = false
				mu.Unlock()
			}(r.t.vus[i])
		}
		mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
		}
	}
}

// loop runs iterations until stop, own or ctx.
func (r *round) loop(ctx context.Context, v *vu, stop, own chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-own:
			return
		case <-ctx.Done():
			return
		default:
		}
		pause := r.iterate(ctx, v)
		if lo, hi := r.opts.Think, r.opts.ThinkMax; hi > lo {
			pause = max(pause, lo+rand.N(hi-lo))
		} else {
			pause = max(pause, lo)
		}
		if pause > 0 {
			t := time.NewTimer(pause)
			select {
			case <-stop:
			case <-own:
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
		}
	}
}

// iterate runs one iteration and records it. It returns how long the VU
// should pause because the server asked it to (Retry-After).
func (r *round) iterate(ctx context.Context, v *vu) time.Duration {
	start := time.Now()
	err := r.t.sc.iterate(ctx, v)
	d := time.Since(start)
	var re *reqError
	switch {
	case err == nil:
		r.t.col.iteration(d, outcomeOK)
	case ctx.Err() != nil:
		r.t.col.iteration(d, outcomeCanceled)
	case errors.As(err, &re) && re.outcome == outcomeShed:
		r.t.col.iteration(d, outcomeShed)
		return min(max(re.retryAfter, 0), maxShedPause)
	case errors.As(err, &re) && re.outcome == outcomeCanceled:
		r.t.col.iteration(d, outcomeCanceled)
	default:
		if re == nil {
			// Not a request failure: report it like one so it is seen.
			r.t.col.fail("iteration", classOther, err.Error())
		}
		r.t.col.iteration(d, outcomeFailed)
	}
	return 0
}

// arrivals starts iterations at the model's rate on idle VUs until the
// model ends; an arrival finding no idle VU is dropped (and counted).
func (r *round) arrivals(ctx context.Context, start time.Time, stop chan struct{}, wg *sync.WaitGroup) {
	type worker struct {
		v    *vu
		work chan struct{}
	}
	idle := make(chan *worker, len(r.t.vus))
	for _, v := range r.t.vus {
		w := &worker{v: v, work: make(chan struct{}, 1)}
		idle <- w
		wg.Go(func() {
			for {
				select {
				case <-w.work:
					if pause := r.iterate(ctx, w.v); pause > 0 {
						// Honour Retry-After by holding this VU back.
						t := time.NewTimer(pause)
						select {
						case <-t.C:
						case <-stop:
						case <-ctx.Done():
						}
						t.Stop()
					}
					r.active.Add(-1)
					idle <- w
				case <-stop:
					return
				case <-ctx.Done():
					return
				}
			}
		})
	}
	for n := int64(0); ; n++ {
		at := r.m.arrivalAt(n)
		if at >= r.m.duration { // as many as m.arrivals() says
			return
		}
		due := start.Add(at)
		if wait := time.Until(due); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		select {
		case w := <-idle:
			r.active.Add(1)
			w.work <- struct{}{}
		default:
			r.t.col.droppedIteration()
		}
	}
}

// ticker closes a series interval every second and draws the progress
// line.
func (r *round) ticker(start time.Time, uploaded func() int64, stop, done chan struct{}) {
	defer close(done)
	tk := time.NewTicker(time.Second)
	defer tk.Stop()
	last := start
	for {
		select {
		case now := <-tk.C:
			p := r.t.col.tick(now, now.Sub(last), int(r.active.Load()), r.label)
			last = now
			if el := now.Sub(start); r.project != nil && el >= projectAfter && el < r.m.duration {
				if r.progress != nil {
					fmt.Fprintf(r.progress, "\r%-100s\r", "")
				}
				r.project(el, uploaded())
				r.project = nil
			}
			r.drawProgress(now.Sub(start), p)
		case <-stop:
			now := time.Now()
			if now.Sub(last) > 100*time.Millisecond {
				r.t.col.tick(now, now.Sub(last), int(r.active.Load()), r.label)
			}
			if r.progress != nil {
				fmt.Fprintf(r.progress, "\r%-100s\r", "")
			}
			return
		}
	}
}

func (r *round) drawProgress(el time.Duration, p report.Point) {
	if r.progress == nil {
		return
	}
	total, failed, shed := r.t.col.totals()
	label := ""
	if r.label != "" {
		label = "[" + r.label + "] "
	}
	fmt.Fprintf(r.progress, "\r%-100s\r  %s%5.0fs/%.0fs  VUs %-5d %8.1f req/s  p95 %-9s  requests %d  errors %d  shed %d",
		"", label, el.Seconds(), r.m.duration.Seconds(), p.VUs, p.RPS, fmtMillis(p.P95MS), total, failed, shed)
}

func fmtMillis(v float64) string {
	switch {
	case v < 1:
		return fmt.Sprintf("%.0fµs", v*1000)
	case v < 1000:
		return fmt.Sprintf("%.1fms", v)
	default:
		return fmt.Sprintf("%.2fs", v/1000)
	}
}
