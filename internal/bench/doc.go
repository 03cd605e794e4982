// Package bench is `coffer bench`: a load generator for Coffer's file API
// and for any S3 endpoint, with k6-style load models, a report (terminal,
// JSON, self-contained HTML) and an integrity audit of every upload the
// server acknowledged.
//
// It talks to the server only over the wire, so it measures any Coffer
// (or, for the s3-* scenarios, any S3 service such as MinIO) exactly as a
// client sees it.
//
// # Load model
//
// A run is VUs (virtual users) repeating a scenario's iteration: a fixed
// number for a duration (--vus, --duration); k6 ramping stages
// (--stages 1m:250,1m:500,1m:0, each linear from the previous target);
// or a constant arrival rate (--rate 200/s) served by a pool of VUs,
// where arrivals that find no free VU are dropped and counted. Each
// request has a timeout (body included); the run ends at the end of the
// model plus a grace period for iterations in flight. Ctrl-C (Run's load
// context) ends the load early; the audit and the cleanup still run and
// the report covers what was measured. A second Ctrl-C (Run's finish
// context) cuts the audit and the cleanup short. Before the setup the run
// says how much it will write (an estimate with --rate; the bytes per
// iteration and, once the load runs, a projection otherwise).
//
// # Setup
//
// File API scenarios first create --users accounts and log every VU in
// with its own session (a refresh token can be used once, so sessions are
// never shared), then prepare the data their reads need. The setup is
// not measured; it retries requests the server sheds (429/503 with
// Retry-After) with bounded parallelism, because password hashing is
// deliberately slow and bounded.
//
// # Measurements
//
// Latency is measured from sending a request to reading the last byte of
// its answer, into log-bucketed histograms (package stats) per request
// name. Failures are classified (each HTTP status, timeout, connection
// refused, reset, closed, bad response); 429, and 503 with Retry-After,
// are deliberate load shedding and counted apart. Every response is
// checked (status, and content where the scenario knows what to expect),
// and checks are reported k6-style.
//
// # Audit
//
// Every upload acknowledged with a 2xx is recorded with its size and
// SHA-256; after the run each is read back and compared, reporting
// acknowledged, verified, missing and corrupt objects. A run whose audit
// finds a missing or corrupt object fails: a server that acknowledges an
// upload must be able to return it.
//
// # Cleanup
//
// Everything a run creates is named after its run id: objects under
// bench-<run id>/, accounts bench-<run id>-N@example.com, the S3 bucket
// coffer-bench-<run id>. Unless Options.Keep, the run deletes it after
// the audit: the objects under its prefix (listed, so also uploads whose
// acknowledgement was lost), the bucket it created (never a --bucket),
// unfinished direct uploads, the S3 keys it created, then its accounts
// (DELETE /api/v1/me with purge). What cannot be deleted is a warning in
// the report, never a failure of the run.
//
// # Considerations
//
// The load generator shares the machine with the server when both run
// locally: compare results only side by side, measured by the same
// client. Payloads are generated without per-request allocation or
// hashing (a shared random prefix plus a unique 16-byte suffix whose
// digests are finished from a saved hash state), so the client spends
// its CPU on the wire, not on making data.
package bench
