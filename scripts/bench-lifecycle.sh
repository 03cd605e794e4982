#!/usr/bin/env bash
# Measures lifecycle expiry of docs/PERFORMANCE.md ("Lifecycle expiry"):
# the embedded shape, loopback only, one run. Fills a bucket with N small
# objects (coffer bench s3-put --keep), measures a foreground S3 load
# (coffer bench s3-mixed, 4 KiB, VUS virtual users, DUR) in another bucket
# without lifecycle work, then sets an Expiration rule (1 test day) on the
# full bucket and measures the same load while the worker expires the N
# objects; reports the worker's objects per second (from
# coffer_lifecycle_expired_objects_total) and the foreground p50/p99 of
# both phases (and again after it, to show the machine's noise). The short test day (--lifecycle-day 1s) only makes the
# objects due at once; the work per object is the same as with real days.
#   scripts/bench-lifecycle.sh [objects] [duration] [vus]
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-100000}
DUR=${2:-20s}
VUS=${3:-4}
WORK=$(mktemp -d)
COFFER="$WORK/coffer"
go build -o "$COFFER" ./cmd/coffer
PORT=18380
S3PORT=19380
cleanup() { [ -n "${PID:-}" ] && kill "$PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
trap "exit 1" INT TERM
"$COFFER" serve --data "$WORK/data" --listen "127.0.0.1:$PORT" --s3-listen "127.0.0.1:$S3PORT" --log-level warn \
  --signup-rate 0 --admission fixed --max-in-flight-per-client 0 \
  --lifecycle-day 1s --lifecycle-interval 2s >"$WORK/server.log" 2>&1 &
PID=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null && break; sleep 0.1; done
echo "machine: $(nproc) cores; $("$COFFER" version)"

api() { # method path [json] -> body
  curl -sf -X "$1" "http://127.0.0.1:$PORT$2" -H "Authorization: Bearer ${TOKEN:-}" -H 'Content-Type: application/json' ${3:+--data "$3"}
}
EMAIL="lc$RANDOM@example.com"
api POST /api/v1/auth/signup "{\"email\":\"$EMAIL\",\"password\":\"correct horse battery\"}" >/dev/null
TOKEN=$(api POST /api/v1/auth/login "{\"email\":\"$EMAIL\",\"password\":\"correct horse battery\"}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')
read -r AK SK < <(api POST /api/v1/keys '{"name":"bench"}' | python3 -c 'import json,sys; k=json.load(sys.stdin); print(k["access_key_id"], k["secret_access_key"])')
s3() { # method path [file] [extra curl args...]
  local m=$1 p=$2 f=${3:-}; shift 3 || shift $#
  curl -sf --aws-sigv4 "aws:amz:us-east-1:s3" --user "$AK:$SK" -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" -X "$m" "http://127.0.0.1:$S3PORT$p" ${f:+--data-binary "@$f"} "$@"
}
s3 PUT /lc-fill "" >/dev/null
s3 PUT /lc-fg "" >/dev/null
metric() { curl -sf "http://127.0.0.1:$PORT/metrics" | awk -v n="$1" '$1 == n { print $NF }'; }

echo "filling /lc-fill with $N objects of 1 KiB..."
t0=$(date +%s.%N)
FILLED=0
round=0
while [ "$FILLED" -lt "$N" ]; do
  round=$((round + 1))
  "$COFFER" bench s3-put --target "http://127.0.0.1:$PORT" --s3-target "http://127.0.0.1:$S3PORT" --access-key "$AK" --secret-key "$SK" \
    --bucket lc-fill --size 1KiB --vus 16 --duration 15s --keep --json "$WORK/lc-fill$round.json" >"$WORK/lc-fill$round.txt" 2>&1 ||
    { echo "fill failed:"; tail -5 "$WORK/lc-fill$round.txt"; exit 1; }
  FILLED=$(( FILLED + $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["requests"]["total"] - r["requests"]["failed"])' "$WORK/lc-fill$round.json") ))
done
echo "filled $FILLED objects in $(python3 -c "import time; print(round(time.time() - $t0))") s"

foreground() { # name
  "$COFFER" bench s3-mixed --target "http://127.0.0.1:$PORT" --s3-target "http://127.0.0.1:$S3PORT" --access-key "$AK" --secret-key "$SK" \
    --bucket lc-fg --size 4KiB --vus "$VUS" --duration "$DUR" --json "$WORK/$1.json" >"$WORK/$1.txt" 2>&1 ||
    { echo "bench $1 failed:"; tail -5 "$WORK/$1.txt"; exit 1; }
  python3 - "$WORK/$1.json" "$1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
l = r["ok_latency_ms"]
print(f"{sys.argv[2]}: {r['requests']['rps']:.0f} req/s, p50 {l['p50']:.2f} ms, p99 {l['p99']:.2f} ms, failed {r['requests']['failed']}")
PY
}

echo
echo "### foreground s3-mixed 4 KiB, $VUS VUs, $DUR"
foreground "without lifecycle"
before=$(metric coffer_lifecycle_expired_objects_total)
RULE="$WORK/rule.xml"
printf '<LifecycleConfiguration><Rule><ID>all</ID><Filter/><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule></LifecycleConfiguration>' >"$RULE"
s3 PUT "/lc-fill?lifecycle=" "$RULE" -H "Content-MD5: $(openssl md5 -binary "$RULE" | base64)" >/dev/null
start=$(date +%s.%N)
foreground "while lifecycle expires" &
FG=$!
# The worker's progress, sampled each second until it expired them all.
while :; do
  n=$(( $(metric coffer_lifecycle_expired_objects_total) - before ))
  [ "$n" -ge "$FILLED" ] && break
  if [ "$(python3 -c "import time; print(int(time.time() - $start > 900))")" = 1 ]; then echo "lifecycle: only $n of $FILLED expired after 900 s"; break; fi
  if ! kill -0 "$PID" 2>/dev/null; then echo "server died"; tail "$WORK/server.log"; exit 1; fi
  sleep 1
done
end=$(date +%s.%N)
wait "$FG"
python3 -c "
n, s, e = $FILLED, $start, $end
print(f'lifecycle: {n} objects expired in {e - s:.1f} s from the rule being set: {n / (e - s):.0f} objects/s (includes up to 2 s before they fall due and the run starts)')"
echo "last run: $(metric coffer_lifecycle_last_run_seconds) s; skipped: $(curl -sf "http://127.0.0.1:$PORT/metrics" | awk '/^coffer_lifecycle_skipped_total/ { s += $NF } END { print s + 0 }')"
foreground "after, without lifecycle (the machine's noise)"
