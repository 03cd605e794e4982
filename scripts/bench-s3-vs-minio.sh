#!/usr/bin/env bash
# Runs the S3 comparison of docs/PERFORMANCE.md: Coffer and MinIO (single
# drive) side by side on this machine, same client (coffer bench --compare,
# alternating rounds), loopback only. Usage:
#   scripts/bench-s3-vs-minio.sh [duration-per-round] [sizes] [concurrencies] [scenarios]
#   scripts/bench-s3-vs-minio.sh 10s "4KiB 1MiB" "16 64" "s3-put s3-get"
# Installs MinIO into ./.tools/bin (go install, ~3 min) if it is missing.
set -euo pipefail
# The bench signs up its users from 127.0.0.1, past the default --signup-rate
# (an environment variable, so that older binaries started here ignore it).
export COFFER_SIGNUP_RATE=0
cd "$(dirname "$0")/.."
ROOT=$(pwd)
DUR=${1:-10s}
SIZES=${2:-"4KiB 1MiB"}
CONCS=${3:-"16 64"}
SCENARIOS=${4:-"s3-put s3-get"}
TOOLS="$ROOT/.tools/bin"
mkdir -p "$TOOLS"
MINIO=$(command -v minio || true)
[ -z "$MINIO" ] && [ -x "$TOOLS/minio" ] && MINIO="$TOOLS/minio"
if [ -z "$MINIO" ]; then
  GOBIN="$TOOLS" GOFLAGS=-buildvcs=false go install github.com/minio/minio@latest
  MINIO="$TOOLS/minio"
fi
go build -o "$ROOT/.tools/coffer" ./cmd/coffer
COFFER="$ROOT/.tools/coffer"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/coffer-vs-minio.XXXXXX")
cleanup() { kill "$MPID" "$CPID" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

MINIO_ROOT_USER=benchadmin MINIO_ROOT_PASSWORD=benchadmin-secret \
  "$MINIO" server "$WORK/minio" --address 127.0.0.1:19900 --console-address 127.0.0.1:19901 >"$WORK/minio.log" 2>&1 &
MPID=$!
"$COFFER" serve --data "$WORK/coffer" --listen 127.0.0.1:18080 --s3-listen 127.0.0.1:19000 --log-level warn >"$WORK/coffer.log" 2>&1 &
CPID=$!
for _ in $(seq 100); do
  curl -sf http://127.0.0.1:19900/minio/health/live >/dev/null && curl -sf http://127.0.0.1:18080/readyz >/dev/null && break
  sleep 0.2
done
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo); $("$COFFER" version); $("$MINIO" --version | head -1)"
for sc in $SCENARIOS; do
  for size in $SIZES; do
    for c in $CONCS; do
      echo
      echo "### $sc size=$size concurrency=$c"
      "$COFFER" bench "$sc" --target http://127.0.0.1:18080 --s3-target http://127.0.0.1:19000 \
        --compare http://127.0.0.1:19900 --compare-access-key benchadmin --compare-secret-key benchadmin-secret \
        --vus "$c" --duration "$DUR" --size "$size" --rounds 2 --objects 200 --audit=false --metrics-url off 2>&1 |
        sed -n '/alternating rounds/,$p' || true # a failing endpoint is reported, not fatal
    done
  done
done
