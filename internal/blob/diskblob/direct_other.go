//go:build !linux

package diskblob

import (
	"errors"
	"os"
)

// setDirect: direct I/O is used on Linux only; elsewhere write stays
// buffered.
func setDirect(f *os.File, on bool) error {
	if !on {
		return nil
	}
	return errors.ErrUnsupported
}
