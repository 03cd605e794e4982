#!/usr/bin/env bash
# Continuous replication's cost and lag (docs/PERFORMANCE.md, "Issue 24:
# continuous replication"): two servers on loopback, A without and B with
# --replicate-to (a folder), S3 PUT load in alternating rounds (A, B, A, B,
# ...) so both see the same machine load; each round records throughput,
# p50/p99 and the server's CPU seconds (utime+stime from /proc) per upload,
# with the load average. Then B under a steady arrival rate with its
# coffer_replication_lag_seconds sampled every 0.5 s.
#
#   scripts/bench-replicate.sh [ROUNDS] [SECONDS] [SIZE] [VUS] [RATE]
#   defaults: 3 rounds of 15 s, 256KiB, 4 VUs; steady 40/s for 30 s
#   REPLICA=DIR puts B's replica there (default: beside the data folders,
#   on the same disk; e.g. a folder in /dev/shm to leave the disk out; a
#   given REPLICA is left in place)
set -euo pipefail
ROUNDS=${1:-3} SECS=${2:-15} SIZE=${3:-256KiB} VUS=${4:-4} RATE=${5:-40/s}
cd "$(dirname "$0")/.."
W=$(mktemp -d /tmp/coffer-bench-replicate.XXXXXX)
BIN=$W/coffer
go build -o "$BIN" ./cmd/coffer
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$W"; }
trap cleanup EXIT
start() { # NAME PORT S3PORT [flags]
  local name=$1 port=$2 s3=$3; shift 3
  "$BIN" serve --data "$W/$name" --listen 127.0.0.1:"$port" --s3-listen 127.0.0.1:"$s3" \
    --admission fixed --signup-rate 0 --log-level warn "$@" >"$W/$name.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/healthz" >/dev/null && return; sleep 0.1; done
  echo "server $name did not start"; cat "$W/$name.log"; exit 1
}
start a 18281 19281
PA=${pids[0]}
REPLICA=${REPLICA:-$W/replica}
start b 18282 19282 --replicate-to "$REPLICA" --replicate-window 10s
PB=${pids[1]}
cpu() { awk '{print $14+$15}' "/proc/$1/stat"; }
tck=$(getconf CLK_TCK)
round() { # NAME PORT S3PORT PID
  local c0 c1 la
  la=$(cut -d' ' -f1-3 /proc/loadavg)
  c0=$(cpu "$4")
  "$BIN" bench s3-put --target "http://127.0.0.1:$2" --s3-target "http://127.0.0.1:$3" --vus "$VUS" \
    --duration "${SECS}s" --size "$SIZE" --json "$W/r.json" --metrics-url off >/dev/null 2>&1
  c1=$(cpu "$4")
  python3 - "$W/r.json" "$1" "$c0" "$c1" "$tck" "$la" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); name = sys.argv[2]
c = (float(sys.argv[4]) - float(sys.argv[3])) / float(sys.argv[5])
n = d["requests"]["total"]; l = d["latency_ms"]
mib = d["data"]["uploaded_bytes"] / 2**20 / d["duration_s"] if "uploaded_bytes" in d["data"] else float("nan")
print(f"| {name} | {n} | {d['requests']['rps']:.1f} | {mib:.1f} | {l['p50']:.1f} | {l['p99']:.1f} | {c:.2f} | {1000*c/max(n,1):.2f} | {sys.argv[6]} |")
PY
}
echo "| server | uploads | uploads/s | MiB/s | p50 ms | p99 ms | server CPU s | CPU ms/upload | load avg |"
echo "|---|---|---|---|---|---|---|---|---|"
for _ in $(seq "$ROUNDS"); do
  round "A (off)" 18281 19281 "$PA"
  round "B (--replicate-to)" 18282 19282 "$PB"
done
echo
echo "steady load on B: $RATE of $SIZE for 30 s, coffer_replication_lag_seconds every 0.5 s (load $(cut -d' ' -f1-3 /proc/loadavg))"
"$BIN" bench s3-put --target http://127.0.0.1:18282 --s3-target http://127.0.0.1:19282 --rate "$RATE" \
  --duration 30s --size "$SIZE" --json "$W/s.json" --metrics-url off >/dev/null 2>&1 &
bp=$!
: >"$W/lag.txt"
while kill -0 "$bp" 2>/dev/null; do
  curl -fs http://127.0.0.1:18282/metrics | awk '/^coffer_replication_lag_seconds /{print $2}' >>"$W/lag.txt" || true
  sleep 0.5
done
wait "$bp" || true
python3 - "$W/lag.txt" "$W/s.json" <<'PY'
import json, sys
v = sorted(float(x) for x in open(sys.argv[1]) if x.strip())
d = json.load(open(sys.argv[2]))
q = lambda p: v[min(len(v) - 1, int(p * len(v)))]
print(f"uploads {d['requests']['total']} at {d['requests']['rps']:.1f}/s; lag samples {len(v)}: p50 {q(.5):.2f}s p90 {q(.9):.2f}s p99 {q(.99):.2f}s max {v[-1]:.2f}s")
PY
echo "replication errors on B: $(curl -fs http://127.0.0.1:18282/metrics | awk '/^coffer_replication_errors_total /{print $2}')"
echo "load after: $(cat /proc/loadavg)"
