#!/usr/bin/env bash
# Idle RSS of a fresh `coffer serve` (docs/PERFORMANCE.md, "Issue 23:
# listing and soak", "Issue 23, third pass: idle RSS"): /proc/PID/status
# (VmRSS = RssAnon + RssFile) and the page faults so far 5 s after start,
# right after a 20-s soak burst (20 VUs: sign-ups, logins, uploads, lists,
# downloads), and 30 s and 60 s idle after it; then the Go heap's figures
# (--debug-listen). Loopback only.
#   scripts/bench-idle-rss.sh BINARY     (PORT=18311: PORT, PORT+1, PORT+2)
# SERVER_ENV="COFFER_EXEC_ADVICE=off" and FLAGS="--idle-trim 0" turn the
# levers off for the server; LABEL names the run in its output lines.
# IDLE15=1 adds a reading 15 s after start (after the first idle trim).
# BURST2=5s runs a second burst after the 60-s reading (what the next
# requests pay for the idle trim: page faults, CPU).
# HEAP=1 starts the server with --debug-listen and prints the Go heap's
# figures at the end (a debug listener keeps heap profiling on, which
# costs ~1.5 MiB after a burst: off by default).
set -euo pipefail
BIN=$1; D=$(mktemp -d "${TMPDIR:-/tmp}/idle-rss.XXXXXX"); PORT=${PORT:-18311}
LABEL=${LABEL:-$(basename "$BIN")}
export COFFER_SIGNUP_RATE=0
# shellcheck disable=SC2086
env ${SERVER_ENV:-} $BIN serve --data $D --listen 127.0.0.1:$PORT --s3-listen 127.0.0.1:$((PORT+1)) --log-level warn --max-in-flight-per-client 0 ${HEAP:+--debug-listen 127.0.0.1:$((PORT+2))} ${FLAGS:-} >$D/log 2>&1 &
P=$!
for _ in $(seq 200); do curl -sf http://127.0.0.1:$PORT/readyz >/dev/null && break; sleep 0.05; done
st(){
	awk -v l="$LABEL" -v w="$1" -v la="$(cut -d' ' -f1 /proc/loadavg)" '
		/^VmRSS/ {v=$2} /^RssAnon/ {a=$2} /^RssFile/ {f=$2}
		END {printf "%s | %s | VmRSS %.1f MiB | anon %.1f | file %.1f | load %s", l, w, v/1024, a/1024, f/1024, la}' /proc/$P/status
	echo " | minflt $(awk '{print $10}' /proc/$P/stat) | cpu $(awk -v hz="$(getconf CLK_TCK)" '{printf "%d ms", ($14+$15)*1000/hz}' /proc/$P/stat)"
}
sleep 5; st "5 s after start"
if [ -n "${IDLE15:-}" ]; then sleep 10; st "15 s after start"; fi
$BIN bench soak --target http://127.0.0.1:$PORT --vus 20 --duration 20s --size 256KiB --json $D/burst.json >$D/burst.txt 2>&1 || tail -5 $D/burst.txt
st "right after burst"
sleep 30; st "idle 30 s after burst"
sleep 30; st "idle 60 s after burst"
if [ -n "${BURST2:-}" ]; then
	# The same burst again, BURST2 long, on the idle (trimmed) server: its
	# page faults and CPU against the first's show what the trim costs.
	$BIN bench soak --target http://127.0.0.1:$PORT --vus 20 --duration "$BURST2" --size 256KiB >$D/burst2.txt 2>&1 || tail -5 $D/burst2.txt
	st "right after a second burst ($BURST2)"
fi
if [ -n "${HEAP:-}" ]; then
	curl -s "http://127.0.0.1:$((PORT+2))/debug/pprof/heap?debug=1" | grep -E '^# (HeapAlloc|HeapIdle|HeapReleased|HeapInuse|GCSys|BuckHashSys|NextGC|NumGC) ' | tr '\n' ' ' | sed "s/^/$LABEL | go heap | /"; echo
fi
kill $P; wait $P 2>/dev/null || true
rm -rf "$D"
