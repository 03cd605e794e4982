package bench

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Options configure a run. The zero value of a field takes the default
// noted on it (applied by Run); Validate reports what cannot work.
type Options struct {
	// Scenario is one of Scenarios().
	Scenario string

	// Target is the file API's base URL (http://host:port). Required by the
	// file API scenarios; for S3 scenarios it is optional and used to create
	// an access key when none is given and to sample /metrics.
	Target string
	// S3Target is the S3 endpoint (path-style) of the s3-* scenarios.
	S3Target string
	// AccessKey and SecretKey sign S3 requests. Empty: a user and a key are
	// created through Target.
	AccessKey, SecretKey string
	// AdminToken is an administrator's access token: the setup creates
	// its accounts through the admin API (POST /api/v1/admin/users), which
	// the server's per-address signup limit does not apply to. Empty: the
	// setup signs up like anyone.
	AdminToken string
	// Region signs S3 requests. Default us-east-1.
	Region string
	// Bucket for the S3 scenarios. Default coffer-bench-<run id>.
	Bucket string
	// UnsignedPayload signs S3 bodies as UNSIGNED-PAYLOAD instead of their
	// SHA-256 (what SDKs send over plain HTTP).
	UnsignedPayload bool

	// Compare is a second S3 endpoint run in alternating rounds with the
	// same load; CompareAccessKey/SecretKey sign for it.
	Compare                            string
	CompareAccessKey, CompareSecretKey string
	// Rounds per endpoint when comparing. Default 2.
	Rounds int

	// Load model: VUs for Duration; or Stages (k6 ramping VUs); or Rate
	// iterations per second for Duration with at most VUs in flight.
	VUs      int           // default 10 (arrival rate: 100)
	Duration time.Duration // default 30s
	Stages   []Stage
	Rate     float64
	// Think is a pause after each iteration, uniformly drawn between
	// Think and ThinkMax (ThinkMax 0: exactly Think). Not in rate mode.
	Think, ThinkMax time.Duration

	// Users is how many accounts the setup creates; VUs are spread over
	// them, each with its own session. Default min(20, max VUs).
	Users int
	// Size of uploaded / prepared objects. Default: the scenario's.
	Size int64
	// Objects prepared for s3-get and s3-mixed. Default 100.
	Objects int

	// Timeout bounds each request, body included. Default 60s.
	Timeout time.Duration
	// Grace is how long iterations in flight may finish once the load
	// model ends before they are cancelled. Default 30s.
	Grace time.Duration
	// SetupConcurrency bounds parallel setup requests (signups, logins and
	// preparation uploads). Default 8.
	SetupConcurrency int
	// SetupTimeout bounds the setup phase. Default 10m.
	SetupTimeout time.Duration

	// NoAudit turns the post-run integrity audit off.
	NoAudit bool
	// AuditConcurrency bounds parallel audit reads. Default 8.
	AuditConcurrency int
	// AuditTimeout bounds the audit. Default 10m.
	AuditTimeout time.Duration
	// ExpectContinue sends "Expect: 100-continue" with request bodies of
	// 1 MiB and more, as S3 SDKs and curl do (browsers and k6 do not): a
	// server that refuses the request at once is spared the body.
	ExpectContinue bool
	// VerifyReads hashes every downloaded body during the run (by default
	// reads are checked by status, length and checksum headers).
	VerifyReads bool

	// Keep leaves what the run created on the target: accounts, S3 keys,
	// the S3 bucket and the objects. By default the run deletes them after
	// the audit (what it cannot delete is reported as a warning).
	Keep bool
	// CleanupTimeout bounds the cleanup. Default 10m.
	CleanupTimeout time.Duration

	// MetricsURL is sampled for the server's RSS and goroutines. Default
	// Target + "/metrics"; "off" disables it.
	MetricsURL string
	// SampleInterval between /metrics samples. Default 2s.
	SampleInterval time.Duration

	// Progress, if set, receives a live progress line every second
	// (carriage-return terminated).
	Progress bool
}

