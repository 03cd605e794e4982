//go:build race

package crypt

// raceEnabled: the race detector is on (sync.Pool drops what is put back
// at random, so pooled allocation counts are not deterministic).
const raceEnabled = true
