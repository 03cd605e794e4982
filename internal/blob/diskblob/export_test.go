package diskblob

import "os"

// NoDirect makes s write every blob through the page cache, as before
// direct writes (BenchmarkPutFromSocket compares both).
func NoDirect(s *Store) { s.noDirect = true }

// NoUnits makes s fill a blob.UnitReader's body as any other, as before
// whole-unit fills (BenchmarkPutUnits compares both).
func NoUnits(s *Store) { s.noUnits = true }

// SetWriteBack makes Put call f, then the real write-back, for every
// range whose write-back it starts; the returned func undoes it.
func SetWriteBack(f func(file *os.File, off, n int64)) (restore func()) {
	orig := writeBack
	writeBack = func(file *os.File, off, n int64) {
		f(file, off, n)
		orig(file, off, n)
	}
	return func() { writeBack = orig }
}
