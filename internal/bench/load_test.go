package bench

import (
	"errors"
	"testing"
	"time"
)

func TestStageTarget(t *testing.T) {
	// 10s up to 10, hold 10s, 10s up to 30, 10s down to 0.
	stages := []Stage{{10 * time.Second, 10}, {10 * time.Second, 10}, {10 * time.Second, 30}, {10 * time.Second, 0}}
	for _, c := range []struct {
		at   time.Duration
		want int
	}{
		{0, 0},
		{time.Second, 1},
		{5 * time.Second, 5},
		{9900 * time.Millisecond, 10}, // 9.9 rounds to 10
		{10 * time.Second, 10},
		{15 * time.Second, 10},
		{25 * time.Second, 20},
		{29 * time.Second, 28},
		{30 * time.Second, 30},
		{35 * time.Second, 15},
		{39 * time.Second, 3},
		{40 * time.Second, 0},
		{time.Hour, 0},
	} {
		if got := StageTarget(stages, c.at); got != c.want {
			t.Errorf("StageTarget(%v) = %d, want %d", c.at, got, c.want)
		}
	}
	if got, want := StageTarget([]Stage{{time.Minute, 100}}, time.Hour), 100; got != want {
		t.Errorf("after the last stage = %d, want %d (its target)", got, want)
	}
	if got, want := stagesDuration(stages), 40*time.Second; got != want {
		t.Errorf("duration = %v, want %v", got, want)
	}
}

func TestParseStages(t *testing.T) {
	got, err := ParseStages("1m:250, 30s:500,1m30s:0", 2)
	if err != nil {
		t.Fatal(err)
	}
	want := []Stage{{time.Minute, 500}, {30 * time.Second, 1000}, {90 * time.Second, 0}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("stage %d = %v, want %v", i, got[i], want[i])
		}
	}
	if got, _ := ParseStages("10s:3", 0.5); got[0].Target != 2 {
		t.Errorf("3 × 0.5 = %d VUs, want 2 (rounded)", got[0].Target)
	}
	for _, bad := range []string{"", "1m", "x:3", "1m:-1", "0s:5", "1m:5,", "1m:five"} {
		if _, err := ParseStages(bad, 1); err == nil {
			t.Errorf("ParseStages(%q) accepted", bad)
		}
	}
	if _, err := ParseStages("1m:5", 0); err == nil {
		t.Error("scale 0 accepted")
	}
}

func TestParseRate(t *testing.T) {
	for in, want := range map[string]float64{"200": 200, "200/s": 200, "600/m": 10, "0.5/s": 0.5} {
		if got, err := ParseRate(in); err != nil || got != want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "0", "-1/s", "5/h", "fast"} {
		if _, err := ParseRate(bad); err == nil {
			t.Errorf("ParseRate(%q) accepted", bad)
		}
	}
}

func TestParseThink(t *testing.T) {
	lo, hi, err := ParseThink("1s-3s")
	if err != nil || lo != time.Second || hi != 3*time.Second {
		t.Errorf("ParseThink(1s-3s) = %v, %v, %v", lo, hi, err)
	}
	lo, hi, err = ParseThink("500ms")
	if err != nil || lo != 500*time.Millisecond || hi != 0 {
		t.Errorf("ParseThink(500ms) = %v, %v, %v", lo, hi, err)
	}
	for _, bad := range []string{"3s-1s", "x", "-1s"} {
		if _, _, err := ParseThink(bad); err == nil {
			t.Errorf("ParseThink(%q) accepted", bad)
		}
	}
}

func TestValidate(t *testing.T) {
	ok := Options{Scenario: "s3-put", S3Target: "http://127.0.0.1:9000", AccessKey: "a", SecretKey: "s"}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid options rejected: %v", err)
	}
	for _, c := range []struct {
		name string
		edit func(o *Options)
		want error
	}{
		{"unknown scenario", func(o *Options) { o.Scenario = "nope" }, ErrNoScenario},
		{"no s3 target", func(o *Options) { o.S3Target = "" }, ErrNoS3Target},
		{"no credentials", func(o *Options) { o.AccessKey, o.SecretKey = "", "" }, ErrNoCredentials},
		{"stages and vus", func(o *Options) { o.Stages, o.VUs = []Stage{{time.Second, 1}}, 3 }, ErrLoadModel},
		{"compare without keys", func(o *Options) { o.Compare = "http://127.0.0.1:9001" }, ErrCompareKeys},
		{"bad url", func(o *Options) { o.S3Target = "127.0.0.1:9000" }, nil},
		{"stages to zero", func(o *Options) { o.Stages = []Stage{{time.Second, 0}} }, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := ok
			c.edit(&o)
			err := o.Validate()
			if err == nil {
				t.Fatal("accepted")
			}
			if c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("error %v, want %v", err, c.want)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	o := Options{Scenario: "s3-put", S3Target: "http://x/", Stages: []Stage{{time.Second, 7}, {time.Second, 3}}}.withDefaults()
	if got, want := o.maxVUs(), 7; got != want {
		t.Errorf("max VUs = %d, want %d", got, want)
	}
	if got, want := o.Users, 7; got != want {
		t.Errorf("users = %d, want %d (capped at the VUs)", got, want)
	}
	if got, want := o.S3Target, "http://x"; got != want {
		t.Errorf("s3 target = %q, want %q", got, want)
	}
	if got, want := o.Size, int64(1<<20); got != want {
		t.Errorf("size = %d, want the scenario default %d", got, want)
	}
	m := newModel(o)
	if m.mode != modeRampingVUs || m.duration != 2*time.Second {
		t.Errorf("model = %+v", m)
	}
	r := Options{Scenario: "s3-put", S3Target: "http://x", Rate: 50}.withDefaults()
	if m := newModel(r); m.mode != modeArrivalRate || m.vus != 100 || m.duration != 30*time.Second {
		t.Errorf("arrival-rate model = %+v", m)
	}
}
