//go:build !unix

package diskblob

import (
	"errors"
	"os"
)

// lockFile is not implemented off Unix: Open fails rather than run without
// the guarantee that one process owns the directory.
func lockFile(*os.File) error {
	return errors.ErrUnsupported
}
