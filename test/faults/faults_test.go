// Package faults is a Jepsen-style fault harness for the scale-out shape:
// three coffer nodes on one PostgreSQL and one MinIO, clients on every
// node doing S3 operations on a few keys, a nemesis injecting faults on a
// seeded schedule, and a linearizability check of the whole history with
// porcupine. See docs/operations.md, "Fault testing".
package faults
