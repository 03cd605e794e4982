//go:build coffer_no_cloudkms

package kms

import (
	"context"
	"net/url"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// openCloud refuses: this build has no key-service drivers (drivers.go).
func openCloud(_ context.Context, u *url.URL, _ Options) (Provider, error) {
	return nil, errcode.New(errcode.InvalidArgument,
		"KMS URL %q: this coffer was built without the cloud key services (build tag coffer_no_cloudkms)", redact(u.String()))
}
