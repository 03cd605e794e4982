package bench

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

const exposition = `# HELP go_goroutines Number of goroutines that currently exist.
# TYPE go_goroutines gauge
go_goroutines 14
go_gc_duration_seconds{quantile="0"} 2.1e-05
# HELP process_resident_memory_bytes Resident memory size in bytes.
process_resident_memory_bytes 3.7572608e+07
process_resident_memory_bytes_extra 1
`

func TestParseMetrics(t *testing.T) {
	rss, g, err := parseMetrics(strings.NewReader(exposition))
	if err != nil {
		t.Fatal(err)
	}
	if rss != 3.7572608e+07 || g != 14 {
		t.Errorf("rss %v goroutines %v", rss, g)
	}
	if _, _, err := parseMetrics(strings.NewReader("go_goroutines 3\n")); err == nil {
		t.Error("exposition without RSS accepted")
	}
	if _, _, err := parseMetrics(strings.NewReader("go_goroutines x\nprocess_resident_memory_bytes 1\n")); err == nil {
		t.Error("bad value accepted")
	}
}

func TestSamplerSamplesAndGivesUp(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, exposition) }))
	defer ok.Close()
	s := &sampler{url: ok.URL, client: ok.Client(), epoch: time.Now(), interval: 20 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	s.run(ctx)
	if r := s.result(); len(r.Samples) < 3 || r.Samples[0].Goroutines != 14 || r.Note != "" {
		t.Errorf("samples %+v, note %q", r.Samples, r.Note)
	}

	missing := httptest.NewServer(http.NotFoundHandler())
	defer missing.Close()
	s = &sampler{url: missing.URL, client: missing.Client(), epoch: time.Now(), interval: 20 * time.Millisecond}
	s.run(context.Background()) // returns at once: nothing to sample
	if r := s.result(); len(r.Samples) != 0 || !strings.Contains(r.Note, "404") {
		t.Errorf("samples %+v, note %q", r.Samples, r.Note)
	}
}
