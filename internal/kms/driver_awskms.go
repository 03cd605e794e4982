//go:build !coffer_no_cloudkms && !coffer_no_awskms

package kms

import (
	"context"
	"net/url"

	"gocloud.dev/secrets"
	"gocloud.dev/secrets/awskms"
)

// The AWS opener is built here (its URL parameters, including endpoint=,
// come from gocloud.dev/aws).
func init() {
	cloudOpeners[awskms.Scheme] = func(ctx context.Context, u *url.URL) (*secrets.Keeper, error) {
		return (&awskms.URLOpener{}).OpenKeeperURL(ctx, u)
	}
}
