#!/usr/bin/env bash
# Measures the blob cache of docs/PERFORMANCE.md ("Blob cache"): one coffer
# node on PostgreSQL + MinIO (the scale-out shape), --cache off then on, each
# on a fresh database and bucket; S3 GETs of 1 KiB and 1 MiB objects and the
# four read-proxy scenarios (proxy-get at 10 VUs, proxy-get ramped to 100
# VUs, proxy-stream, proxy-soak at 50 VUs). MinIO's GetObject count (its
# Prometheus metrics) gives the S3 requests per GET. Loopback only.
#   scripts/bench-cache.sh [duration] [modes] [inline-max]
#   TMPDIR=/work/tmp scripts/bench-cache.sh 20s "off on" 0
#   CELLS=soak scripts/bench-cache.sh 10m on 0   # only the soak, with RSS growth after warm-up
# inline-max defaults to 0: objects up to --inline-max (64 KiB by default)
# live in PostgreSQL and never reach the blob store, cache or not.
# Needs PostgreSQL binaries and minio (as scripts/bench-scaleout.sh).
set -euo pipefail
export COFFER_SIGNUP_RATE=0
cd "$(dirname "$0")/.."
ROOT=$(pwd)
DUR=${1:-20s}
MODES=${2:-"off on"}
INLINE=${3:-0}
CELLS=${CELLS:-} # only the cells whose name contains this (e.g. CELLS=soak for a long soak)
. scripts/lib/backends.sh
bench_setup coffer-cache
PGPORT=15442 MPORT=19910
start_postgres $PGPORT
start_minio $MPORT
openssl rand -hex 32 >"$WORK/server.key" && chmod 600 "$WORK/server.key"
echo "machine: $(nproc) cores; $("$COFFER" version | head -1); $("$MINIO" --version | head -1); --inline-max $INLINE; cells of $DUR"

s3gets_now() {
  curl -sf "http://127.0.0.1:$MPORT/minio/v2/metrics/cluster" |
    awk '/^minio_s3_requests_total\{/ && /api="getobject"/ {s += $NF} END {printf "%d\n", s}'
}
s3gets() { # MinIO's GetObject requests so far (its metrics are cached ~10 s: let them settle)
  sleep 11
  s3gets_now
}

cell() { # mode name scenario args...
  local mode=$1 name=$2 sc=$3; shift 3
  local before after
  case "$name" in *$CELLS*) ;; *) return 0 ;; esac
  before=${LAST:-$(s3gets)}
  "$COFFER" bench "$sc" --target http://127.0.0.1:18180 --s3-target http://127.0.0.1:19180 --audit=false \
    --sample-interval 1s --json "$WORK/$mode-$name.json" "$@" >"$WORK/$mode-$name.txt" 2>&1 || {
    echo "bench $name failed:"; tail -5 "$WORK/$mode-$name.txt"; }
  after=$(s3gets)
  LAST=$after
  python3 - "$WORK/$mode-$name.json" "$mode" "$name" "$((after - before))" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); mode, name, s3 = sys.argv[2], sys.argv[3], int(sys.argv[4])
gets = sum(e["count"] for e in r["endpoints"] if e["name"].startswith("get"))
p95 = {e["name"]: e["latency_ms"]["p95"] for e in r["endpoints"]}
tr = {t["name"]: t["ms"]["p95"] for t in r.get("trends", [])}
rss = [s["rss_bytes"] for s in r["server"]["samples"]]
mib = r["data"]["received_per_s"] / 2**20
print(f"| {name} | {mode} | {r['requests']['rps']:.0f} | {mib:.1f} | {r['latency_ms']['p50']:.2f} | {r['latency_ms']['p95']:.2f} | "
      + " ".join(f"{k} {v:.1f}" for k, v in tr.items()) + f" | {r['requests']['failed']} | {s3 / max(gets, 1):.3f} | "
      + (f"{max(rss) / 2**20:.0f}" if rss else "-") + " |")
if "soak" in name and len(rss) >= 10:
    warm = rss[len(rss) // 10]  # after the first tenth of the run
    print(f"|  | RSS after warm-up (first tenth) {warm / 2**20:.1f} MiB, at the end {rss[-1] / 2**20:.1f} MiB, "
          f"growth {(rss[-1] - warm) / 2**20:+.1f} MiB, max after warm-up {max(rss[len(rss) // 10:]) / 2**20:.1f} MiB over {len(rss)} samples |")
PY
}

echo
echo "| cell | cache | req/s | MiB/s | p50 ms | p95 ms | TTFB p95 ms | failed | S3 GETs per GET | peak RSS MiB |"
echo "|---|---|---:|---:|---:|---:|---|---:|---:|---:|"
for mode in $MODES; do
  db="c$mode$RANDOM"
  runuser -u postgres -- "$PGBIN/createdb" -h 127.0.0.1 -p $PGPORT -U postgres "$db"
  mkbucket "$db" $MPORT
  COFFER_META="postgres://postgres@127.0.0.1:$PGPORT/$db?sslmode=disable" \
  COFFER_BLOB="s3://$db?endpoint=http://127.0.0.1:$MPORT&region=us-east-1" \
  COFFER_SERVER_KEY_FILE="$WORK/server.key" \
    "$COFFER" serve --data "$WORK/node-$mode" --listen 127.0.0.1:18180 --s3-listen 127.0.0.1:19180 --log-level warn \
    --max-in-flight-per-client 0 --inline-max "$INLINE" --cache "$mode" >"$WORK/node-$mode.log" 2>&1 &
  node=$!
  LAST=
  for _ in $(seq 100); do curl -sf http://127.0.0.1:18180/readyz >/dev/null && break; sleep 0.1; done
  cell "$mode" "GET 1 KiB, 16 VUs" proxy-get --size 1KiB --objects 100 --vus 16 --duration "$DUR"
  cell "$mode" "GET 1 MiB, 16 VUs" proxy-get --size 1MiB --objects 50 --vus 16 --duration "$DUR"
  cell "$mode" "proxy-get 1 KiB, 10 VUs" proxy-get --vus 10 --duration "$DUR"
  cell "$mode" "proxy-get ramp to 100 VUs" proxy-get --stages "$DUR:100"
  cell "$mode" "proxy-stream 10 MiB, 10 VUs" proxy-stream --vus 10 --duration "$DUR"
  cell "$mode" "proxy-soak, 50 VUs" proxy-soak --vus 50 --duration "$DUR"
  curl -sf http://127.0.0.1:18180/metrics | grep '^coffer_blob_cache' | tr '\n' ' ' | sed 's/^/cache metrics: /' || true
  echo
  kill "$node"; wait "$node" 2>/dev/null || true
done
