// Package faults is a Jepsen-style fault harness for the scale-out shape:
// three coffer nodes (the real binary) on one PostgreSQL and one MinIO,
// clients on every node doing S3 PUT, GET, DELETE, conditional PUT,
// CopyObject and ListObjectsV2 on a few keys, a nemesis injecting faults
// on a seeded schedule (SIGKILL and restart, SIGSTOP pauses, partitions
// from PostgreSQL or MinIO, slow links, PostgreSQL and MinIO restarts),
// and a check of the whole history: linearizable per key (porcupine, with
// a model of an S3 key), listings complete, nothing half-written visible,
// no hang, every node serving the same state after the faults heal.
//
// The short form runs in the test command (about 3 minutes, a fixed
// seed). The long form:
//
//	COFFER_FAULTS_DURATION=30m COFFER_FAULTS_SEED=random go test -run TestFaults -timeout 40m ./test/faults/
//
// A failing run saves its history (JSON), porcupine's visualisation
// (HTML), the nemesis log and the nodes' logs in $COFFER_FAULTS_OUT, or
// a coffer-faults-TIME folder of the system's temporary folder, named in
// the failure.
//
// # Network mode
//
// tc netem is not available on the test machines, so links are faulted by
// TCP proxies (proxy_test.go) between each node and each backend: a node
// reaches PostgreSQL and MinIO only through its own two proxies, which can
// blackhole (a partition: connections stay open and silent), refuse (a
// dead peer: connections close) or delay traffic. Coffer nodes never talk
// to each other directly (their only link is PostgreSQL, NOTIFY included),
// so a partition from the other nodes is a partition from PostgreSQL.
//
// As root (mode netns), each node also runs in its own network namespace
// (`ip netns exec`), joined by a veth pair to a bridge in the root
// namespace, where the clients, the proxies, PostgreSQL and MinIO are; the
// nemesis then also cuts a node's link (`ip link set DEV down`): a silent
// partition from everything. Without root or namespaces the test falls
// back to proxies on loopback (mode proxy); COFFER_FAULTS_MODE=proxy or
// netns forces one. The test logs the mode that ran.
package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/coffer-storage/coffer/internal/testbackend"
	"github.com/coffer-storage/coffer/test/testenv"
)

func TestMain(m *testing.M) { testbackend.Main(m) }

// The short form's settings; COFFER_FAULTS_DURATION and COFFER_FAULTS_SEED
// override them.
const (
	shortDuration = 120 * time.Second
	shortSeed     = 2
)

const (
	nodeCount      = 3
	clientsPerNode = 2
	// metaCacheTTL is the nodes' --meta-cache-ttl (the default): the
	// documented bound on a stale cached record when an invalidation is
	// lost, and so on how long the nodes may disagree after a fault heals.
	metaCacheTTL = 10 * time.Second
)

// cluster is the system under test.
type cluster struct {
	t       *testing.T
	pg      *testbackend.Postgres
	minio   *testbackend.MinIO
	nodes   []*testenv.Server
	pgProxy []*proxy
	s3Proxy []*proxy
	key     testenv.S3Key
	bucket  string
	netns   *netns // nil in proxy mode
	mode    string
	rng     *rand.Rand // the nemesis's
	note    string     // what the last injection chose (logged)
}

