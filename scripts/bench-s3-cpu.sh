#!/usr/bin/env bash
# Server CPU per S3 operation, side by side in one run: Coffer (embedded
# default, fresh data folder), MinIO (single drive) and versitygw (posix
# backend) on loopback, taking turns cell by cell and round by round, each
# driven by the same independent aws-sdk-go-v2 client (test/s3load). For
# every cell it prints a markdown table: ops/s, server CPU µs/op
# (utime+stime from /proc/PID/stat over the measured phase / ops), peak RSS
# (VmHWM) and the load average at the end of each round.
#   scripts/bench-s3-cpu.sh [duration-per-round] [rounds] [cells]
#   scripts/bench-s3-cpu.sh 8s 3 "put:1024:16 get:1024:64"
# A cell is op:size-in-bytes:concurrency. Environment:
#   COFFER_BIN   the Coffer binary (default: built from this checkout)
#   COFFER_OLD   a second Coffer binary measured alongside (before/after)
#   PEERS        which peers to run (default "minio versitygw"; "" for none;
#                "floor": test/s3floor, net/http answering with no auth,
#                metadata or storage: the floor under any Go S3 server)
#   COFFER_FLAGS extra flags for both Coffer servers
#   S3LOAD_FLAGS extra flags of test/s3load (e.g. "-versioned" for delete cells)
#   COFFER_ENV, COFFER_OLD_ENV  environment for one of them (e.g. "GOGC=200"):
#                the same binary twice compares settings
set -euo pipefail
export COFFER_SIGNUP_RATE=0 # the script signs up a user from 127.0.0.1
cd "$(dirname "$0")/.."
ROOT=$(pwd)
DUR=${1:-8s}
ROUNDS=${2:-3}
CELLS=${3:-"put:1024:16 get:1024:64"}
PEERS=${PEERS-"minio versitygw"}
TOOLS=${XDG_CACHE_HOME:-$HOME/.cache}/coffer-tools
WORK=$(mktemp -d "${TMPDIR:-/tmp}/coffer-s3-cpu.XXXXXX")
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
mkdir -p "$ROOT/.tools"
COFFER=${COFFER_BIN:-}
if [ -z "$COFFER" ]; then
  go build -o "$ROOT/.tools/coffer" ./cmd/coffer
  COFFER="$ROOT/.tools/coffer"
fi
go build -o "$WORK/s3load" ./test/s3load

wait_http() { # url name: until the server answers (and is still the process we started)
  for _ in $(seq 150); do
    kill -0 "${PIDS[-1]}" 2>/dev/null || { echo "$2 exited:" >&2; tail -5 "$WORK/$2.log" >&2; exit 1; }
    curl -s -o /dev/null "$1" && return 0
    sleep 0.2
  done
  echo "$2 did not start" >&2
  exit 1
}

# free_port: a loopback port nobody listens on now (other benches share the machine).
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

