package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/coffer-storage/coffer/internal/bench"
	"github.com/coffer-storage/coffer/internal/bench/report"
	"github.com/coffer-storage/coffer/internal/config"
)

type benchCmd struct{ env Env }

func (*benchCmd) Synopsis() string {
	return "load-test a coffer (or any S3 endpoint) and audit every acknowledged upload"
}

// benchEnv names the environment variables coffer bench reads, by flag:
// both the defaults and the help come from it.
var benchEnv = map[string]string{
	"access-key":         "COFFER_BENCH_ACCESS_KEY",
	"secret-key":         "COFFER_BENCH_SECRET_KEY",
	"compare-access-key": "COFFER_BENCH_COMPARE_ACCESS_KEY",
	"compare-secret-key": "COFFER_BENCH_COMPARE_SECRET_KEY",
	"admin-token":        "COFFER_BENCH_ADMIN_TOKEN",
}

func (c *benchCmd) Run(ctx context.Context, args []string) error {
	var o bench.Options
	fs := flag.NewFlagSet("coffer bench", flag.ContinueOnError)
	env := func(flag string) string { return c.env.Getenv(benchEnv[flag]) }
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintln(w, "usage: coffer bench SCENARIO --target URL [--s3-target URL] [flags]\n\nscenarios:")
		for _, n := range bench.Scenarios() {
			fmt.Fprintf(w, "  %-14s %s\n", n, bench.ScenarioDoc(n))
		}
		fmt.Fprintln(w, "\nflags:")
		config.PrintDefaults(w, fs, func(name string) string { return benchEnv[name] })
	}
	routeHelp(fs, c.env)

	fs.StringVar(&o.Target, "target", "", "file API base URL of the coffer under test, e.g. http://127.0.0.1:8080")
	fs.StringVar(&o.S3Target, "s3-target", "", "S3 endpoint (path-style) for the s3-* scenarios, e.g. http://127.0.0.1:9000")
	fs.StringVar(&o.AccessKey, "access-key", env("access-key"), "S3 access key ID (empty: create an account and a key through --target)")
	fs.StringVar(&o.SecretKey, "secret-key", env("secret-key"), "S3 secret key")
	fs.StringVar(&o.AdminToken, "admin-token", env("admin-token"), "an administrator's access token: the setup creates its accounts through the admin API, "+
		"past the server's per-address signup limit (default: it signs them up like anyone)")
	fs.StringVar(&o.Region, "region", "us-east-1", "S3 signing region")
	fs.StringVar(&o.Bucket, "bucket", "", "S3 bucket to use (default coffer-bench-<run id>, created)")
	payload := fs.String("s3-payload", "signed", "S3 body signing: signed (the body's SHA-256, as SDKs over HTTP) or unsigned (UNSIGNED-PAYLOAD)")
	fs.StringVar(&o.Compare, "compare", "", "second S3 endpoint to run the same load against, in alternating rounds")
	fs.StringVar(&o.CompareAccessKey, "compare-access-key", env("compare-access-key"), "access key for --compare")
	fs.StringVar(&o.CompareSecretKey, "compare-secret-key", env("compare-secret-key"), "secret key for --compare")
	fs.IntVar(&o.Rounds, "rounds", 2, "rounds per endpoint with --compare")

	fs.IntVar(&o.VUs, "vus", 0, "virtual users (default 10; with --rate: the most in flight, default 100)")
	fs.DurationVar(&o.Duration, "duration", 0, "run time (default 30s)")
	stages := fs.String("stages", "", "k6-style ramp DURATION:VUS,... e.g. 1m:250,1m:500,1m:0 (instead of --vus/--duration)")
	scale := fs.Float64("scale", 1, "multiply every --stages target by this")
	rate := fs.String("rate", "", "constant arrival rate, e.g. 200/s (iterations started per second)")
	think := fs.String("think", "", "pause after each iteration: 1s, or a uniform range 1s-3s")
	fs.IntVar(&o.Users, "users", 0, "accounts created by the setup; VUs are spread over them (default min(20, VUs))")
	size := fs.String("size", "", "object size, e.g. 4KiB, 1MiB (default: the scenario's)")
	fs.IntVar(&o.Objects, "objects", 0, "objects prepared for s3-get and s3-mixed (default 100)")

	fs.DurationVar(&o.Timeout, "timeout", 60*time.Second, "per-request timeout, body included")
	fs.DurationVar(&o.Grace, "grace", 30*time.Second, "time iterations in flight may finish after the load ends")
	fs.IntVar(&o.SetupConcurrency, "setup-concurrency", 8, "parallel requests during setup")
	fs.DurationVar(&o.SetupTimeout, "setup-timeout", 10*time.Minute, "bound on the setup phase")
	auditOn := fs.Bool("audit", true, "read back every acknowledged upload and compare its SHA-256")
	fs.IntVar(&o.AuditConcurrency, "audit-concurrency", 8, "parallel reads during the audit")
	fs.DurationVar(&o.AuditTimeout, "audit-timeout", 10*time.Minute, "bound on the audit")
	fs.BoolVar(&o.ExpectContinue, "expect-continue", false, "send Expect: 100-continue with bodies of 1 MiB and more, as S3 SDKs and curl do (a refusal then saves the body)")
	fs.BoolVar(&o.VerifyReads, "verify-reads", false, "hash every downloaded body during the run (default: check status, length and checksum headers)")
	fs.StringVar(&o.MetricsURL, "metrics-url", "", "server metrics to sample (default TARGET/metrics; off to disable)")
	fs.DurationVar(&o.SampleInterval, "sample-interval", 2*time.Second, "interval between server metrics samples")

	cleanup := fs.Bool("cleanup", true, "after the audit, delete what the run created: its objects, the S3 bucket it made, its keys and accounts")
	keep := fs.Bool("keep", false, "leave what the run created on the target (same as --cleanup=false)")

	jsonOut := fs.String("json", "", "write the report as JSON to this file")
	htmlOut := fs.String("html", "", "write a self-contained HTML report with charts to this file")
	maxErr := fs.Float64("max-error-rate", 0, "exit non-zero if failed requests / requests exceeds this (shed 429/503 are not failures)")

	// The scenario may come first (coffer bench s3-put --flags) or last.
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		o.Scenario, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.Scenario == "" && fs.NArg() > 0 {
		o.Scenario = fs.Arg(0)
		if err := fs.Parse(fs.Args()[1:]); err != nil {
			return err
		}
	}
	if fs.NArg() > 0 {
		return usageError{errorf("unexpected arguments: %v", fs.Args())}
	}
	if o.Scenario == "" {
		return usageError{errorf("need a scenario, one of: %s ('coffer bench -h' describes them)", strings.Join(bench.Scenarios(), ", "))}
	}
	var err error
	if *stages != "" {
		if o.Stages, err = bench.ParseStages(*stages, *scale); err != nil {
			return usageError{err}
		}
	} else if *scale != 1 {
		return usageError{errorf("--scale applies to --stages")}
	}
	if *rate != "" {
		if o.Rate, err = bench.ParseRate(*rate); err != nil {
			return usageError{err}
		}
	}
	if *think != "" {
		if o.Think, o.ThinkMax, err = bench.ParseThink(*think); err != nil {
			return usageError{err}
		}
	}
	if *size != "" {
		if o.Size, err = config.ParseBytes(*size); err != nil {
			return usageError{err}
		}
	}
	switch *payload {
	case "signed":
	case "unsigned":
		o.UnsignedPayload = true
	default:
		return usageError{errorf("--s3-payload must be signed or unsigned")}
	}
	o.NoAudit = !*auditOn
	cleanupSet := false
	fs.Visit(func(f *flag.Flag) { cleanupSet = cleanupSet || f.Name == "cleanup" })
	if *keep && *cleanup && cleanupSet {
		return usageError{errorf("--keep and --cleanup contradict each other")}
	}
	o.Keep = *keep || !*cleanup
	if err := o.Validate(); err != nil {
		return usageError{err}
	}

	// The live progress line only on a terminal, never into a file.
	var progress io.Writer
	if isTerminal(c.env.Stdout) {
		progress = c.env.Stdout
	}
	// The first interrupt (ctx) ends the load; the audit and the cleanup
	// still run, on finish, which a second interrupt cancels.
	finish, abort := context.WithCancel(context.WithoutCancel(ctx))
	defer abort()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		n := 0
		for {
			select {
			case <-sigs:
				n++
				if n == 1 {
					fmt.Fprintln(c.env.Stderr, "bench: interrupted: stopping the load; the audit and the cleanup still run (interrupt again to abort them)")
					continue
				}
				fmt.Fprintln(c.env.Stderr, "bench: interrupted again: aborting the audit and the cleanup")
				abort()
				return
			case <-finish.Done():
				return
			}
		}
	}()
	res, err := bench.Run(ctx, finish, o, c.env.Stderr, progress)
	if err != nil {
		return err
	}
	if err := report.Text(c.env.Stdout, res); err != nil {
		return err
	}
	if *jsonOut != "" {
		if err := writeReport(*jsonOut, res, report.JSON); err != nil {
			return err
		}
	}
	if *htmlOut != "" {
		if err := writeReport(*htmlOut, res, report.HTML); err != nil {
			return err
		}
	}
	return verdict(res, *maxErr)
}

