#!/usr/bin/env bash
# The soak of docs/PERFORMANCE.md ("Issue 23: listing and soak"): one fresh
# coffer node on SQLite, `coffer bench soak` (30% ping, 25% list, 25%
# download, 20% upload + delete of the VU's oldest beyond 8) at VUS VUs for
# DURATION, the server's RSS and goroutines sampled by the bench (/metrics)
# and its /proc/PID/status (RssAnon, RssFile) and the load average sampled
# here every minute; then the server idles IDLE and is read again. Both
# processes run under nice (the machine is shared). Loopback only.
#   scripts/bench-soak.sh [duration] [vus] [size] [idle]
#   OUT=/work/tmp/soak scripts/bench-soak.sh 1h 50 256KiB 60s
set -euo pipefail
export COFFER_SIGNUP_RATE=0
cd "$(dirname "$0")/.."
ROOT=$(pwd)
DUR=${1:-1h}
VUS=${2:-50}
SIZE=${3:-256KiB}
IDLE=${4:-60s}
OUT=${OUT:-$ROOT/.tools/soak-$(date -u +%Y%m%dT%H%M%S)}
mkdir -p "$OUT"
. scripts/lib/backends.sh
bench_setup coffer-soak
PORT=18480
nice -n 10 "$COFFER" serve --data "$WORK/node" --listen 127.0.0.1:$PORT --s3-listen 127.0.0.1:$((PORT + 1)) \
  --log-level warn --max-in-flight-per-client 0 >"$OUT/node.log" 2>&1 &
node=$!
PIDS+=("$node")
for _ in $(seq 100); do curl -sf http://127.0.0.1:$PORT/readyz >/dev/null && break; sleep 0.1; done
status() { # label: one line of the server's memory and the load average
  echo "$(date -u +%H:%M:%S) $1 $(grep -E '^(VmRSS|RssAnon|RssFile|Threads)' /proc/$node/status | tr -s ' \t' ' ' | tr '\n' ' ')load $(cut -d' ' -f1-3 /proc/loadavg)"
}
sleep 5
status "start" | tee "$OUT/status.txt"
( while sleep 60; do status "during"; done ) >>"$OUT/status.txt" &
sampler=$!
PIDS+=("$sampler")
nice -n 10 "$COFFER" bench soak --target http://127.0.0.1:$PORT --vus "$VUS" --duration "$DUR" --size "$SIZE" \
  --sample-interval 10s --json "$OUT/soak.json" --html "$OUT/soak.html" >"$OUT/soak.txt" 2>&1 || echo "bench soak failed (see $OUT/soak.txt)"
kill "$sampler" 2>/dev/null || true
status "after the soak" | tee -a "$OUT/status.txt"
sleep "${IDLE%s}"
status "idle $IDLE after" | tee -a "$OUT/status.txt"
grep -E 'requests|failed|server_|after_warmup|iterations|audit|cleanup' "$OUT/soak.txt" || tail -20 "$OUT/soak.txt"
echo "results in $OUT"
