package kms

import (
	"context"
	"strings"
	"testing"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/testbackend"
)

func TestMain(m *testing.M) { testbackend.Main(m) }

// TestSchemeWithoutDriverRefused: a build that leaves a key-service driver
// out (build tag coffer_no_SCHEME or coffer_no_cloudkms) refuses that
// scheme's URLs at start with InvalidArgument naming the tag, rather than
// starting without the key service or with another one.
func TestSchemeWithoutDriverRefused(t *testing.T) {
	for _, scheme := range []string{schemeAWS, schemeGCP, schemeAzure, schemeVault} {
		url := scheme + "://some-key"
		if scheme == schemeGCP {
			url = "gcpkms://projects/p/locations/l/keyRings/r/cryptoKeys/k"
		}
		restore := dropDriver(scheme)
		_, err := OpenProvider(context.Background(), url, Options{})
		restore()
		if !errcode.Is(err, errcode.InvalidArgument) || !strings.Contains(err.Error(), "built without") {
			t.Errorf("%s without its driver: %v, want InvalidArgument naming the build", scheme, err)
		}
	}
}