declare -A EP AK SK PID
NAMES=()
start_coffer() { # name binary http-port s3-port [VAR=value...]
  env "${@:5}" "$2" serve --data "$WORK/$1" --listen "127.0.0.1:$3" --s3-listen "127.0.0.1:$4" --log-level warn ${COFFER_FLAGS:-} >"$WORK/$1.log" 2>&1 &
  PIDS+=($!)
  PID[$1]=$!
  wait_http "http://127.0.0.1:$3/readyz" "$1"
  local J='Content-Type: application/json' B="http://127.0.0.1:$3/api/v1" token
  curl -sf -H "$J" -d '{"email":"bench@example.com","password":"bench password 123"}' "$B/auth/signup" >/dev/null
  token=$(curl -sf -H "$J" -d '{"email":"bench@example.com","password":"bench password 123"}' "$B/auth/login" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')
  read -r AK[$1] SK[$1] < <(curl -sf -X POST -H "$J" -H "Authorization: Bearer $token" -d '{"name":"bench"}' "$B/keys" |
    python3 -c 'import json,sys; k=json.load(sys.stdin); print(k["access_key_id"], k["secret_access_key"])')
  EP[$1]="http://127.0.0.1:$4"
  NAMES+=("$1")
}

start_coffer coffer "$COFFER" "$(free_port)" "$(free_port)" ${COFFER_ENV:-}
[ -n "${COFFER_OLD:-}" ] && start_coffer coffer-old "$COFFER_OLD" "$(free_port)" "$(free_port)" ${COFFER_OLD_ENV:-}
for peer in $PEERS; do
  port=$(free_port)
  case $peer in
  minio)
    MINIO=${COFFER_MINIO:-$(ls "$TOOLS"/minio-*/minio 2>/dev/null | tail -1)}
    [ -x "$MINIO" ] || { echo "no MinIO under $TOOLS (GOBIN=DIR go install github.com/minio/minio@latest)" >&2; exit 1; }
    MINIO_ROOT_USER=benchadmin MINIO_ROOT_PASSWORD=benchadmin-secret \
      "$MINIO" server "$WORK/minio" --address "127.0.0.1:$port" --console-address "127.0.0.1:$(free_port)" >"$WORK/minio.log" 2>&1 &
    PIDS+=($!)
    PID[minio]=$!
    wait_http "http://127.0.0.1:$port/minio/health/ready" minio
    EP[minio]=http://127.0.0.1:$port AK[minio]=benchadmin SK[minio]=benchadmin-secret
    ;;
  versitygw)
    VGW=$(command -v versitygw || true)
    [ -z "$VGW" ] && VGW="$TOOLS/versitygw-v1.8.0/versitygw"
    if [ ! -x "$VGW" ]; then
      GOBIN="$TOOLS/versitygw-v1.8.0" go install github.com/versity/versitygw/cmd/versitygw@v1.8.0
    fi
    mkdir -p "$WORK/versitygw"
    ROOT_ACCESS_KEY=benchadmin ROOT_SECRET_KEY=benchadmin-secret \
      "$VGW" --port "127.0.0.1:$port" posix "$WORK/versitygw" >"$WORK/versitygw.log" 2>&1 &
    PIDS+=($!)
    PID[versitygw]=$!
    wait_http "http://127.0.0.1:$port/" versitygw
    EP[versitygw]=http://127.0.0.1:$port AK[versitygw]=benchadmin SK[versitygw]=benchadmin-secret
    ;;
  floor)
    go build -o "$WORK/s3floor" ./test/s3floor
    "$WORK/s3floor" -listen "127.0.0.1:$port" >"$WORK/floor.log" 2>&1 &
    PIDS+=($!)
    PID[floor]=$!
    wait_http "http://127.0.0.1:$port/" floor
    EP[floor]=http://127.0.0.1:$port AK[floor]=floor SK[floor]=floor-secret
    ;;
  *) echo "unknown peer $peer" >&2; exit 2 ;;
  esac
  NAMES+=("$peer")
done

echo "machine: $(nproc) cores; $("$COFFER" version)${COFFER_OLD:+; old: $("$COFFER_OLD" version)}; load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "client: test/s3load (aws-sdk-go-v2 defaults), $DUR a round after 2 s of warm-up, $ROUNDS rounds, servers taking turns"
RES="$WORK/results.tsv"
: >"$RES"
for cell in $CELLS; do
  IFS=: read -r op size c <<<"$cell"
  for r in $(seq "$ROUNDS"); do
    for n in "${NAMES[@]}"; do
      "$WORK/s3load" -endpoint "${EP[$n]}" -ak "${AK[$n]}" -sk "${SK[$n]}" -bucket "bench-$op-$size" \
        -op "$op" -size "$size" -c "$c" -duration "$DUR" -pid "${PID[$n]}" -label "$n" ${S3LOAD_FLAGS:-} >>"$RES" || echo "$n $cell round $r failed" >&2
    done
  done
done
# label op size c ops ops/s errors cpu-µs/op peak-rss-MiB load1, one line per round
python3 - "$RES" <<'PY'
import sys, collections
rows = collections.OrderedDict()
for l in open(sys.argv[1]):
    f = l.rstrip("\n").split("\t")
    rows.setdefault((f[1], f[2], f[3]), collections.OrderedDict()).setdefault(f[0], []).append(f)
for (op, size, c), servers in rows.items():
    print(f"\n#### {op.upper()} {size} B c{c}\n")
    print("| server | ops/s (rounds) | server CPU µs/op (rounds) | CPU µs/op, all rounds | peak RSS MiB | errors | load1 |")
    print("|---|---|---|---:|---:|---:|---|")
    best = {}
    for name, rs in servers.items():
        ops = sum(int(r[4]) for r in rs)
        cpu = sum(float(r[7]) * int(r[4]) for r in rs if r[7] != "-") / ops if ops else float("nan")
        best[name] = cpu
        print(f"| {name} | {' / '.join(r[5] for r in rs)} | {' / '.join(r[7] for r in rs)} | {cpu:.0f} | "
              f"{max(r[8] for r in rs)} | {sum(int(r[6]) for r in rs)} | {' / '.join(r[9] for r in rs)} |")
    peers = [v for k, v in best.items() if not k.startswith("coffer")]
    if peers and "coffer" in best:
        print(f"\nCoffer's CPU per op / best peer's: {best['coffer'] / min(peers):.2f}")
PY
