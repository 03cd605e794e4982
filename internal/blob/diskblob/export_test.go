package diskblob

import "os"

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
