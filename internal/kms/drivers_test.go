package kms

import (
	"context"
	"os/exec"
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

// TestNoCloudKMSBuildLinksNoSDK: the build tag coffer_no_cloudkms really
// leaves the key-service SDKs out of the coffer executable (what a default
// build links and this one does not is what docs/PERFORMANCE.md measures),
// and the default build still has every driver.
func TestNoCloudKMSBuildLinksNoSDK(t *testing.T) {
	gotool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool:", err)
	}
	deps := func(tags string) string {
		out, err := exec.Command(gotool, "list", "-deps", "-tags="+tags, "github.com/coffer-storage/coffer/cmd/coffer").Output()
		if err != nil {
			t.Fatalf("go list -tags=%q: %v", tags, err)
		}
		return "\n" + string(out)
	}
	// OpenTelemetry and gRPC are not among them since issue 24: tracing
	// (internal/tracing) links the OTel SDK and its OTLP exporter, whose
	// generated collector service imports gRPC, in every build.
	sdks := []string{"gocloud.dev/", "cloud.google.com/", "google.golang.org/api/", "github.com/Azure/", "github.com/AzureAD/",
		"github.com/hashicorp/vault/", "github.com/aws/aws-sdk-go-v2/service/kms"}
	without := deps("coffer_no_cloudkms")
	for _, p := range sdks {
		if strings.Contains(without, "\n"+p) {
			t.Errorf("built with coffer_no_cloudkms, coffer still links %s*", p)
		}
	}
	with := deps("")
	for _, p := range []string{"gocloud.dev/secrets/awskms", "gocloud.dev/secrets/gcpkms", "gocloud.dev/secrets/azurekeyvault", "gocloud.dev/secrets/hashivault"} {
		if !strings.Contains(with, "\n"+p+"\n") {
			t.Errorf("the default build does not link %s", p)
		}
	}
}
