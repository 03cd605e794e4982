#!/usr/bin/env bash
# Reproduces the GoVault load-test table on this machine with coffer bench:
# upload-proxy and upload-direct of 1 MiB files at 200..1000 VUs, each level
# for DURATION against a fresh `coffer serve` (fresh data folder, deleted
# after), closed loop (no think time: every VU uploads as fast as it can).
# Prints a markdown table; the JSON reports stay in OUT.
#   scripts/bench-govault.sh [duration] [levels] [scenarios] [extra bench flags...]
set -euo pipefail
# The bench signs up its users from 127.0.0.1, past the default --signup-rate
# (an environment variable, so that older binaries started here ignore it).
export COFFER_SIGNUP_RATE=0
# Loopback ports of the server under test (PORT, S3_PORT: another run on the
# same machine picks others).
PORT=${PORT:-18080} S3_PORT=${S3_PORT:-19000}
cd "$(dirname "$0")/.."
ROOT=$(pwd)
DUR=${1:-30s}
LEVELS=${2:-"200 400 600 750 850 925 1000"}
SCENARIOS=${3:-"upload-proxy upload-direct"}
shift 3 2>/dev/null || shift $#
EXTRA=("$@")
go build -o "$ROOT/.tools/coffer" ./cmd/coffer
COFFER="$ROOT/.tools/coffer"
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/coffer-govault.XXXXXX")}
mkdir -p "$OUT"
echo "reports in $OUT" >&2
printf '| scenario | VUs | req/s | uploads/s | upload p50 | upload p95 | iteration p95 | errors | error rate | shed | ghosts (missing+corrupt of acknowledged) | server RSS max |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|\n'
for sc in $SCENARIOS; do
  for vus in $LEVELS; do
    data=$(mktemp -d "${TMPDIR:-/tmp}/coffer-data.XXXXXX")
    "$COFFER" serve --data "$data" --listen 127.0.0.1:$PORT --s3-listen 127.0.0.1:$S3_PORT --log-level warn \
      --max-in-flight 10000 --max-in-flight-per-client 0 ${SERVE_FLAGS:-} >"$OUT/$sc-$vus.server.log" 2>&1 &
    pid=$!
    for _ in $(seq 100); do curl -sf http://127.0.0.1:$PORT/readyz >/dev/null && break; sleep 0.1; done
    "$COFFER" bench "$sc" --target http://127.0.0.1:$PORT --vus "$vus" --users 100 --duration "$DUR" \
      --json "$OUT/$sc-$vus.json" "${EXTRA[@]}" >"$OUT/$sc-$vus.txt" 2>&1 || true
    kill "$pid"; wait "$pid" 2>/dev/null || true
    rm -rf "$data"
    python3 - "$OUT/$sc-$vus.json" "$sc" "$vus" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); sc, vus = sys.argv[2], sys.argv[3]
ep = {e["name"]: e for e in d["endpoints"]}
up = ep.get("upload") or ep.get("put-part")
a = d["audit"]; r = d["requests"]
rss = max([s.get("rss_bytes", 0) for s in d.get("server", {}).get("samples", [])] or [0])
errs = sum(v for k, v in (d.get("errors") or {}).items())
ghosts = a.get("missing", 0) + a.get("corrupt", 0)
print(f"| {sc} | {vus} | {r['rps']:.0f} | {d['iterations']['rate']:.0f} | {up['latency_ms']['p50']:.0f} ms | {up['latency_ms']['p95']:.0f} ms | "
      f"{d['iterations']['duration_ms']['p95']:.0f} ms | {errs} | {100*r['error_rate']:.2f}% | {r['shed']} | "
      f"{ghosts} of {a.get('acknowledged', 0)} | {rss/2**20:.0f} MiB |")
PY
  done
done
