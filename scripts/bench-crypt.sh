#!/usr/bin/env bash
# Issue 23 (crypt): encryption at rest and verified reads, side by side in
# one run on loopback (docs/PERFORMANCE.md "Issue 23: encryption and
# verified reads"). Bounded: about 6 minutes.
#   scripts/bench-crypt.sh [OLD_BINARY] [duration-per-round] [rounds]
# 1. AES-256-GCM per core: openssl speed and Go (BenchmarkAESGCMLineRate).
# 2. encrypted (A) vs plain (B), the same binary: S3 GET and PUT of 1 MiB
#    and 10 MiB at c16 (server CPU per request from /proc).
# 3. --verify-reads on (A) vs off (B): S3 GET of 1 MiB and 16 MiB at c16.
# 4. with OLD_BINARY (a build before the change): plain GET, this
#    checkout (CRC-32C verified reads) vs the old one (SHA-256).
# The load average is printed before each part: compare ratios and CPU
# per request, not absolute rates, on a shared machine.
set -euo pipefail
cd "$(dirname "$0")/.."
OLD=${1:-}
DUR=${2:-4s}
ROUNDS=${3:-3}
go build -o .tools/coffer ./cmd/coffer
BIN=$PWD/.tools/coffer
echo "== AES-256-GCM per core ($(uptime))"
openssl speed -evp aes-256-gcm -seconds 2 2>/dev/null | tail -2
go test -run X -bench 'AESGCMLineRate|Decrypt/1MiB/WriteTo' -benchmem ./internal/crypt | grep Benchmark
echo
echo "== encrypted (A) vs plain (B) ($(uptime))"
NEW_FLAGS="--encryption on" timeout 600 scripts/bench-s3-before-after.sh "$BIN" "$DUR" "1MiB 10MiB" 16 "s3-get s3-put" "$ROUNDS"
echo
echo "== --verify-reads on (A) vs off (B) ($(uptime))"
OLD_FLAGS="--verify-reads=false" timeout 600 scripts/bench-s3-before-after.sh "$BIN" "$DUR" "1MiB 16MiB" 16 s3-get "$ROUNDS"
if [ -n "$OLD" ]; then
  echo
  echo "== plain GET, this checkout (A) vs $OLD (B) ($(uptime))"
  timeout 600 scripts/bench-s3-before-after.sh "$OLD" "$DUR" "1MiB 16MiB" 16 s3-get "$ROUNDS"
fi
echo "done ($(uptime))"
