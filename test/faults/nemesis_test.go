package faults

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A fault kind: inject breaks something (on node n where it applies),
// heal mends it.
type fault struct {
	name   string
	inject func(c *cluster, n int)
	heal   func(t *testing.T, c *cluster, n int)
}

// isolate cuts a node's link (netns mode only).
var isolate = fault{"isolate", func(c *cluster, n int) {
	if err := c.netns.setLink(n, false); err != nil {
		c.t.Error(err)
	}
}, func(t *testing.T, c *cluster, n int) {
	if err := c.netns.setLink(n, true); err != nil {
		t.Fatal(err)
	}
}}

// faults are the kinds of fault the cluster's mode can inject.
func (c *cluster) faults() []fault {
	if c.netns != nil {
		return append(slices.Clip(proxyFaults), isolate)
	}
	return proxyFaults
}

var proxyFaults = []fault{
	{"kill", func(c *cluster, n int) { c.nodes[n].Kill() },
		func(t *testing.T, c *cluster, n int) { c.nodes[n].Restart() }},
	{"pause", func(c *cluster, n int) { signal(c.nodes[n].PID(), syscall.SIGSTOP) },
		func(t *testing.T, c *cluster, n int) { signal(c.nodes[n].PID(), syscall.SIGCONT) }},
	{"partition-postgres", func(c *cluster, n int) { c.pgProxy[n].Set(blackhole, 0) },
		func(t *testing.T, c *cluster, n int) { c.pgProxy[n].Set(pass, 0) }},
	{"partition-minio", func(c *cluster, n int) { c.s3Proxy[n].Set(blackhole, 0) },
		func(t *testing.T, c *cluster, n int) { c.s3Proxy[n].Set(pass, 0) }},
	{"refuse-postgres", func(c *cluster, n int) { c.pgProxy[n].Set(refuse, 0) },
		func(t *testing.T, c *cluster, n int) { c.pgProxy[n].Set(pass, 0) }},
	{"slow-links", func(c *cluster, n int) {
		c.pgProxy[n].Set(pass, 20*time.Millisecond)
		c.s3Proxy[n].Set(pass, 20*time.Millisecond)
	},
		func(t *testing.T, c *cluster, n int) { c.pgProxy[n].Set(pass, 0); c.s3Proxy[n].Set(pass, 0) }},
	{"restart-postgres", func(c *cluster, n int) { c.pg.Stop() },
		func(t *testing.T, c *cluster, n int) {
			if err := c.pg.Start(); err != nil {
				t.Fatal(err)
			}
		}},
	{"clock-skew", func(c *cluster, n int) { c.restartNode(n, skews[c.rng.Intn(len(skews))]) },
		func(t *testing.T, c *cluster, n int) { c.restartNode(n, 0) }},
	{"restart-minio", func(c *cluster, n int) { c.minio.Stop() },
		func(t *testing.T, c *cluster, n int) {
			if err := c.minio.Start(); err != nil {
				t.Fatal(err)
			}
		}},
}

// skews are the clock offsets of the clock-skew fault: small ones, and
// ones past the garbage (1 min) and orphan (1 h) graces, which the
// janitors compute from their node's clock.
var skews = []time.Duration{-2 * time.Hour, -90 * time.Second, 90 * time.Second, 2 * time.Hour}

// restartNode stops node n gracefully and starts it again with its clock
// skewed by off (--clock-offset, through the environment), or not.
func (c *cluster) restartNode(n int, off time.Duration) {
	node := c.nodes[n]
	node.Env = slices.DeleteFunc(node.Env, func(e string) bool { return strings.HasPrefix(e, "COFFER_CLOCK_OFFSET=") })
	if off != 0 {
		node.Env = append(node.Env, "COFFER_CLOCK_OFFSET="+off.String())
		c.note = "clock " + off.String()
	}
	if err := node.Term(10 * time.Second); err != nil {
		c.t.Logf("node %d: %v", n, err)
	}
	node.Restart()
}

// nemesis injects one fault at a time on a seeded schedule: a quiet
// period, a fault window of a few seconds, the heal, and the wait until
// every node serves again (the recovery time).
type nemesis struct {
	c          *cluster
	r          *run
	rng        *rand.Rand
	log        []string
	recoveries map[string][]time.Duration
}

func (m *nemesis) logf(t *testing.T, format string, args ...any) {
	line := fmt.Sprintf("%8s ", ms(m.r.now())) + fmt.Sprintf(format, args...)
	m.log = append(m.log, line)
	t.Log(line)
}

func (m *nemesis) run(t *testing.T, d time.Duration) {
	m.recoveries = map[string][]time.Duration{}
	end := time.Now().Add(d)
	var order []int
	faults := m.c.faults()
	for time.Now().Before(end) {
		if len(order) == 0 { // every kind once, in a seeded order, then again
			order = m.rng.Perm(len(faults))
		}
		f := faults[order[0]]
		order = order[1:]
		quiet := time.Duration(3000+m.rng.Intn(3000)) * time.Millisecond
		window := time.Duration(3000+m.rng.Intn(4000)) * time.Millisecond
		n := m.rng.Intn(nodeCount)
		time.Sleep(quiet)
		if time.Now().Add(window).After(end) {
			break
		}
		name := f.name
		m.r.fault.Store(&name)
		m.c.note = ""
		f.inject(m.c, n)
		m.logf(t, "inject %s (node %d) for %v %s", f.name, n, window, m.c.note)
		time.Sleep(window)
		f.heal(t, m.c, n)
		m.r.fault.Store(nil)
		rec, ok := m.recovered()
		m.logf(t, "healed %s (node %d): every node serves again after %v", f.name, n, rec)
		if !ok {
			t.Errorf("after healing %s on node %d, the nodes did not all serve again within %v", f.name, n, rec)
		}
		m.recoveries[f.name] = append(m.recoveries[f.name], rec)
	}
	time.Sleep(time.Until(end))
}

// recovered waits until every node answers a GET (200 or 404), up to a
// minute, and returns how long it took.
func (m *nemesis) recovered() (time.Duration, bool) {
	begin := time.Now()
	conns := make([]*s3conn, nodeCount)
	for i := range conns {
		conns[i] = m.c.conn(i)
	}
	for time.Since(begin) < time.Minute {
		all := true
		for _, cn := range conns {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			rep, err := cn.do(ctx, "GET", "/probe", nil)
			cancel()
			if err != nil || rep.status != 200 && rep.status != 404 {
				all = false
				break
			}
		}
		if all {
			return time.Since(begin).Round(time.Millisecond), true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Since(begin).Round(time.Millisecond), false
}

// signal sends sig to process pid, if one runs (never to pid 0: that is
// the whole process group, the test included).
func signal(pid int, sig syscall.Signal) {
	if pid > 0 {
		_ = syscall.Kill(pid, sig)
	}
}
