package bench_test

import (
	"testing"

	"github.com/coffer-storage/coffer/test/testenv"
)

// TestPlanMatchesWhatTheRunWrites: before its setup, a run says how much
// it will write ("the setup will upload …", "the load will upload about
// …"); the report says what the server acknowledged (setup.bytes,
// data.uploaded_bytes). At a constant arrival rate with a VU free for
// every arrival and nothing failing, the two must be equal (issue 17: the
// tus scenario announced that it uploads nothing, and a rate that does not
// divide a second started one iteration more than announced).
func TestPlanMatchesWhatTheRunWrites(t *testing.T) {
	srv := testenv.Start(t)
	s3 := []string{"--s3-target", srv.S3URL}
	for _, c := range []struct {
		scenario string
		extra    []string
	}{
		{"upload-proxy", []string{"--size", "32KiB"}},
		{"tus", []string{"--size", "256KiB"}},
		{"batch", []string{"--size", "8KiB"}},
		{"read", []string{"--size", "8KiB", "--users", "2"}},
		{"stream", []string{"--size", "256KiB", "--users", "2"}},
		{"s3-put", append([]string{"--size", "32KiB"}, s3...)},
		{"s3-get", append([]string{"--size", "16KiB", "--objects", "10"}, s3...)},
		{"proxy-soak", append([]string{"--objects", "20"}, s3...)},
	} {
		t.Run(c.scenario, func(t *testing.T) {
			// 3/s for 2s: 6 arrivals, each finding one of the 8 VUs free.
			args := append([]string{c.scenario, "--target", srv.URL, "--rate", "3/s", "--duration", "2s", "--vus", "8"}, c.extra...)
			r := bench(t, args...)
			checkReport(t, r, true)
			if r.Iterations.Total != 6 || r.Iterations.Dropped != 0 {
				t.Errorf("%d iterations, %d dropped; want the 6 arrivals of 3/s for 2s, none dropped", r.Iterations.Total, r.Iterations.Dropped)
			}
			p := r.Plan
			if got, want := r.Setup.Bytes, p.SetupBytes; got != want {
				t.Errorf("the setup uploaded %d bytes, announced %d", got, want)
			}
			if got, want := r.Data.UploadedBytes, p.LoadBytes; got != want {
				t.Errorf("the load uploaded %d bytes, announced %d", got, want)
			}
			if got, want := r.Data.UploadedBytes, p.PerIteration*r.Iterations.Total; got != want {
				t.Errorf("the load uploaded %d bytes in %d iterations, announced %d per iteration", got, r.Iterations.Total, p.PerIteration)
			}
		})
	}
}