// startCluster starts the backends, the proxies and the nodes: in
// network namespaces when it can (mode netns), else all on loopback (mode
// proxy). COFFER_FAULTS_MODE=proxy or netns chooses; netns then fails
// rather than falls back.
func startCluster(t *testing.T) *cluster {
	pg := testbackend.StartPostgres(t)
	m := testbackend.StartMinIO(t)
	b := testenv.NewBackendsOn(t, pg, m)
	c := &cluster{t: t, pg: pg, minio: m, mode: "proxy"}
	want := os.Getenv("COFFER_FAULTS_MODE")
	proxyHost := "127.0.0.1"
	if want != "proxy" {
		nn, err := setupNetns(t, nodeCount)
		switch {
		case err == nil:
			c.netns, c.mode, proxyHost = nn, "netns", nn.hostIP
		case want == "netns":
			t.Fatalf("network namespaces: %v", err)
		default:
			t.Logf("network namespaces unavailable (%v): falling back to proxies on loopback", err)
		}
	}
	for i := range nodeCount {
		pp, err := newProxy(proxyHost, fmt.Sprintf("127.0.0.1:%d", pg.Port))
		if err != nil {
			t.Fatal(err)
		}
		sp, err := newProxy(proxyHost, fmt.Sprintf("127.0.0.1:%d", m.Port))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pp.Close)
		t.Cleanup(sp.Close)
		var env []string
		for _, e := range b.Env {
			e = strings.ReplaceAll(e, fmt.Sprintf("127.0.0.1:%d", pg.Port), pp.Addr())
			e = strings.ReplaceAll(e, fmt.Sprintf("127.0.0.1:%d", m.Port), sp.Addr())
			env = append(env, e)
		}
		nb := &testenv.Backends{Env: env, PG: pg, MinIO: m}
		var n *testenv.Server
		if c.netns != nil {
			n = testenv.StartNodeIn(t, nb, c.netns.wrap(i), c.netns.ip[i], "--meta-cache-ttl", metaCacheTTL.String())
		} else {
			n = testenv.StartNode(t, nb, "--meta-cache-ttl", metaCacheTTL.String())
		}
		// A paused node must not outlive the test stopped.
		t.Cleanup(func() { signal(n.PID(), syscall.SIGCONT) })
		c.nodes = append(c.nodes, n)
		c.pgProxy = append(c.pgProxy, pp)
		c.s3Proxy = append(c.s3Proxy, sp)
	}
	u := c.nodes[0].NewUser(t)
	c.key, c.bucket = testenv.NewS3Key(t, u), u.Bucket
	return c
}

func (c *cluster) conn(node int) *s3conn {
	n := c.nodes[node]
	return &s3conn{key: c.key, bucket: c.bucket, base: func() string { return n.S3URL }, http: newHTTP()}
}

func settings(t *testing.T) (time.Duration, int64) {
	d := shortDuration
	if s := os.Getenv("COFFER_FAULTS_DURATION"); s != "" {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			t.Fatalf("COFFER_FAULTS_DURATION: %v", err)
		}
	}
	seed := int64(shortSeed)
	switch s := os.Getenv("COFFER_FAULTS_SEED"); s {
	case "":
	case "random":
		seed = time.Now().UnixNano()
	default:
		var err error
		if seed, err = strconv.ParseInt(s, 10, 64); err != nil {
			t.Fatalf("COFFER_FAULTS_SEED: %v", err)
		}
	}
	return d, seed
}

