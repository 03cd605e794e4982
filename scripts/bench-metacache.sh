#!/usr/bin/env bash
# Measures the metadata cache of docs/PERFORMANCE.md ("Metadata cache"): two
# coffer nodes on PostgreSQL + MinIO, --meta-cache off then on, in one run:
# S3 GET of 1 KiB and 1 MiB objects (throughput, p95) and S3 PUT of 1 KiB
# (the cost of invalidation) against node 1, node 2 listening; then
# PostgreSQL statements per file-API GET and PUT (coffer_meta_queries_total
# of both nodes over 500 sequential requests of one object) and node 1's
# peak RSS. Loopback only.
#   scripts/bench-metacache.sh [duration] [vus]
# Needs PostgreSQL binaries (Debian's postgresql) and minio (scripts/test.sh
# installs it; or set COFFER_MINIO). Run as root: PostgreSQL runs as "postgres".
set -euo pipefail
# The bench signs up its users from 127.0.0.1, past the default --signup-rate
# (an environment variable, so that older binaries started here ignore it).
export COFFER_SIGNUP_RATE=0
cd "$(dirname "$0")/.."
ROOT=$(pwd)
DUR=${1:-10s}
VUS=${2:-16}
. scripts/lib/backends.sh
bench_setup coffer-scaleout
start_postgres 15432
start_minio 19900
openssl rand -hex 32 >"$WORK/server.key" && chmod 600 "$WORK/server.key"
echo "machine: $(nproc) cores; $("$COFFER" version); PostgreSQL $("$PGBIN/postgres" --version | awk '{print $3}'); $("$MINIO" --version | head -1)"


metric() { # node-port name: the sum of the samples of name
  curl -sf "http://127.0.0.1:$1/metrics" | awk -v n="$2" '$1 == n || index($1, n"{") == 1 { s += $NF } END { printf "%.0f", s }'
}

run() { # mode (off|on)
  local mode=$1 db="b$RANDOM$RANDOM"
  runuser -u postgres -- "$PGBIN/createdb" -h 127.0.0.1 -p 15432 -U postgres "$db"
  mkbucket "$db" 19900
  local nodepids=()
  for i in 1 2; do
    COFFER_META="postgres://postgres@127.0.0.1:15432/$db?sslmode=disable" \
    COFFER_BLOB="s3://$db?endpoint=http://127.0.0.1:19900&region=us-east-1" \
    COFFER_SERVER_KEY_FILE="$WORK/server.key" \
      "$COFFER" serve --data "$WORK/$mode$i" --listen "127.0.0.1:1808$i" --s3-listen "127.0.0.1:1900$i" --log-level warn \
      --max-in-flight-per-client 0 --meta-cache "$mode" >"$WORK/$mode$i.log" 2>&1 &
    nodepids+=($!)
  done
  for i in 1 2; do
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:1808$i/readyz" >/dev/null && break; sleep 0.1; done
  done
  echo
  echo "### --meta-cache $mode (2 nodes; load on node 1; $VUS VUs, $DUR per cell)"
  for cell in "s3-get 1KiB" "s3-get 1MiB" "s3-put 1KiB"; do
    set -- $cell
    "$COFFER" bench "$1" --target http://127.0.0.1:18081 --s3-target http://127.0.0.1:19001 --vus "$VUS" --duration "$DUR" \
      --size "$2" --objects 100 --json "$WORK/$mode-$1-$2.json" >"$WORK/$mode-$1-$2.txt" 2>&1 || { echo "bench $cell failed:"; tail -5 "$WORK/$mode-$1-$2.txt"; }
    python3 - "$WORK/$mode-$1-$2.json" "$cell" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
rss = max((s["rss_bytes"] for s in r["server"]["samples"]), default=0) / 2**20
print(f"{sys.argv[2]}: {r['requests']['rps']:.0f} req/s, p50 {r['ok_latency_ms']['p50']:.1f} ms, p95 {r['ok_latency_ms']['p95']:.1f} ms, "
      f"failed {r['requests']['failed']}, node 1 RSS peak {rss:.0f} MiB")
PY
  done
  # Statements per request: 500 sequential file-API GETs, then PUTs, of one
  # 1 KiB object, both nodes' coffer_meta_queries_total.
  local email="probe$RANDOM@example.com" tok bucket q0 q1 t0 t1
  curl -sf -X POST -H 'Content-Type: application/json' -d "{\"email\":\"$email\",\"password\":\"probe password\"}" http://127.0.0.1:18081/api/v1/auth/signup >/dev/null
  tok=$(curl -sf -X POST -H 'Content-Type: application/json' -d "{\"email\":\"$email\",\"password\":\"probe password\"}" http://127.0.0.1:18081/api/v1/auth/login | python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')
  bucket=$(curl -sf -H "Authorization: Bearer $tok" http://127.0.0.1:18081/api/v1/buckets | python3 -c 'import json,sys; d=json.load(sys.stdin); print((d.get("buckets") or d)[0]["name"])')
  head -c 1024 /dev/urandom >"$WORK/probe.bin"
  curl -sf -X PUT -H "Authorization: Bearer $tok" --data-binary @"$WORK/probe.bin" "http://127.0.0.1:18081/api/v1/buckets/$bucket/files/probe" >/dev/null
  for what in GET PUT; do
    q0=$(( $(metric 18081 coffer_meta_queries_total) + $(metric 18082 coffer_meta_queries_total) ))
    t0=$(date +%s.%N)
    python3 - "$what" "$tok" "$bucket" "$WORK/probe.bin" <<'PY'
import sys, http.client
what, tok, bucket, f = sys.argv[1:5]
body = open(f, "rb").read()
c = http.client.HTTPConnection("127.0.0.1", 18081)
for _ in range(500):
    c.request(what, f"/api/v1/buckets/{bucket}/files/probe", body=body if what == "PUT" else None, headers={"Authorization": "Bearer " + tok})
    r = c.getresponse(); r.read()
    assert r.status in (200, 201), r.status
PY
    t1=$(date +%s.%N)
    q1=$(( $(metric 18081 coffer_meta_queries_total) + $(metric 18082 coffer_meta_queries_total) ))
    python3 -c "import sys; q=($q1-$q0)/500; print(f'file-API $what of one 1 KiB object, sequential: {q:.2f} PostgreSQL statements per request (both nodes), {($t1-$t0)*1000/500:.2f} ms per request')"
  done
  echo "node 1 object cache: hits $(metric 18081 'coffer_meta_cache_hits_total{cache="object"}') misses $(metric 18081 'coffer_meta_cache_misses_total{cache="object"}') invalidations $(metric 18081 'coffer_meta_cache_invalidations_total{cache="object"}')"
  for p in "${nodepids[@]}"; do kill "$p"; done
  wait "${nodepids[@]}" 2>/dev/null || true
}
run off
run on
