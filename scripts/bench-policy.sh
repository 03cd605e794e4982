#!/usr/bin/env bash
# What a bucket policy costs on the S3 hot path (docs/PERFORMANCE.md,
# "Bucket policies"): two `coffer serve` of this checkout on loopback, the
# same account, key and bucket on each; the bucket of B carries a
# 20-statement policy that the owner's reads must all be evaluated
# against (none of its statements matches them); `coffer bench --compare`
# drives both in alternating rounds and compare_cell adds each server's
# CPU per request, the steadier figure on a shared machine. Usage:
#   scripts/bench-policy.sh [duration-per-round] [size] [concurrency] [scenario] [rounds]
#   scripts/bench-policy.sh 8s 4KiB 64 s3-get 3
# POLICY_ON=none runs the control (no policy on either side).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
DUR=${1:-8s}
SIZE=${2:-4KiB}
CONC=${3:-64}
SCENARIO=${4:-s3-get}
ROUNDS=${5:-3}
PY=${COFFER_PYTHON:-$HOME/.cache/coffer-tools/venv/bin/python}
go build -o "$ROOT/.tools/coffer" ./cmd/coffer
COFFER="$ROOT/.tools/coffer"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/coffer-bench-policy.XXXXXX")
cleanup() { kill "$APID" "$BPID" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

key() { # key DATA: an account and its S3 key in data folder DATA -> "ID SECRET"
  "$COFFER" user create --data "$1" --email bench@example.com --password "bench password 123" >/dev/null
  "$COFFER" key create --data "$1" --email bench@example.com --name bench |
    awk -F': *' '/access_key_id/{id=$2} /secret_access_key/{s=$2} END{print id, s}'
}
read -r AK AS < <(key "$WORK/a")
read -r BK BS < <(key "$WORK/b")
"$COFFER" serve --data "$WORK/a" --listen 127.0.0.1:18180 --s3-listen 127.0.0.1:19100 --log-level warn >"$WORK/a.log" 2>&1 &
APID=$!
"$COFFER" serve --data "$WORK/b" --listen 127.0.0.1:28180 --s3-listen 127.0.0.1:29100 --log-level warn >"$WORK/b.log" 2>&1 &
BPID=$!
for _ in $(seq 100); do
  curl -sf http://127.0.0.1:18180/readyz >/dev/null && curl -sf http://127.0.0.1:28180/readyz >/dev/null && break
  sleep 0.2
done
# The bucket on both; the policy on B's (unless POLICY_ON=none).
"$PY" - "$AK" "$AS" "$BK" "$BS" "${POLICY_ON:-b}" <<'PY'
import json, sys, boto3
ak, asec, bk, bsec, on = sys.argv[1:]
def client(port, k, s):
    return boto3.client("s3", endpoint_url=f"http://127.0.0.1:{port}", aws_access_key_id=k,
                        aws_secret_access_key=s, region_name="us-east-1")
a, b = client(19100, ak, asec), client(29100, bk, bsec)
for c in (a, b):
    c.create_bucket(Bucket="benchpol")
arn = "arn:aws:s3:::benchpol"
stmts = []
for i in range(16):  # per-team Allows: conditioned, on prefixes the bench never reads
    stmts.append({"Sid": f"Team{i}", "Effect": "Allow", "Principal": "*",
                  "Action": ["s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:GetObjectTagging"],
                  "Resource": f"{arn}/team-{i}/*",
                  "Condition": {"IpAddress": {"aws:SourceIp": ["10.0.0.0/8", "2001:db8::/32"]},
                                "Bool": {"aws:SecureTransport": "true"}}})
stmts.append({"Sid": "List", "Effect": "Allow", "Principal": "*", "Action": "s3:ListBucket", "Resource": arn,
              "Condition": {"StringLike": {"s3:prefix": "home/${aws:username}/*"},
                            "NumericLessThanEquals": {"s3:max-keys": "100"}}})
stmts.append({"Sid": "Site", "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": f"{arn}/site/*",
              "Condition": {"StringLike": {"aws:Referer": "https://example.com/*"},
                            "DateLessThan": {"aws:CurrentTime": "2099-01-01T00:00:00Z"}}})
stmts.append({"Sid": "NoBots", "Effect": "Deny", "Principal": "*", "Action": "s3:*", "Resource": [arn, f"{arn}/*"],
              "Condition": {"StringEquals": {"aws:UserAgent": "evil-bot/1.0"}}})
stmts.append({"Sid": "NoOldSig", "Effect": "Deny", "Principal": "*", "Action": "s3:*", "Resource": [arn, f"{arn}/*"],
              "Condition": {"StringEquals": {"s3:signatureversion": "AWS"}}})
doc = json.dumps({"Version": "2012-10-17", "Statement": stmts})
assert len(stmts) == 20
if on != "none":
    b.put_bucket_policy(Bucket="benchpol", Policy=doc)
    print(f"policy on B: {len(stmts)} statements, {len(doc)} bytes")
else:
    print("control: no policy on either side")
PY
echo "machine: $(nproc) cores; $("$COFFER" version)"
source scripts/lib/compare.sh
echo
echo "### $SCENARIO size=$SIZE concurrency=$CONC (A: no policy; B: ${POLICY_ON:-the 20-statement policy})"
compare_cell "$APID" "$BPID" "$DUR" "$ROUNDS" "$WORK/cell.txt" -- \
  "$COFFER" bench "$SCENARIO" --target http://127.0.0.1:18180 --s3-target http://127.0.0.1:19100 --access-key "$AK" --secret-key "$AS" \
  --compare http://127.0.0.1:29100 --compare-access-key "$BK" --compare-secret-key "$BS" --bucket benchpol \
  --vus "$CONC" --duration "$DUR" --size "$SIZE" --rounds "$ROUNDS" --objects 100 --audit=false --metrics-url off --cleanup=false
