package bench

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func pingServer(t *testing.T, delay time.Duration) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
		}
		io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	return srv
}

func pingOptions(url string) Options {
	return Options{Scenario: "ping", Target: url, MetricsURL: "off"}
}

func TestArrivalRate(t *testing.T) {
	o := pingOptions(pingServer(t, 0).URL)
	o.Rate, o.Duration, o.VUs = 100, time.Second, 100
	res, err := Run(context.Background(), context.Background(), o, io.Discard, nil)
	if err != nil {
		t.Fatal(err)
	}
	started := res.Iterations.Total + res.Iterations.Dropped
	// Exactly 100 are due; a machine too busy to keep up may reach the end
	// of the run with some not yet started (they are not owed), never more.
	if started < 50 || started > 100 {
		t.Errorf("%d arrivals at 100/s for 1s, want 100", started)
	}
	// A pool as large as the whole run's arrivals never runs out of VUs,
	// however slow the machine: it drops nothing.
	if res.Iterations.Dropped > 0 {
		t.Errorf("%d arrivals dropped by an idle pool", res.Iterations.Dropped)
	}
	if res.Load.Mode != modeArrivalRate {
		t.Errorf("mode = %s", res.Load.Mode)
	}
}

func TestArrivalRateDropsWhenPoolIsBusy(t *testing.T) {
	// Two VUs, each iteration 200 ms: at most 10/s get served of 50/s.
	o := pingOptions(pingServer(t, 200*time.Millisecond).URL)
	o.Rate, o.Duration, o.VUs = 50, time.Second, 2
	res, err := Run(context.Background(), context.Background(), o, io.Discard, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Iterations.Dropped < 10 || res.Iterations.Total > 14 {
		t.Errorf("%d iterations, %d dropped; want about 10 and 40", res.Iterations.Total, res.Iterations.Dropped)
	}
}

func TestStagesFollowTheRamp(t *testing.T) {
	o := pingOptions(pingServer(t, 2*time.Millisecond).URL)
	o.Stages = []Stage{{2 * time.Second, 6}, {500 * time.Millisecond, 6}, {500 * time.Millisecond, 0}}
	start := time.Now()
	res, err := Run(context.Background(), context.Background(), o, io.Discard, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The stages last 3 s; the run must not end before them, and must end
	// (a generous bound: the test asserts the schedule, not the speed of a
	// busy machine).
	if d := time.Since(start); d < 3*time.Second || d > 30*time.Second {
		t.Errorf("run took %v, want about 3s", d)
	}
	peak := 0
	for _, p := range res.Series {
		peak = max(peak, p.VUs)
	}
	if peak != 6 {
		t.Errorf("peak VUs %d, want 6", peak)
	}
	// After 1 s of a 2 s ramp to 6: 3 VUs.
	if len(res.Series) < 3 || res.Series[0].VUs < 2 || res.Series[0].VUs > 4 {
		t.Errorf("series does not ramp: %+v", res.Series)
	}
	if res.Requests.Failed != 0 || res.Iterations.Total == 0 {
		t.Errorf("requests %+v, iterations %+v", res.Requests, res.Iterations)
	}
}

func TestInterruptReportsSoFar(t *testing.T) {
	o := pingOptions(pingServer(t, time.Millisecond).URL)
	o.VUs, o.Duration = 2, time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, err := Run(ctx, context.Background(), o, io.Discard, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("interrupted run took %v to return", d)
	}
	if !res.Interrupted || res.Requests.Total == 0 || res.Requests.Failed != 0 {
		t.Errorf("interrupted=%v requests %+v", res.Interrupted, res.Requests)
	}
}

func TestGraceBoundsTheRun(t *testing.T) {
	// The server never answers within the run: in-flight requests are cut
	// after the grace period and are not failures.
	o := pingOptions(pingServer(t, time.Hour).URL)
	o.VUs, o.Duration, o.Grace, o.Timeout = 3, 300*time.Millisecond, 300*time.Millisecond, time.Minute
	start := time.Now()
	res, err := Run(context.Background(), context.Background(), o, io.Discard, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("run took %v, want the duration plus grace (not the server's hour)", d)
	}
	if res.Requests.Failed != 0 || res.Iterations.Interrupted != 3 {
		t.Errorf("failed %d, interrupted iterations %d; want 0 and 3", res.Requests.Failed, res.Iterations.Interrupted)
	}
}

func TestThinkTimePacesVUs(t *testing.T) {
	o := pingOptions(pingServer(t, 0).URL)
	o.VUs, o.Duration, o.Think = 2, time.Second, 100*time.Millisecond
	res, err := Run(context.Background(), context.Background(), o, io.Discard, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Each VU: at most one iteration per 100 ms → at most about 20 in all
	// (fewer on a busy machine; none at all would mean the VUs never ran).
	if n := res.Iterations.Total; n < 1 || n > 24 {
		t.Errorf("%d iterations with 100 ms think time, want about 20", n)
	}
}
