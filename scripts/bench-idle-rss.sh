#!/usr/bin/env bash
# Idle RSS of a fresh `coffer serve` (docs/PERFORMANCE.md, "Issue 23:
# listing and soak"): /proc/PID/status (VmRSS = RssAnon + RssFile) 5 s
# after start, right after a 20-s soak burst (20 VUs: sign-ups, logins,
# uploads, lists, downloads), and 30 s and 60 s idle after it; then the
# Go heap's figures and a heap profile (--debug-listen). Loopback only.
#   scripts/bench-idle-rss.sh BINARY     (PORT=18311: PORT, PORT+1, PORT+2)
set -euo pipefail
BIN=$1; D=$(mktemp -d "${TMPDIR:-/tmp}/idle-rss.XXXXXX"); PORT=${PORT:-18311}
export COFFER_SIGNUP_RATE=0
$BIN serve --data $D --listen 127.0.0.1:$PORT --s3-listen 127.0.0.1:$((PORT+1)) --debug-listen 127.0.0.1:$((PORT+2)) --log-level warn --max-in-flight-per-client 0 >$D/log 2>&1 &
P=$!
for _ in $(seq 100); do curl -sf http://127.0.0.1:$PORT/readyz >/dev/null && break; sleep 0.1; done
st(){ echo "$1: $(grep -E 'VmRSS|RssAnon|RssFile' /proc/$P/status | tr -s ' \t' ' ' | tr '\n' ' ')"; }
sleep 5; st "after start 5s"
$BIN bench soak --target http://127.0.0.1:$PORT --vus 20 --duration 20s --size 256KiB --json $D/burst.json >$D/burst.txt 2>&1 || tail -5 $D/burst.txt
st "right after burst"
sleep 30; st "idle 30s after burst"
sleep 30; st "idle 60s after burst"
curl -s http://127.0.0.1:$((PORT+2))/debug/pprof/heap > $D/heap.pb.gz
curl -s "http://127.0.0.1:$((PORT+2))/debug/pprof/heap?debug=1" | grep -E '^# (Sys|HeapSys|HeapAlloc|HeapIdle|HeapReleased|HeapInuse|StackSys|MSpanSys|GCSys|OtherSys|NextGC)' 
echo HEAP=$D/heap.pb.gz
kill $P; wait $P 2>/dev/null || true
