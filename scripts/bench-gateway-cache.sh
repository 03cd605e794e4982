#!/usr/bin/env bash
# Measures gateway reads through the blob cache (docs/PERFORMANCE.md,
# "Gateway buckets through the blob cache"): one embedded coffer node
# (SQLite, local disk) with a gateway bucket over a MinIO bucket, --cache
# off then on; proxy-get of 1 KiB and 1 MiB objects over the S3 API. MinIO's
# GetObject and HeadObject counts (its Prometheus metrics) give the backend
# requests per GET. Loopback only.
#   scripts/bench-gateway-cache.sh [duration] [modes]
set -euo pipefail
export COFFER_SIGNUP_RATE=0
cd "$(dirname "$0")/.."
ROOT=$(pwd)
DUR=${1:-10s}
MODES=${2:-"off on"}
. scripts/lib/backends.sh
bench_setup coffer-gwcache
MPORT=19930 CPORT=18190 SPORT=19190
start_minio $MPORT
mkbucket gwbench $MPORT
printf 'access_key=benchadmin\nsecret_key=benchadmin-secret\n' >"$WORK/creds" && chmod 600 "$WORK/creds"
echo "machine: $(nproc) cores; $("$COFFER" version | head -1); $("$MINIO" --version | head -1); cells of $DUR"

s3calls() { # MinIO's GetObject and HeadObject requests so far (its metrics are cached ~10 s: let them settle)
  sleep 11
  curl -sf "http://127.0.0.1:$MPORT/minio/v2/metrics/cluster" |
    awk '/^minio_s3_requests_total\{/ && /api="getobject"/ {g += $NF} /^minio_s3_requests_total\{/ && /api="headobject"/ {h += $NF} END {printf "%d %d\n", g, h}'
}

cell() { # mode name args...
  local mode=$1 name=$2; shift 2
  local g0 h0 g1 h1
  read -r g0 h0 <<<"$(s3calls)"
  "$COFFER" bench proxy-get --target http://127.0.0.1:$CPORT --s3-target http://127.0.0.1:$SPORT --audit=false \
    --access-key "$AK" --secret-key "$SK" --bucket gwbucket --sample-interval 1s --json "$WORK/$mode-$name.json" "$@" \
    >"$WORK/$mode-$name.txt" 2>&1 || { echo "bench $name failed:"; tail -5 "$WORK/$mode-$name.txt"; }
  read -r g1 h1 <<<"$(s3calls)"
  python3 - "$WORK/$mode-$name.json" "$mode" "$name" "$((g1 - g0))" "$((h1 - h0))" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); mode, name, g, h = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
gets = sum(e["count"] for e in r["endpoints"] if e["name"].startswith("get"))
print(f"| {name} | {mode} | {r['requests']['rps']:.0f} | {r['data']['received_per_s'] / 2**20:.1f} | {r['latency_ms']['p50']:.2f} | "
      f"{r['latency_ms']['p95']:.2f} | {r['requests']['failed']} | {g / max(gets, 1):.3f} | {h / max(gets, 1):.3f} |")
PY
}

echo
echo "| cell | cache | req/s | MiB/s | p50 ms | p95 ms | failed | backend GETs per GET | backend HEADs per GET |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
for mode in $MODES; do
  data="$WORK/node-$mode"
  "$COFFER" user create --data "$data" --email bench@x.io --password bench-password >/dev/null
  keys=$("$COFFER" key create --data "$data" --email bench@x.io)
  AK=$(awk '/^access_key_id:/ {print $2}' <<<"$keys") SK=$(awk '/^secret_access_key:/ {print $2}' <<<"$keys")
  "$COFFER" serve --data "$data" --listen 127.0.0.1:$CPORT --s3-listen 127.0.0.1:$SPORT --log-level warn \
    --max-in-flight-per-client 0 --cache "$mode" \
    --gateway "gwbucket=s3://gwbench/$mode?endpoint=http://127.0.0.1:$MPORT&region=us-east-1&mode=rw&owner=bench@x.io&credentials_file=$WORK/creds" \
    >"$WORK/node-$mode.log" 2>&1 &
  node=$!
  for _ in $(seq 100); do curl -sf http://127.0.0.1:$CPORT/readyz >/dev/null && break; sleep 0.1; done
  curl -sf http://127.0.0.1:$CPORT/readyz >/dev/null || { echo "coffer did not start:"; tail -5 "$WORK/node-$mode.log"; exit 1; }
  cell "$mode" "proxy-get 1 KiB, 10 VUs" --size 1KiB --objects 100 --vus 10 --duration "$DUR"
  cell "$mode" "proxy-get 1 MiB, 10 VUs" --size 1MiB --objects 50 --vus 10 --duration "$DUR"
  curl -sf http://127.0.0.1:$CPORT/metrics | grep '^coffer_blob_cache_\(hits\|misses\|fills\)' | tr '\n' ' ' | sed 's/^/cache metrics: /' || true
  echo
  kill "$node"; wait "$node" 2>/dev/null || true
done
