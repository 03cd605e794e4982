//go:build !coffer_no_cloudkms && !coffer_no_azurekeyvault

package kms

import (
	"gocloud.dev/secrets"
	"gocloud.dev/secrets/azurekeyvault"
)

func init() { cloudOpeners[azurekeyvault.Scheme] = secrets.DefaultURLMux().OpenKeeperURL }
