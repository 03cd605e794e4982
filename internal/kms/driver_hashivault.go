//go:build !coffer_no_cloudkms && !coffer_no_hashivault

package kms

import (
	"errors"

	vault "github.com/hashicorp/vault/api"
	"gocloud.dev/secrets"
	"gocloud.dev/secrets/hashivault"
)

func init() {
	cloudOpeners[hashivault.Scheme] = secrets.DefaultURLMux().OpenKeeperURL
	vaultStatus = func(err error) int {
		var ve *vault.ResponseError
		if errors.As(err, &ve) {
			return ve.StatusCode
		}
		return 0
	}
}
