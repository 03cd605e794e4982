#!/usr/bin/env bash
# Issue 23, second pass: tus vs plain PUT of the same file for two
# binaries, rounds alternating A, B, A, B (test/measure tus: one `coffer
# serve` per binary and round, PUT then tus on it; 127.0.0.1 only, bounded
# by timeouts). Ratios and server CPU per MiB survive a loaded machine;
# absolute throughput does not.
#   scripts/bench-uploads-ab.sh OLD NEW [ROUNDS] [CHUNK] [CHECKSUM]
#   (defaults: 2 rounds, 8 MiB PATCHes, no Upload-Checksum; BIG=bytes,
#   default 1 GiB; S3_PORT, default 29100, for the servers' S3 listener)
set -euo pipefail
cd "$(dirname "$0")/.."
A=$1 B=$2 ROUNDS=${3:-2} CHUNK=${4:-$((8 << 20))} SUM=${5:-}
BIG=${BIG:-$((1 << 30))}
D=$(mktemp -d "${TMPDIR:-/tmp}/coffer-uploads-ab.XXXXXX")
trap 'rm -rf "$D"' EXIT
go build -o "$D/measure" ./test/measure
for r in $(seq "$ROUNDS"); do
	for bin in "$A" "$B"; do
		echo "== $bin, round $r, load average $(cut -d' ' -f1-3 /proc/loadavg)"
		timeout 900 "$D/measure" -bin "$bin" -data "$D/m" -big "$BIG" -rounds 1 -tus-chunk "$CHUNK" \
			-tus-checksum "$SUM" -server-flags "--s3-listen 127.0.0.1:${S3_PORT:-29100}" tus | grep -E '^  (put|tus)|^round'
		rm -rf "$D/m"
	done
done
