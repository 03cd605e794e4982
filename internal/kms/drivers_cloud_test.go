//go:build !coffer_no_cloudkms

package kms

// dropDriver removes scheme's driver from this build's table until the
// returned function puts it back.
func dropDriver(scheme string) (restore func()) {
	open, ok := cloudOpeners[scheme]
	delete(cloudOpeners, scheme)
	return func() {
		if ok {
			cloudOpeners[scheme] = open
		}
	}
}
