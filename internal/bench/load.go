package bench

import (
	"math"
	"time"
)

// Load-model modes, as k6 names its executors.
const (
	modeConstantVUs  = "constant-vus"
	modeRampingVUs   = "ramping-vus"
	modeArrivalRate  = "constant-arrival-rate"
	controllerPeriod = 50 * time.Millisecond
)

// model is the load model of one round.
type model struct {
	mode     string
	vus      int // constant VUs, or the pool of the arrival-rate mode
	duration time.Duration
	stages   []Stage
	rate     float64
}

func newModel(o Options) model {
	switch {
	case len(o.Stages) > 0:
		return model{mode: modeRampingVUs, stages: o.Stages, vus: maxTarget(o.Stages), duration: stagesDuration(o.Stages)}
	case o.Rate > 0:
		return model{mode: modeArrivalRate, vus: o.VUs, duration: o.Duration, rate: o.Rate}
	default:
		return model{mode: modeConstantVUs, vus: o.VUs, duration: o.Duration}
	}
}

// arrivalAt is when, after the start of a round, arrival n of the
// constant-arrival-rate model is due.
func (m model) arrivalAt(n int64) time.Duration {
	return time.Duration(float64(n) * float64(time.Second) / m.rate)
}

// arrivals is how many iterations the constant-arrival-rate model starts
// in a round: those due before its duration ends.
func (m model) arrivals() int64 {
	if m.rate <= 0 {
		return 0
	}
	n := int64(math.Ceil(m.rate * m.duration.Seconds()))
	for n > 0 && m.arrivalAt(n-1) >= m.duration {
		n--
	}
	for m.arrivalAt(n) < m.duration {
		n++
	}
	return n
}

func stagesDuration(st []Stage) time.Duration {
	var d time.Duration
	for _, s := range st {
		d += s.Duration
	}
	return d
}

// StageTarget is the number of VUs k6's ramping executor runs at elapsed
// time t: linear interpolation from the previous stage's target (0 before
// the first stage) to the current stage's, rounded to the nearest VU; the
// last target after the end.
func StageTarget(stages []Stage, t time.Duration) int {
	from := 0.0
	var start time.Duration
	for _, s := range stages {
		to := float64(s.Target)
		if t < start+s.Duration {
			frac := float64(t-start) / float64(s.Duration)
			return int(math.Round(from + (to-from)*max(frac, 0)))
		}
		from = to
		start += s.Duration
	}
	return int(from)
}

// vusAt is how many VUs the model wants at elapsed time t.
func (m model) vusAt(t time.Duration) int {
	if m.mode == modeRampingVUs {
		return StageTarget(m.stages, t)
	}
	return m.vus
}
