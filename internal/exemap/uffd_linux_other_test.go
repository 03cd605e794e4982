//go:build linux && !(amd64 || arm64)

package exemap

func userfaultfdAllowed() bool { return false }