func TestFaults(t *testing.T) {
	duration, seed := settings(t)
	t.Logf("seed %d (COFFER_FAULTS_SEED=%d repeats this schedule), duration %v", seed, seed, duration)
	c := startCluster(t)
	if c.netns != nil {
		t.Logf("mode: netns (each node in its own network namespace %s…, veth pairs on bridge %s; TCP proxies between each node and each backend for delay, loss and backend partitions: no tc netem here)", c.netns.ns[0], c.netns.bridge)
	} else {
		t.Logf("mode: proxy (every process on loopback; TCP proxies between each node and each backend; no tc netem here)")
	}
	r := &run{start: time.Now(), keysPer: 5, genLen: 15 * time.Second}
	out := &artifacts{t: t, c: c}
	defer out.saveIfFailed()

	// Clients: clientsPerNode on every node.
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	hists := make([][]record, nodeCount*clientsPerNode)
	for i := range hists {
		wg.Add(1)
		go func() {
			defer wg.Done()
			node := i % nodeCount
			hists[i] = r.client(ctx, i, node, c.conn(node), seed*1000+int64(i))
		}()
	}

	// The nemesis, in this goroutine (it may fail the test).
	nem := &nemesis{c: c, r: r, rng: rand.New(rand.NewSource(seed))}
	c.rng = nem.rng
	nem.run(t, duration)
	stop()
	wg.Wait()
	var h []record
	for _, ch := range hists {
		h = append(h, ch...)
	}
	out.history, out.nemesis = &h, nem.log

	// After the faults: every node serves the same state within the
	// metadata cache's TTL (and a margin for a node just restarted).
	converge := r.converge(t, c, &h)

	// The checks.
	ops := operations(h)
	res, info := porcupine.CheckOperationsVerbose(registerModel(), ops, max(90*time.Second, duration/4))
	out.info = &info
	t.Logf("history: %d operations (%d lists) by %d clients; linearizability: %s", len(h), countLists(h), len(hists), res)
	if res != porcupine.Ok {
		t.Errorf("the history is not linearizable (porcupine: %s)", res)
		for _, bad := range badKeys(h, duration) {
			t.Errorf("not linearizable: %s", bad)
		}
	}
	for _, v := range checkStale(h) {
		t.Errorf("stale read (the documented contract): %s", v)
	}
	for _, v := range checkLists(h) {
		t.Errorf("listing: %s", v)
	}
	for _, f := range r.finding {
		t.Errorf("integrity: %s", f)
	}
	var hangs, unclear int
	for _, rec := range h {
		if rec.Out.Err == "timeout" {
			hangs++
		}
		if !isClear(rec.Out) && rec.Out.Err != "timeout" {
			if unclear++; unclear <= 5 {
				t.Errorf("unclear error: %s %s by client %d on node %d at %s (fault %q): %s", rec.In.Kind, rec.In.Key, rec.Client, rec.Node, ms(rec.Call), rec.Fault, rec.Out.Err)
			}
		}
	}
	if hangs > 0 {
		t.Errorf("%d requests hung past %v (the documented request timeout and a margin)", hangs, clientTimeout)
	}
	t.Logf("converged in %v after the last fault healed (bound %v)", converge, metaCacheTTL+5*time.Second)
	if unclear > 0 {
		t.Errorf("%d requests ended with an unclear error (a 5xx other than 503 with Retry-After, an unexplained transport error)", unclear)
	}
	t.Log("\n" + table(h, nem.recoveries))
}

// badKeys checks each key alone and describes those whose history is
// not linearizable: the key, its operations' time span and the faults
// open during it.
func badKeys(h []record, duration time.Duration) []string {
	byKey := map[string][]record{}
	for _, r := range h {
		if !r.List {
			byKey[r.In.Key] = append(byKey[r.In.Key], r)
		}
	}
	var out []string
	for key, kh := range byKey {
		res := porcupine.CheckOperationsTimeout(registerModel(), operations(kh), max(30*time.Second, duration/20))
		if res == porcupine.Ok {
			continue
		}
		first, last := kh[0].Call, kh[0].Call
		faults := map[string]bool{}
		for _, r := range kh {
			first, last = min(first, r.Call), max(last, r.Call)
			if r.Fault != "" {
				faults[r.Fault] = true
			}
		}
		out = append(out, fmt.Sprintf("%s (%s): %d operations from %s to %s, faults open then: %v", key, res, len(kh), ms(first), ms(last), slices.Sorted(maps.Keys(faults))))
	}
	slices.Sort(out)
	return out
}

func countLists(h []record) int {
	n := 0
	for _, r := range h {
		if r.List {
			n++
		}
	}
	return n
}

