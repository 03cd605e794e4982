#!/usr/bin/env bash
# S3 cells of this checkout's Coffer against another Coffer binary (an
# older commit), side by side: both on loopback, embedded default, driven
# by the same client in alternating rounds (coffer bench --compare). Shows
# what a change costs on the S3 hot paths.
#   scripts/bench-s3-before-after.sh OLD_BINARY [duration-per-round] [sizes] [concurrencies] [scenarios] [rounds]
#   git archive REV | tar -x -C /tmp/old && (cd /tmp/old && go build -o /tmp/coffer-old ./cmd/coffer)
#   scripts/bench-s3-before-after.sh /tmp/coffer-old 10s "4KiB 1MiB" "16 64" "s3-put s3-get" 3
# PORT and S3_PORT (18080, 19000) are the new server's loopback ports,
# OLD_PORT and OLD_S3_PORT (28080, 29000) the old one's: another run on
# the machine uses others.
# OLD_FLAGS and NEW_FLAGS add server flags to either side; the same binary
# on both sides compares configurations, e.g. encryption at rest:
#   go build -o /tmp/coffer ./cmd/coffer && NEW_FLAGS="--encryption on" scripts/bench-s3-before-after.sh /tmp/coffer 10s "4KiB 1MiB 10MiB" 16
set -euo pipefail
# The bench signs up its users from 127.0.0.1, past the default --signup-rate
# (an environment variable, so that older binaries started here ignore it).
export COFFER_SIGNUP_RATE=0
cd "$(dirname "$0")/.."
ROOT=$(pwd)
OLD=${1:?old coffer binary}
DUR=${2:-10s}
SIZES=${3:-"4KiB 1MiB"}
CONCS=${4:-"16 64"}
SCENARIOS=${5:-"s3-put s3-get"}
ROUNDS=${6:-3}
PORT=${PORT:-18080} S3_PORT=${S3_PORT:-19000} OLD_PORT=${OLD_PORT:-28080} OLD_S3_PORT=${OLD_S3_PORT:-29000}
go build -o "$ROOT/.tools/coffer" ./cmd/coffer
NEW="$ROOT/.tools/coffer"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/coffer-before-after.XXXXXX")
cleanup() { kill "$OPID" "$NPID" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

"$OLD" serve --data "$WORK/old" --listen 127.0.0.1:$OLD_PORT --s3-listen 127.0.0.1:$OLD_S3_PORT --log-level warn ${OLD_FLAGS:-} >"$WORK/old.log" 2>&1 &
OPID=$!
"$NEW" serve --data "$WORK/new" --listen 127.0.0.1:$PORT --s3-listen 127.0.0.1:$S3_PORT --log-level warn ${NEW_FLAGS:-} >"$WORK/new.log" 2>&1 &
NPID=$!
source scripts/lib/s3key.sh
wait_ready http://127.0.0.1:$OLD_PORT http://127.0.0.1:$PORT
# A user and an S3 key on the old server (the bench makes its own on the new one).
read -r KID KSECRET < <(s3_key http://127.0.0.1:$OLD_PORT)
echo "machine: $(nproc) cores; new: $("$NEW" version); old: $("$OLD" version)"
source scripts/lib/compare.sh
for sc in $SCENARIOS; do
  for size in $SIZES; do
    for c in $CONCS; do
      echo
      echo "### $sc size=$size concurrency=$c (target: this checkout; compare: $OLD)"
      compare_cell "$NPID" "$OPID" "$DUR" "$ROUNDS" "$WORK/cell.txt" -- \
        "$NEW" bench "$sc" --target http://127.0.0.1:$PORT --s3-target http://127.0.0.1:$S3_PORT \
        --compare http://127.0.0.1:$OLD_S3_PORT --compare-access-key "$KID" --compare-secret-key "$KSECRET" \
        --vus "$c" --duration "$DUR" --size "$size" --rounds "$ROUNDS" --objects 200 --audit=false --metrics-url off
    done
  done
done

