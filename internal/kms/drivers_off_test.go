//go:build coffer_no_cloudkms

package kms

// dropDriver: a build without the cloud key services has no driver to drop.
func dropDriver(string) (restore func()) { return func() {} }
