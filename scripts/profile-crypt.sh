#!/usr/bin/env bash
# Issue 23 (crypt): CPU profiles of one S3 cell, encrypted and plain, one
# server at a time on loopback (docs/PERFORMANCE.md "Issue 23, third pass:
# encrypted objects"). Bounded: about 2 × (DUR + 30 s) per cell.
#   scripts/profile-crypt.sh [BINARY] [scenario] [size] [vus] [seconds] [outdir]
#   scripts/profile-crypt.sh .tools/coffer s3-get 10MiB 16 15 /tmp/prof
# Writes OUTDIR/{enc,plain}-SCENARIO-SIZE.pprof and prints the top of each
# and the server CPU per request (user+system from /proc over the profiled
# window). PERF=1 adds perf record -g of the server (kernel symbols).
set -euo pipefail
export COFFER_SIGNUP_RATE=0
cd "$(dirname "$0")/.."
BIN=${1:-}
SC=${2:-s3-get}
SIZE=${3:-10MiB}
VUS=${4:-16}
SECS=${5:-15}
OUT=${6:-/tmp/profile-crypt}
PORT=${PORT:-18080} S3_PORT=${S3_PORT:-19000} DEBUG_PORT=${DEBUG_PORT:-18081}
if [ -z "$BIN" ]; then go build -o .tools/coffer ./cmd/coffer; BIN=$PWD/.tools/coffer; fi
mkdir -p "$OUT"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/coffer-profile.XXXXXX")
PID=
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
source scripts/lib/s3key.sh
for mode in enc plain; do
  flags=""; [ "$mode" = enc ] && flags="--encryption on"
  rm -rf "$WORK/data"
  "$BIN" serve --data "$WORK/data" --listen 127.0.0.1:$PORT --s3-listen 127.0.0.1:$S3_PORT \
    --debug-listen 127.0.0.1:$DEBUG_PORT --log-level warn $flags >"$WORK/$mode.log" 2>&1 &
  PID=$!
  wait_ready http://127.0.0.1:$PORT
  # The load runs SECS + 10 s after its setup; the profile covers SECS of it.
  "$BIN" bench "$SC" --target http://127.0.0.1:$PORT --s3-target http://127.0.0.1:$S3_PORT \
    --vus "$VUS" --duration "$((SECS + 10))s" --size "$SIZE" --objects 64 --audit=false --metrics-url off \
    >"$WORK/$mode.bench" 2>&1 &
  BPID=$!
  sleep 10 # the setup (s3-get uploads its objects first) and a warm-up
  c0=$(awk '{print $14 + $15}' /proc/$PID/stat)
  if [ -n "${PERF:-}" ]; then # the kernel's share too: perf record of the server's threads
    perf record -q -g -o "$OUT/$mode-$SC-$SIZE.perf" -p "$PID" -- sleep "$SECS" 2>/dev/null &
    PERFPID=$!
  fi
  curl -s -o "$OUT/$mode-$SC-$SIZE.pprof" "http://127.0.0.1:$DEBUG_PORT/debug/pprof/profile?seconds=$SECS"
  [ -n "${PERFPID:-}" ] && { wait "$PERFPID" || true; }
  c1=$(awk '{print $14 + $15}' /proc/$PID/stat)
  wait "$BPID" || true
  echo "== $mode $SC $SIZE c$VUS ($(uptime))"
  grep -E "^ *(get|put) " "$WORK/$mode.bench" | head -2
  echo "server CPU over the profile: $(( (c1 - c0) * 1000 / $(getconf CLK_TCK) )) ms in ${SECS}s"
  go tool pprof -top -nodecount=25 "$OUT/$mode-$SC-$SIZE.pprof" 2>/dev/null | sed -n '1,32p'
  if [ -n "${PERF:-}" ]; then
    # (|| true: head ends the pipe early, which pipefail would take for a failure)
    perf report -q --no-children -g none -i "$OUT/$mode-$SC-$SIZE.perf" --sort sym 2>/dev/null | grep -v "^$\|^#" | head -30 || true
  fi
  kill "$PID"; wait "$PID" 2>/dev/null || true; PID=
done