// converge reads every key from every node until all nodes agree, within
// metaCacheTTL and a margin; the reads join the history (they must be
// linearizable too). It returns the time it took.
func (r *run) converge(t *testing.T, c *cluster, h *[]record) time.Duration {
	var keys []string
	for gen := time.Duration(0); gen <= time.Duration(r.now()); gen += r.genLen {
		_, ks := r.keys(int64(gen))
		keys = append(keys, ks...)
	}
	conns := make([]*s3conn, nodeCount)
	for i := range conns {
		conns[i] = c.conn(i)
	}
	begin := time.Now()
	bound := metaCacheTTL + 5*time.Second
	for {
		agree := true
		for _, key := range keys {
			var vals []string
			for i, cn := range conns {
				rec := record{Client: nodeCount*clientsPerNode + i, Node: i, In: input{Kind: opGet, Key: key}, Call: r.now()}
				rep, err := cn.do(context.Background(), "GET", "/"+key, nil)
				rec.Out = outcome(rep, err)
				rec.Return, rec.Latency = r.now(), r.now()-rec.Call
				v := fmt.Sprint(rec.Out.Status)
				if rec.Out.OK {
					id, berr := checkBody(rep.body)
					if berr != nil {
						r.note("final GET %s on node %d: %v", key, i, berr)
						id = "corrupt"
					}
					rec.Out.Value, v = id, id
				}
				if rec.Out.Unknown {
					rec.Return = -1
					v = "?" + rec.Out.Err
				}
				*h = append(*h, rec)
				vals = append(vals, v)
			}
			if slices.ContainsFunc(vals, func(v string) bool { return v != vals[0] || strings.HasPrefix(v, "?") }) {
				agree = false
				if time.Since(begin) > bound {
					t.Errorf("after the faults healed, the nodes still disagree on %s after %v (bound %v): %v", key, time.Since(begin).Round(time.Millisecond), bound, vals)
				}
			}
		}
		if agree || time.Since(begin) > bound {
			return time.Since(begin).Round(time.Millisecond)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// ---- artifacts ----

type artifacts struct {
	t       *testing.T
	c       *cluster
	history *[]record
	info    *porcupine.LinearizationInfo
	nemesis []string
}

// saveIfFailed keeps what a failing run needs for debugging in a folder
// that survives the test (never in the checkout).
func (a *artifacts) saveIfFailed() {
	if !a.t.Failed() {
		return
	}
	dir := os.Getenv("COFFER_FAULTS_OUT")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "coffer-faults-"+time.Now().UTC().Format("20060102-150405"))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		a.t.Logf("saving artifacts: %v", err)
		return
	}
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			a.t.Logf("saving %s: %v", name, err)
		}
	}
	if a.history != nil {
		b, _ := json.MarshalIndent(*a.history, "", " ")
		write("history.json", b)
	}
	if a.info != nil {
		if err := porcupine.VisualizePath(registerModel(), *a.info, filepath.Join(dir, "linearizability.html")); err != nil {
			a.t.Logf("visualisation: %v", err)
		}
	}
	write("nemesis.log", []byte(strings.Join(a.nemesis, "\n")+"\n"))
	if a.c != nil {
		for i, n := range a.c.nodes {
			write(fmt.Sprintf("node%d.log", i), []byte(n.AllStderr()))
		}
	}
	a.t.Errorf("the failing run's history, visualisation and logs are in %s", dir)
}

// ---- measurements ----

// table is the availability per fault kind: the share of operations that
// got an answer (a success, or a 4xx such as 412 or 404: not a 5xx, not
// a refused or broken connection), the p99 latency of those, and the
// recovery times after each heal.
func table(h []record, recoveries map[string][]time.Duration) string {
	type agg struct {
		n, ok, hang, unclear int
		lat                  []int64
	}
	by := map[string]*agg{}
	for _, r := range h {
		f := r.Fault
		if f == "" {
			f = "none (quiet)"
		}
		a := by[f]
		if a == nil {
			a = &agg{}
			by[f] = a
		}
		a.n++
		if !r.Out.Unknown && r.Out.Err == "" {
			a.ok++
			a.lat = append(a.lat, r.Latency)
		}
		if r.Out.Err == "timeout" {
			a.hang++
		}
		if !isClear(r.Out) && r.Out.Err != "timeout" {
			a.unclear++
		}
	}
	kinds := make([]string, 0, len(by))
	for k := range by {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	var b strings.Builder
	b.WriteString("| fault | ops | answered | p99 answered | hangs | unclear errors | recovery after heal (max) |\n|---|---:|---:|---:|---:|---:|---:|\n")
	for _, k := range kinds {
		a := by[k]
		slices.Sort(a.lat)
		p99 := "-"
		if len(a.lat) > 0 {
			p99 = time.Duration(a.lat[int(math.Ceil(0.99*float64(len(a.lat))))-1]).Round(time.Millisecond).String()
		}
		rec := "-"
		if rs := recoveries[k]; len(rs) > 0 {
			rec = fmt.Sprintf("%v (%d heals)", slices.Max(rs).Round(time.Millisecond), len(rs))
		}
		fmt.Fprintf(&b, "| %s | %d | %.1f%% | %s | %d | %d | %s |\n", k, a.n, 100*float64(a.ok)/float64(a.n), p99, a.hang, a.unclear, rec)
	}
	return b.String()
}