// Stage is one k6-style ramp: from the previous stage's target (0 at the
// start) to Target VUs, linearly over Duration.
type Stage struct {
	Duration time.Duration
	Target   int
}

// ParseStages parses "1m:250,1m:500,30s:0" into stages, multiplying every
// target by scale (rounded).
func ParseStages(s string, scale float64) ([]Stage, error) {
	if scale <= 0 || math.IsNaN(scale) || math.IsInf(scale, 0) {
		return nil, fmt.Errorf("scale must be > 0, got %v", scale)
	}
	var out []Stage
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		d, n, ok := strings.Cut(part, ":")
		if !ok {
			return nil, fmt.Errorf("stage %q: want DURATION:TARGET, e.g. 1m:250", part)
		}
		dur, err := time.ParseDuration(strings.TrimSpace(d))
		if err != nil || dur <= 0 {
			return nil, fmt.Errorf("stage %q: invalid duration", part)
		}
		t, err := strconv.Atoi(strings.TrimSpace(n))
		if err != nil || t < 0 {
			return nil, fmt.Errorf("stage %q: invalid target", part)
		}
		out = append(out, Stage{Duration: dur, Target: int(math.Round(float64(t) * scale))})
	}
	return out, nil
}

// ParseRate parses an arrival rate: "200", "200/s" or "600/m", in
// iterations per second.
func ParseRate(s string) (float64, error) {
	num, unit, _ := strings.Cut(strings.TrimSpace(s), "/")
	r, err := strconv.ParseFloat(num, 64)
	if err != nil || r <= 0 || math.IsInf(r, 0) {
		return 0, fmt.Errorf("invalid rate %q: want e.g. 200/s", s)
	}
	switch unit {
	case "", "s":
	case "m":
		r /= 60
	default:
		return 0, fmt.Errorf("invalid rate unit in %q: use /s or /m", s)
	}
	return r, nil
}

// ParseThink parses "1s" or "1s-3s" (a uniform range).
func ParseThink(s string) (lo, hi time.Duration, err error) {
	a, b, isRange := strings.Cut(s, "-")
	lo, err = time.ParseDuration(strings.TrimSpace(a))
	if err != nil || lo < 0 {
		return 0, 0, fmt.Errorf("invalid think time %q", s)
	}
	if !isRange {
		return lo, 0, nil
	}
	hi, err = time.ParseDuration(strings.TrimSpace(b))
	if err != nil || hi < lo {
		return 0, 0, fmt.Errorf("invalid think range %q", s)
	}
	return lo, hi, nil
}

// Errors of Validate.
var (
	ErrNoScenario     = errors.New("unknown scenario")
	ErrNoTarget       = errors.New("--target (the file API URL) is required")
	ErrNoS3Target     = errors.New("--s3-target is required for S3 scenarios")
	ErrNoCredentials  = errors.New("S3 scenarios need --access-key and --secret-key, or --target to create a key")
	ErrLoadModel      = errors.New("use either --vus/--duration, --stages, or --rate with --duration")
	ErrCompareFileAPI = errors.New("--compare works with the S3 scenarios only")
	ErrCompareKeys    = errors.New("--compare needs --compare-access-key and --compare-secret-key")
)

func checkURL(name, s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s: %q is not an http(s) URL", name, s)
	}
	return nil
}

