//go:build !unix

package ratelimit

// cpuMeter cannot measure the process's CPU here: it reports the process
// as busy, so a high scheduling delay alone decides.
type cpuMeter struct{}

func newCPUMeter() *cpuMeter { return &cpuMeter{} }

func (*cpuMeter) share() float64 { return 1 }
