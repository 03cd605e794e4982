package report

import "testing"

func TestAfterWarmup(t *testing.T) {
	var s Server
	if _, ok := s.AfterWarmup(); ok {
		t.Fatal("no samples: want no growth measured")
	}
	// 60 samples: a warm-up climbing to 40 MiB, then flat at 40 MiB with
	// one 90 MiB spike, then 43 MiB over the last sixth.
	for i := 0; i < 60; i++ {
		rss := float64(40 << 20)
		switch {
		case i < 10:
			rss = float64(i*4) * (1 << 20)
		case i == 30:
			rss = 90 << 20
		case i >= 50:
			rss = 43 << 20
		}
		s.Samples = append(s.Samples, Sample{T: float64(i), RSSBytes: rss, Goroutines: float64(100 + i%3)})
	}
	g, ok := s.AfterWarmup()
	if !ok {
		t.Fatal("60 samples: want growth measured")
	}
	if g.WarmupS != 10 || g.StartRSS != 40<<20 || g.EndRSS != 43<<20 || g.MaxRSS != 90<<20 || g.Samples != 50 {
		t.Errorf("growth %+v, want from 10 s, 40 MiB -> 43 MiB, max 90 MiB over 50 samples", g)
	}
	if g.StartG != 101 || g.EndG != 101 || g.MaxG != 102 {
		t.Errorf("goroutines %+v, want 101 -> 101, max 102", g)
	}
}
