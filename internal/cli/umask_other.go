//go:build !unix

package cli

// restrictUmask does nothing where there is no umask.
func restrictUmask() {}
