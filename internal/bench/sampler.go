package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coffer-storage/coffer/internal/bench/report"
)

// sampler reads the server's resident memory and goroutines from its
// Prometheus /metrics at a fixed interval.
type sampler struct {
	url      string
	client   *http.Client
	epoch    time.Time
	interval time.Duration

	mu      sync.Mutex
	samples []report.Sample
	note    string
}

// run samples until ctx ends. It gives up (with a note) if the first
// sample fails: the endpoint is not there or not readable from here.
func (s *sampler) run(ctx context.Context) {
	tk := time.NewTicker(s.interval)
	defer tk.Stop()
	for first := true; ; first = false {
		if err := s.sample(ctx); err != nil && ctx.Err() == nil {
			if first {
				s.mu.Lock()
				s.note = fmt.Sprintf("server metrics unavailable (%v)", err)
				s.mu.Unlock()
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
		}
	}
}

func (s *sampler) sample(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		return fmt.Errorf("GET %s: %s", s.url, resp.Status)
	}
	rss, gor, err := parseMetrics(resp.Body)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.samples = append(s.samples, report.Sample{T: time.Since(s.epoch).Seconds(), RSSBytes: rss, Goroutines: gor})
	s.mu.Unlock()
	return nil
}

// parseMetrics finds process_resident_memory_bytes and go_goroutines in
// a Prometheus text exposition.
func parseMetrics(r io.Reader) (rss, goroutines float64, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var haveRSS, haveG bool
	for sc.Scan() {
		line := sc.Text()
		name, rest, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		var dst *float64
		switch name {
		case "process_resident_memory_bytes":
			dst, haveRSS = &rss, true
		case "go_goroutines":
			dst, haveG = &goroutines, true
		default:
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return 0, 0, fmt.Errorf("metrics: no value for %s", name)
		}
		if *dst, err = strconv.ParseFloat(f[0], 64); err != nil {
			return 0, 0, fmt.Errorf("metrics: %s: %v", name, err)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, err
	}
	if !haveRSS || !haveG {
		return 0, 0, fmt.Errorf("metrics: process_resident_memory_bytes or go_goroutines missing")
	}
	return rss, goroutines, nil
}

func (s *sampler) result() report.Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	return report.Server{MetricsURL: s.url, Note: s.note, Samples: append([]report.Sample{}, s.samples...)}
}
