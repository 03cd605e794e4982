//go:build unix

package ratelimit

import (
	"runtime"
	"syscall"
	"time"
)

// cpuMeter measures the share of GOMAXPROCS the process used between
// calls (user + system time, getrusage).
type cpuMeter struct {
	last    time.Time
	lastCPU time.Duration
}

func newCPUMeter() *cpuMeter {
	m := &cpuMeter{}
	m.last, m.lastCPU = time.Now(), processCPU()
	return m
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// share returns the CPU used since the last call over the CPU available
// to the process in that time (wall time × GOMAXPROCS).
func (m *cpuMeter) share() float64 {
	now, cpu := time.Now(), processCPU()
	wall := now.Sub(m.last)
	used := cpu - m.lastCPU
	m.last, m.lastCPU = now, cpu
	if wall <= 0 {
		return 0
	}
	return float64(used) / (float64(wall) * float64(runtime.GOMAXPROCS(0)))
}
