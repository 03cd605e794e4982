//go:build unix

package cli

import "syscall"

// restrictUmask sets the process's umask to 077, so that no file or folder
// the process creates is accessible to its group or others, even one whose
// creator asked for a wider mode. Every file Coffer creates in the data
// folder already asks for 0600 (folders 0700): this is defence in depth.
func restrictUmask() { syscall.Umask(0o077) }