// verdict is the run's exit status: interrupted, a failed audit or too
// many failed requests are errors.
func verdict(r *report.Result, maxErrorRate float64) error {
	var errs []error
	if r.Interrupted {
		errs = append(errs, errors.New("interrupted"))
	}
	for _, x := range []*report.Result{r, compared(r)} {
		if x == nil {
			continue
		}
		if a := x.Audit; a.Enabled && a.Skipped == "" && !a.OK() {
			errs = append(errs, fmt.Errorf("audit failed%s: %d missing, %d corrupt, %d unverified of %d acknowledged uploads",
				onTarget(x), a.Missing, a.Corrupt, a.Unverified, a.Acknowledged))
		}
		if x.Requests.ErrorRate > maxErrorRate {
			errs = append(errs, fmt.Errorf("%d of %d requests failed%s (%.2f%%, --max-error-rate %g)",
				x.Requests.Failed, x.Requests.Total, onTarget(x), 100*x.Requests.ErrorRate, maxErrorRate))
		}
	}
	return errors.Join(errs...)
}

func compared(r *report.Result) *report.Result {
	if r.Compare == nil {
		return nil
	}
	return r.Compare.Result
}

func onTarget(r *report.Result) string {
	if r.S3Target != "" {
		return " on " + r.S3Target
	}
	return ""
}

func writeReport(path string, r *report.Result, write func(w io.Writer, r *report.Result) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f, r); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}
