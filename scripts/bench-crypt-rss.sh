#!/usr/bin/env bash
# Issue 23 (crypt): RSS per in-flight GET, encrypted and plain
# (docs/PERFORMANCE.md "Issue 23, third pass: encrypted objects"). One
# server at a time on loopback; the server's peak RSS (VmRSS sampled every
# 0.2 s over the last DUR seconds of the run: the GETs, not the setup's
# uploads) at 1 VU and at VUS VUs; (peak at VUS - peak at 1) / (VUS - 1) is
# the memory each further request in flight holds (its buffers and the
# heap's room for them). Bounded: about 4 × (DUR + setup).
#   scripts/bench-crypt-rss.sh [BINARY] [size] [vus] [duration]
set -euo pipefail
export COFFER_SIGNUP_RATE=0
cd "$(dirname "$0")/.."
BIN=${1:-}
SIZE=${2:-10MiB}
VUS=${3:-32}
DUR=${4:-10s}
PORT=${PORT:-18080} S3_PORT=${S3_PORT:-19000}
if [ -z "$BIN" ]; then go build -o .tools/coffer ./cmd/coffer; BIN=$PWD/.tools/coffer; fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/coffer-crypt-rss.XXXXXX")
PID=
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
source scripts/lib/s3key.sh
secs=${DUR%s}
# sample PID: VmRSS (KiB) every 0.2 s with a timestamp, until PID is gone.
sample() { while rss=$(awk '/^VmRSS/{print $2}' "/proc/$1/status" 2>/dev/null); do echo "$(date +%s.%N) $rss"; sleep 0.2; done; }
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
for mode in enc plain; do
  flags=""; [ "$mode" = enc ] && flags="--encryption on"
  for vus in 1 "$VUS"; do
    rm -rf "$WORK/data"
    "$BIN" serve --data "$WORK/data" --listen 127.0.0.1:$PORT --s3-listen 127.0.0.1:$S3_PORT --log-level warn $flags >"$WORK/log" 2>&1 &
    PID=$!
    wait_ready http://127.0.0.1:$PORT
    sample "$PID" >"$WORK/rss" &
    SPID=$!
    "$BIN" bench s3-get --target http://127.0.0.1:$PORT --s3-target http://127.0.0.1:$S3_PORT \
      --vus "$vus" --duration "$DUR" --size "$SIZE" --objects 16 --audit=false --metrics-url off >"$WORK/bench" 2>&1
    end=$(date +%s.%N)
    kill "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null || true
    peak=$(awk -v from="$(echo "$end - $secs - 1" | bc)" '$1 >= from && $2 > m {m = $2} END {print m + 0}' "$WORK/rss")
    printf '%-5s %s GET c%-3s peak RSS %6d KiB over the GETs  (%s)\n' "$mode" "$SIZE" "$vus" "$peak" \
      "$(grep -m1 -E '^ *get ' "$WORK/bench" | awk '{print $2, "requests,", $3, "req/s"}')"
    kill "$PID"; wait "$PID" 2>/dev/null || true; PID=
  done
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
