#!/usr/bin/env bash
# Measures the scale-out shape of docs/PERFORMANCE.md: coffer on PostgreSQL +
# MinIO, 1 node vs 3 nodes (3 bench processes, one per node, VUs split
# evenly), upload-proxy and upload-direct with 1 MiB files. Loopback only.
#   scripts/bench-scaleout.sh [duration] [total-vus] [scenarios]
#   TMPDIR=/work/tmp scripts/bench-scaleout.sh 30s 150 "upload-proxy upload-direct"
# Needs PostgreSQL binaries (Debian's postgresql) and minio (scripts/test.sh
# installs it; or set COFFER_MINIO). Run as root: PostgreSQL runs as "postgres".
set -euo pipefail
# The bench signs up its users from 127.0.0.1, past the default --signup-rate
# (an environment variable, so that older binaries started here ignore it).
export COFFER_SIGNUP_RATE=0
cd "$(dirname "$0")/.."
ROOT=$(pwd)
DUR=${1:-30s}
VUS=${2:-150}
SCENARIOS=${3:-"upload-proxy upload-direct"}
. scripts/lib/backends.sh
bench_setup coffer-scaleout
start_postgres 15432
start_minio 19900
openssl rand -hex 32 >"$WORK/server.key" && chmod 600 "$WORK/server.key"
echo "machine: $(nproc) cores; $("$COFFER" version); PostgreSQL $("$PGBIN/postgres" --version | awk '{print $3}'); $("$MINIO" --version | head -1)"

cpu() { # CPU seconds used so far, by role: coffer-serve, coffer-bench, postgres, minio
  python3 - <<'PY'
import os, collections
hz = os.sysconf("SC_CLK_TCK"); t = collections.Counter()
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        st = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        cmd = open(f"/proc/{pid}/cmdline").read().split("\0")
    except OSError:
        continue
    exe = os.path.basename(cmd[0]) if cmd and cmd[0] else ""
    # PostgreSQL backends rename themselves ("postgres: user db host …").
    role = "postgres" if exe.startswith("postgres") else "minio" if exe == "minio" else None
    if exe == "coffer" and len(cmd) > 1:
        role = "coffer-" + cmd[1]
    if role:
        t[role] += (int(st[11]) + int(st[12])) / hz
print(" ".join(f"{k}={v:.1f}" for k, v in sorted(t.items())))
PY
}

run() { # scenario nodes
  local sc=$1 nodes=$2 db="b$RANDOM$RANDOM"
  runuser -u postgres -- "$PGBIN/createdb" -h 127.0.0.1 -p 15432 -U postgres "$db"
  mkbucket "$db" 19900
  local nodepids=()
  for i in $(seq "$nodes"); do
    COFFER_META="postgres://postgres@127.0.0.1:15432/$db?sslmode=disable" \
    COFFER_BLOB="s3://$db?endpoint=http://127.0.0.1:19900&region=us-east-1" \
    COFFER_SERVER_KEY_FILE="$WORK/server.key" \
      "$COFFER" serve --data "$WORK/node$i" --listen "127.0.0.1:1808$i" --s3-listen "127.0.0.1:1900$i" --log-level warn \
      --max-in-flight-per-client 0 >"$WORK/node$i.log" 2>&1 &
    nodepids+=($!)
  done
  for i in $(seq "$nodes"); do
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:1808$i/readyz" >/dev/null && break; sleep 0.1; done
  done
  echo
  echo "### $sc, $nodes node(s), $VUS VUs in total, $DUR"
  local benchpids=() before
  before=$(cpu)
  for i in $(seq "$nodes"); do
    "$COFFER" bench "$sc" --target "http://127.0.0.1:1808$i" --vus $((VUS / nodes)) --duration "$DUR" \
      --users $((30 / nodes)) --size 1MiB --json "$WORK/$sc-$nodes-$i.json" >"$WORK/$sc-$nodes-$i.txt" 2>&1 &
    benchpids+=($!)
  done
  local rc=0
  for p in "${benchpids[@]}"; do wait "$p" || rc=1; done
  # CPU seconds per server role over the run (bench processes have exited).
  python3 - "$before" "$(cpu)" <<'PY'
import sys
def parse(s): return {k: float(v) for k, v in (x.split("=") for x in s.split())}
a, b = parse(sys.argv[1]), parse(sys.argv[2])
d = {k: b[k] - a.get(k, 0) for k in b if k != "coffer-bench"}
print("CPU seconds during the run (servers): " + ", ".join(f"{k} {v:.0f}" for k, v in sorted(d.items(), key=lambda x: -x[1])))
PY
  python3 - "$WORK" "$sc" "$nodes" <<'PY'
import json, sys, glob
w, sc, n = sys.argv[1], sys.argv[2], sys.argv[3]
rs = [json.load(open(f)) for f in sorted(glob.glob(f"{w}/{sc}-{n}-*.json"))]
tot = sum(r["requests"]["total"] for r in rs); failed = sum(r["requests"]["failed"] for r in rs)
rps = sum(r["requests"]["rps"] for r in rs)
it = sum(r.get("iterations", {}).get("rate", 0) for r in rs)
p95 = max(r["latency_ms"]["p95"] for r in rs); p50 = max(r["latency_ms"]["p50"] for r in rs)
ack = sum(r["audit"]["acknowledged"] for r in rs); ver = sum(r["audit"]["verified"] for r in rs)
miss = sum(r["audit"]["missing"] for r in rs); cor = sum(r["audit"]["corrupt"] for r in rs)
print(f"requests {tot} ({rps:.0f} req/s), iterations (uploads) {it:.1f}/s, p50 {p50:.1f} ms, p95 {p95:.1f} ms (worst node), "
      f"failed {failed}, audit: acknowledged {ack}, verified {ver}, missing {miss}, corrupt {cor}")
PY
  [ $rc -eq 0 ] || { echo "bench exit status non-zero:"; tail -5 "$WORK/$sc-$nodes-"*.txt; }
  for p in "${nodepids[@]}"; do kill "$p"; done
  wait "${nodepids[@]}" 2>/dev/null || true
}
for sc in $SCENARIOS; do
  run "$sc" 1
  run "$sc" 3
done
