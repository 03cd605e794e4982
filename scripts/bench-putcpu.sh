#!/usr/bin/env bash
# Issue 23, PUT CPU per byte: this checkout's Coffer against another
# Coffer binary (an older commit), side by side on loopback, the same
# client in alternating rounds (coffer bench s3-put --compare), with each
# server's user and system CPU (utime/stime of /proc/PID/stat over the
# cell) divided by the MiB it acknowledged, next to what the hashes an
# upload must compute (MD5 for the ETag, SHA-256 for Coffer's integrity
# promise) cost a core on this machine in the same run (openssl speed and
# go test -bench), and the load average.
#   git archive REV | tar -x -C /tmp/old && (cd /tmp/old && go build -o /tmp/coffer-old ./cmd/coffer)
#   scripts/bench-putcpu.sh /tmp/coffer-old [duration-per-round] [sizes] [concurrencies] [rounds]
#   scripts/bench-putcpu.sh /tmp/coffer-old 8s "10MiB 1MiB" "16 1" 2
# NEW=path uses a prebuilt binary for this side instead of building one.
# PORT, S3_PORT (default 18081, 19001): the new server's ports on
# 127.0.0.1; the old one takes the next port of each.
# Both servers run with --admission fixed: on this shared machine adaptive
# admission sheds uploads when other jobs load the CPU, and a shed upload
# is CPU without acknowledged bytes.
set -euo pipefail
export COFFER_SIGNUP_RATE=0
cd "$(dirname "$0")/.."
ROOT=$(pwd)
OLD=${1:?old coffer binary}
DUR=${2:-8s}
SIZES=${3:-"10MiB 1MiB"}
CONCS=${4:-"16 1"}
ROUNDS=${5:-2}
PORT=${PORT:-18081} S3_PORT=${S3_PORT:-19001}
OPORT=$((PORT + 1)) OS3_PORT=$((S3_PORT + 1))
if [ -z "${NEW:-}" ]; then
  go build -o "$ROOT/.tools/coffer" ./cmd/coffer
  NEW="$ROOT/.tools/coffer"
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/coffer-putcpu.XXXXXX")
cleanup() { kill "$OPID" "$NPID" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

echo "## hashes, one core (same run)"
openssl speed -seconds 2 -bytes 1048576 md5 sha256 2>/dev/null | awk '/^(md5|sha256) /{printf "openssl %-7s %7.0f MB/s  %.2f ms/MiB\n", $1, $2/1000, 1048.576/($2/1000)}'
go test -run '^$' -bench 'BenchmarkHash$' -benchmem ./internal/integrity/ | awk '/^BenchmarkHash/{print "go test " $0}'
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"

"$OLD" serve --data "$WORK/old" --listen 127.0.0.1:$OPORT --s3-listen 127.0.0.1:$OS3_PORT --admission fixed --log-level warn >"$WORK/old.log" 2>&1 &
OPID=$!
"$NEW" serve --data "$WORK/new" --listen 127.0.0.1:$PORT --s3-listen 127.0.0.1:$S3_PORT --admission fixed --log-level warn >"$WORK/new.log" 2>&1 &
NPID=$!
source scripts/lib/s3key.sh
wait_ready http://127.0.0.1:$OPORT http://127.0.0.1:$PORT
# A user and an S3 key on the old server (the bench makes its own on the new one).
read -r KID KSECRET < <(s3_key http://127.0.0.1:$OPORT)
echo "machine: $(nproc) cores; A (new): $("$NEW" version); B (old): $("$OLD" version)"

ticks() { awk '{print $14, $15}' "/proc/$1/stat"; }
for size in $SIZES; do
  for c in $CONCS; do
    echo
    echo "### s3-put size=$size concurrency=$c, $ROUNDS rounds of $DUR each (A: this checkout; B: $OLD)"
    read -r au0 as0 < <(ticks "$NPID")
    read -r bu0 bs0 < <(ticks "$OPID")
    "$NEW" bench s3-put --target http://127.0.0.1:$PORT --s3-target http://127.0.0.1:$S3_PORT \
      --compare http://127.0.0.1:$OS3_PORT --compare-access-key "$KID" --compare-secret-key "$KSECRET" \
      --vus "$c" --duration "$DUR" --size "$size" --rounds "$ROUNDS" --audit=false --metrics-url off \
      --json "$WORK/cell.json" 2>&1 | sed -n '/alternating rounds/,$p' | grep -E 'requests/s|sent MiB|latency|p50|p95|alternating' || true
    read -r au1 as1 < <(ticks "$NPID")
    read -r bu1 bs1 < <(ticks "$OPID")
    python3 - "$(getconf CLK_TCK)" "$au0" "$as0" "$au1" "$as1" "$bu0" "$bs0" "$bu1" "$bs1" "$WORK/cell.json" <<'PY'
import json, sys
t = float(sys.argv[1]); v = list(map(float, sys.argv[2:10])); r = json.load(open(sys.argv[10]))
a, b = r["data"]["uploaded_bytes"] / 2**20, r["compare"]["result"]["data"]["uploaded_bytes"] / 2**20
def row(name, mib, u0, s0, u1, s1):
    u, s = (u1 - u0) / t * 1e3 / mib, (s1 - s0) / t * 1e3 / mib
    print(f"    {name}: {mib:8.0f} MiB acknowledged   CPU per MiB: user {u:.2f} ms + sys {s:.2f} ms = {u + s:.2f} ms")
row("A new", a, *v[0:4])
row("B old", b, *v[4:8])
PY
    echo "    load average: $(cut -d' ' -f1-3 /proc/loadavg)"
  done
done
