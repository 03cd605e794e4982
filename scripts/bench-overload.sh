#!/usr/bin/env bash
# Open-model overload table of docs/PERFORMANCE.md: a fresh `coffer serve`
# per cell, `coffer bench SCENARIO --rate` at 1x, 2x and 5x of a capacity
# measured before, each for DURATION; prints one markdown row per cell
# (goodput, shed, time to shed, admitted latency, errors, RSS, goroutines).
#   scripts/bench-overload.sh SCENARIO CAPACITY [duration] [multipliers] [server binary] [server flags...]
#   scripts/bench-overload.sh upload-proxy 190 30s "1 2 5"
#   scripts/bench-overload.sh s3-get 1200 30s "1 2 5" /tmp/coffer-before
# Extra bench flags in BENCH_FLAGS (e.g. --expect-continue). The load generator is always this checkout's coffer bench (it reports the
# admitted and shed latencies apart); the server is this checkout's build
# or the binary given (e.g. an older commit, for before/after).
set -euo pipefail
# The bench signs up its users from 127.0.0.1, past the default --signup-rate
# (an environment variable, so that older binaries started here ignore it).
export COFFER_SIGNUP_RATE=0
cd "$(dirname "$0")/.."
ROOT=$(pwd)
SCENARIO=${1:?scenario}
CAPACITY=${2:?capacity in iterations per second}
DUR=${3:-30s}
MULTS=${4:-"1 2 5"}
go build -o "$ROOT/.tools/coffer" ./cmd/coffer
BENCH="$ROOT/.tools/coffer"
SERVER=${5:-$BENCH}
shift 5 2>/dev/null || shift $#
FLAGS=("$@")
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/coffer-overload.XXXXXX")}
mkdir -p "$OUT"
echo "reports in $OUT; server $SERVER ${FLAGS[*]:-}" >&2
printf '| scenario | load | offered/s | goodput/s | of capacity | shed | time to shed p50 / p99 | admitted p50 / p99 | failed (408) | RSS max | goroutines max |\n|---|---|---:|---:|---:|---:|---|---|---|---:|---:|\n'
for m in $MULTS; do
  rate=$(python3 -c "print(round($CAPACITY*$m))")
  data=$(mktemp -d "${TMPDIR:-/tmp}/coffer-data.XXXXXX")
  "$SERVER" serve --data "$data" --listen 127.0.0.1:18080 --s3-listen 127.0.0.1:19000 --log-level warn \
    "${FLAGS[@]}" >"$OUT/$SCENARIO-$m.server.log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do curl -sf http://127.0.0.1:18080/readyz >/dev/null && break; sleep 0.1; done
  extra=()
  case $SCENARIO in s3-*) extra=(--s3-target http://127.0.0.1:19000 --objects 200) ;; esac
  "$BENCH" bench "$SCENARIO" --target http://127.0.0.1:18080 --rate "$rate/s" --vus 1000 --users 20 \
    --duration "$DUR" --timeout 60s --json "$OUT/$SCENARIO-$m.json" "${extra[@]}" ${BENCH_FLAGS:-} >"$OUT/$SCENARIO-$m.txt" 2>&1 || true
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  rm -rf "$data"
  python3 - "$OUT/$SCENARIO-$m.json" "$SCENARIO" "$m" "$rate" "$CAPACITY" <<'EOF'
import json, sys
path, sc, m, rate, cap = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), float(sys.argv[5])
d = json.load(open(path))
main = {"upload-proxy": "upload", "upload-direct": "complete", "s3-get": "get", "s3-put": "put"}.get(sc)
ep = next((e for e in d["endpoints"] if e["name"] == main), None)
dur = d["duration_s"] or 1
ok = ep["ok_latency_ms"] if ep else {"count": 0, "p50": 0, "p99": 0}
good = (d["audit"]["acknowledged"] if sc.startswith("upload") else ok["count"]) / dur
req = d["requests"]
shed = d.get("shed_latency_ms")
ts = f'{shed["p50"]:.1f} / {shed["p99"]:.1f} ms' if shed else "—"
rss = max([s.get("rss_bytes", 0) for s in d["server"].get("samples", [])] or [0]) / 2**20
gor = max([s.get("goroutines", 0) for s in d["server"].get("samples", [])] or [0])
e408 = d["errors"].get("http_408", 0)
print(f'| {sc} | {m}x | {rate:.0f} | {good:.0f} | {100*good/cap:.0f}% | {100*req["shed"]/max(req["total"],1):.0f}% | {ts} '
      f'| {ok["p50"]:.1f} / {ok["p99"]:.1f} ms | {req["failed"]} ({e408}) | {rss:.0f} MiB | {gor:.0f} |')
EOF
done
