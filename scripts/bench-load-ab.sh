#!/usr/bin/env bash
# GoVault's scenarios (coffer bench upload-proxy / upload-direct, closed
# loop, 1 MiB) on two server binaries A and B taking turns, ROUNDS rounds,
# with the CPU each side spends per upload: server and bench utime+stime
# from /proc/PID/stat over the load phase (after the bench's setup, which
# signs up and logs in with Argon2), divided by the uploads acknowledged in
# it. CPU per upload survives a machine shared with other work; uploads/s
# does not (the load average is printed next to each row).
#   scripts/bench-load-ab.sh A_BIN B_BIN [duration] [vus] [scenarios] [rounds]
#   scripts/bench-load-ab.sh /tmp/coffer-before .tools/coffer 30s 200 "upload-proxy upload-direct" 1
# The bench (load generator) is A's unless BENCH=path says. A fresh data
# folder per cell, 127.0.0.1 only (PORT, S3_PORT; default 18080, 19000).
# Server flags as bench-govault.sh's (--max-in-flight 10000
# --max-in-flight-per-client 0), plus SERVE_FLAGS.
set -euo pipefail
export COFFER_SIGNUP_RATE=0
A=${1:?A binary} B=${2:?B binary}
DUR=${3:-30s} VUS=${4:-200} SCENARIOS=${5:-"upload-proxy upload-direct"} ROUNDS=${6:-1}
BENCH=${BENCH:-$A}
PORT=${PORT:-18080} S3_PORT=${S3_PORT:-19000}
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/coffer-load-ab.XXXXXX")}
mkdir -p "$OUT"
echo "reports in $OUT" >&2
cpu() { awk '{print $14+$15}' "/proc/$1/stat"; }
printf '| round | scenario | server | uploads/s | server CPU/upload | bench CPU/upload | server cores | shed | errors | load avg |\n|---:|---|---|---:|---:|---:|---:|---:|---:|---|\n'
for r in $(seq "$ROUNDS"); do
  for sc in $SCENARIOS; do
    for side in A B; do
      bin=$A; [ "$side" = B ] && bin=$B
      name="$r-$sc-$side"
      data=$(mktemp -d "${TMPDIR:-/tmp}/coffer-data.XXXXXX")
      # shellcheck disable=SC2086 # SERVE_FLAGS is a list of flags
      "$bin" serve --data "$data" --listen "127.0.0.1:$PORT" --s3-listen "127.0.0.1:$S3_PORT" --log-level warn \
        --max-in-flight 10000 --max-in-flight-per-client 0 ${SERVE_FLAGS:-} >"$OUT/$name.server.log" 2>&1 &
      pid=$!
      for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null && break; sleep 0.1; done
      "$BENCH" bench "$sc" --target "http://127.0.0.1:$PORT" --vus "$VUS" --users 100 --duration "$DUR" \
        --json "$OUT/$name.json" >"$OUT/$name.txt" 2>&1 &
      bpid=$!
      # The load phase starts when the bench says so (setup is not counted).
      for _ in $(seq 1500); do grep -q '^bench: running' "$OUT/$name.txt" 2>/dev/null && break; sleep 0.2; done
      s0=$(cpu "$pid"); b0=$(cpu "$bpid"); t0=$(date +%s.%N); l0=$(cut -d' ' -f1 /proc/loadavg)
      # Until the bench starts its audit (the load is over).
      while kill -0 "$bpid" 2>/dev/null && ! grep -q '^bench: auditing' "$OUT/$name.txt"; do sleep 0.2; done
      s1=$(cpu "$pid"); b1=$(cpu "$bpid" 2>/dev/null || echo "$b0"); t1=$(date +%s.%N); l1=$(cut -d' ' -f1 /proc/loadavg)
      wait "$bpid" || true
      kill "$pid"; wait "$pid" 2>/dev/null || true
      rm -rf "$data"
      python3 - "$OUT/$name.json" "$r" "$sc" "$side $bin" "$s0" "$s1" "$b0" "$b1" "$t0" "$t1" "$l0" "$l1" <<'PY'
import json, os, sys
path, r, sc, side = sys.argv[1:5]
s0, s1, b0, b1, t0, t1 = map(float, sys.argv[5:11])
l0, l1 = sys.argv[11:13]
hz = os.sysconf("SC_CLK_TCK")
d = json.load(open(path))
ups = d["audit"]["acknowledged"]
wall = t1 - t0
errs = sum((d.get("errors") or {}).values())
print(f"| {r} | {sc} | {side} | {ups / d['duration_s']:.0f} | {(s1 - s0) / hz / max(ups, 1) * 1000:.2f} ms | "
      f"{(b1 - b0) / hz / max(ups, 1) * 1000:.2f} ms | {(s1 - s0) / hz / wall:.2f} | {d['requests']['shed']} | {errs} | {l0}–{l1} |")
PY
    done
  done
done
