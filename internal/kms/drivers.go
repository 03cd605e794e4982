package kms

// The key-service URL schemes (gocloud.dev/secrets' driver schemes).
//
// Each driver is in the default build, in its own file driver_SCHEME.go.
// A build tag leaves drivers out: coffer_no_SCHEME one of them,
// coffer_no_cloudkms all four and gocloud.dev/secrets itself (cloud.go);
// a URL of a scheme left out is refused when the server starts. They are
// the largest part of the executable that a server with the local
// keyring never runs, and Go runs the init functions of every package a
// binary links (gRPC and protobuf registries, OpenTelemetry, the Azure,
// Google and AWS SDKs' tables), configured or not: what those touch stays
// resident in every coffer process (docs/PERFORMANCE.md, "Issue 23, second
// pass: idle RSS").
const (
	schemeAWS   = "awskms"
	schemeGCP   = "gcpkms"
	schemeAzure = "azurekeyvault"
	schemeVault = "hashivault"
)
