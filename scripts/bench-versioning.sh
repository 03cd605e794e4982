#!/usr/bin/env bash
# What S3 versioning costs on the hot paths (issue 20): S3 PUT and GET
# cells in a versioned (Enabled) bucket against an unversioned one, on
# this checkout's binary, embedded default shape. Two servers on loopback
# (same binary, same flags), each with a bucket "bench" — versioned on A,
# never versioned on B — driven by the same client in alternating rounds
# (coffer bench --compare), with the server CPU per request of each.
#   scripts/bench-versioning.sh [duration-per-round] [sizes] [concurrencies] [scenarios] [rounds]
#   scripts/bench-versioning.sh 8s "4KiB 1MiB" 16 "s3-put s3-get" 3
# SWAP=1 versions B's bucket instead of A's (to see which side the
# alternation favours).
# Needs boto3 (COFFER_PYTHON: a Python with it, as scripts/test.sh's venv).
set -euo pipefail
export COFFER_SIGNUP_RATE=0
PY=${COFFER_PYTHON:-python3}
cd "$(dirname "$0")/.."
ROOT=$(pwd)
DUR=${1:-8s}
SIZES=${2:-"4KiB 1MiB"}
CONCS=${3:-16}
SCENARIOS=${4:-"s3-put s3-get"}
ROUNDS=${5:-3}
go build -o "$ROOT/.tools/coffer" ./cmd/coffer
BIN="$ROOT/.tools/coffer"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/coffer-bench-versioning.XXXXXX")
cleanup() { kill "$APID" "$BPID" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

"$BIN" serve --data "$WORK/a" --listen 127.0.0.1:18080 --s3-listen 127.0.0.1:19000 --log-level warn >"$WORK/a.log" 2>&1 &
APID=$!
"$BIN" serve --data "$WORK/b" --listen 127.0.0.1:28080 --s3-listen 127.0.0.1:29000 --log-level warn >"$WORK/b.log" 2>&1 &
BPID=$!
for _ in $(seq 100); do
  curl -sf http://127.0.0.1:18080/readyz >/dev/null && curl -sf http://127.0.0.1:28080/readyz >/dev/null && break
  sleep 0.2
done
J='Content-Type: application/json'
# setup PORT VERSIONED: a user, a key and the bucket "bench" on the server
# at 127.0.0.1:PORT (its S3 listener at PORT+920); prints "KEY SECRET".
setup() {
  local B=http://127.0.0.1:$1/api/v1 S3=http://127.0.0.1:$(($1 + 920))
  curl -sf -H "$J" -d '{"email":"bench@example.com","password":"bench password 123"}' $B/auth/signup >/dev/null
  local TOKEN KID KSECRET
  TOKEN=$(curl -sf -H "$J" -d '{"email":"bench@example.com","password":"bench password 123"}' $B/auth/login | python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')
  read -r KID KSECRET < <(curl -sf -X POST -H "$J" -H "Authorization: Bearer $TOKEN" -d '{"name":"bench"}' $B/keys |
    python3 -c 'import json,sys; k=json.load(sys.stdin); print(k["access_key_id"], k["secret_access_key"])')
  # (bench@example.com's default bucket is "bench".)
  env -u AWS_CA_BUNDLE "$PY" - "$S3" "$KID" "$KSECRET" "$2" >&2 <<'PY'
import sys, boto3
url, kid, secret, versioned = sys.argv[1:]
s3 = boto3.client("s3", endpoint_url=url, aws_access_key_id=kid, aws_secret_access_key=secret, region_name="us-east-1")
if versioned == "1":
    s3.put_bucket_versioning(Bucket="bench", VersioningConfiguration={"Status": "Enabled"})
print(url, "bucket bench versioning:", s3.get_bucket_versioning(Bucket="bench").get("Status", "never enabled"))
PY
  echo "$KID $KSECRET"
}
if [ "${SWAP:-0}" = 1 ]; then AV=0 BV=1; else AV=1 BV=0; fi
read -r AK AS < <(setup 18080 $AV)
read -r BK BS < <(setup 28080 $BV)
echo "machine: $(nproc) cores; $("$BIN" version); A's bucket versioned: $AV, B's: $BV"
source scripts/lib/compare.sh
for sc in $SCENARIOS; do
  for size in $SIZES; do
    for c in $CONCS; do
      echo
      echo "### $sc size=$size concurrency=$c (A: versioned $AV; B: versioned $BV)"
      compare_cell "$APID" "$BPID" "$DUR" "$ROUNDS" "$WORK/cell.txt" -- \
        "$BIN" bench "$sc" --target http://127.0.0.1:18080 --s3-target http://127.0.0.1:19000 --bucket bench \
        --access-key "$AK" --secret-key "$AS" \
        --compare http://127.0.0.1:29000 --compare-access-key "$BK" --compare-secret-key "$BS" \
        --vus "$c" --duration "$DUR" --size "$size" --rounds "$ROUNDS" --objects 200 --audit=false --metrics-url off
    done
  done
done