// Validate checks o before defaults are applied.
func (o *Options) Validate() error {
	info, ok := scenarios[o.Scenario]
	if !ok {
		return fmt.Errorf("%w %q (one of: %s)", ErrNoScenario, o.Scenario, strings.Join(Scenarios(), ", "))
	}
	for _, u := range []struct{ name, v string }{{"--target", o.Target}, {"--s3-target", o.S3Target}, {"--compare", o.Compare}} {
		if err := checkURL(u.name, u.v); err != nil {
			return err
		}
	}
	if info.s3 {
		if o.S3Target == "" {
			return ErrNoS3Target
		}
		if (o.AccessKey == "") != (o.SecretKey == "") {
			return errors.New("--access-key and --secret-key go together")
		}
		if o.AccessKey == "" && o.Target == "" {
			return ErrNoCredentials
		}
	} else if o.Target == "" {
		return ErrNoTarget
	}
	if o.Compare != "" {
		if !info.s3 {
			return ErrCompareFileAPI
		}
		if o.CompareAccessKey == "" || o.CompareSecretKey == "" {
			return ErrCompareKeys
		}
	}
	switch {
	case len(o.Stages) > 0 && (o.Rate > 0 || o.Duration > 0 || o.VUs > 0):
		return fmt.Errorf("%w: --stages sets VUs and duration itself", ErrLoadModel)
	case o.Rate < 0 || o.VUs < 0 || o.Duration < 0 || o.Users < 0 || o.Objects < 0 || o.Size < 0 || o.Rounds < 0:
		return errors.New("counts, sizes and durations must not be negative")
	case o.Rate > 0 && (o.Think > 0 || o.ThinkMax > 0):
		return errors.New("--think does not apply to --rate (arrivals are paced by the rate)")
	}
	for i, s := range o.Stages {
		if s.Duration <= 0 || s.Target < 0 {
			return fmt.Errorf("stage %d: need a positive duration and a target >= 0", i+1)
		}
	}
	if len(o.Stages) > 0 && maxTarget(o.Stages) == 0 {
		return errors.New("--stages never reaches a VU")
	}
	if o.ThinkMax > 0 && o.ThinkMax < o.Think {
		return errors.New("think range upper bound below lower bound")
	}
	if o.MetricsURL != "" && o.MetricsURL != "off" {
		if err := checkURL("--metrics-url", o.MetricsURL); err != nil {
			return err
		}
	}
	return nil
}

// withDefaults returns o with defaults applied.
func (o Options) withDefaults() Options {
	info := scenarios[o.Scenario]
	if o.Region == "" {
		o.Region = "us-east-1"
	}
	if o.Rounds == 0 {
		o.Rounds = 2
	}
	if o.Compare == "" {
		o.Rounds = 1
	}
	if len(o.Stages) == 0 {
		if o.Duration == 0 {
			o.Duration = 30 * time.Second
		}
		if o.VUs == 0 {
			o.VUs = 10
			if o.Rate > 0 {
				o.VUs = 100
			}
		}
	}
	if o.Size == 0 {
		o.Size = info.size
	}
	if o.Objects == 0 {
		o.Objects = 100
		if info.objects > 0 {
			o.Objects = info.objects
		}
	}
	if o.Users == 0 {
		o.Users = 20
	}
	o.Users = min(o.Users, o.maxVUs())
	if o.Timeout == 0 {
		o.Timeout = 60 * time.Second
	}
	if o.Grace == 0 {
		o.Grace = 30 * time.Second
	}
	if o.SetupConcurrency == 0 {
		o.SetupConcurrency = 8
	}
	if o.SetupTimeout == 0 {
		o.SetupTimeout = 10 * time.Minute
	}
	if o.AuditConcurrency == 0 {
		o.AuditConcurrency = 8
	}
	if o.AuditTimeout == 0 {
		o.AuditTimeout = 10 * time.Minute
	}
	if o.CleanupTimeout == 0 {
		o.CleanupTimeout = 10 * time.Minute
	}
	if o.SampleInterval == 0 {
		o.SampleInterval = 2 * time.Second
	}
	if o.MetricsURL == "" && o.Target != "" {
		o.MetricsURL = strings.TrimRight(o.Target, "/") + "/metrics"
	}
	if o.MetricsURL == "off" {
		o.MetricsURL = ""
	}
	o.Target = strings.TrimRight(o.Target, "/")
	o.S3Target = strings.TrimRight(o.S3Target, "/")
	o.Compare = strings.TrimRight(o.Compare, "/")
	return o
}

// maxVUs is the most VUs the load model runs at once.
func (o *Options) maxVUs() int {
	if len(o.Stages) > 0 {
		return maxTarget(o.Stages)
	}
	return max(o.VUs, 1)
}

func maxTarget(st []Stage) int {
	m := 0
	for _, s := range st {
		m = max(m, s.Target)
	}
	return m
}
