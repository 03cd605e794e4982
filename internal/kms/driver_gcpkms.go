//go:build !coffer_no_cloudkms && !coffer_no_gcpkms

package kms

import (
	"gocloud.dev/secrets"
	"gocloud.dev/secrets/gcpkms"
)

func init() { cloudOpeners[gcpkms.Scheme] = secrets.DefaultURLMux().OpenKeeperURL }
