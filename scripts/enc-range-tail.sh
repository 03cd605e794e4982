#!/usr/bin/env bash
# A 100-byte suffix range of a 1 GiB object on a `coffer serve --encryption on`:
# time, exact bytes, and what the server read (rchar from /proc/PID/io) for it.
#   scripts/enc-range-tail.sh BINARY
set -euo pipefail
BIN=$1; D=$(mktemp -d "${TMPDIR:-/tmp}/coffer-range.XXXXXX")
COFFER_SIGNUP_RATE=0 $BIN serve --data $D/data --listen 127.0.0.1:38180 --s3-listen 127.0.0.1:39100 --log-level warn --encryption on >$D/log 2>&1 &
P=$!; trap "kill $P; rm -rf $D" EXIT
for _ in $(seq 50); do curl -sf http://127.0.0.1:38180/readyz >/dev/null && break; sleep 0.2; done
B=http://127.0.0.1:38180/api/v1; J='Content-Type: application/json'
BODY='{"email":"r@example.com","password":"range password 123"}'
BUCKET=$(curl -sf -H "$J" -d "$BODY" $B/auth/signup | python3 -c 'import json,sys; print(json.load(sys.stdin)["bucket"]["name"])')
TOK=$(curl -sf -H "$J" -d "$BODY" $B/auth/login | python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')
head -c $((1<<30)) /dev/urandom > $D/big
curl -sf -X PUT -H "Authorization: Bearer $TOK" -T $D/big $B/buckets/$BUCKET/files/big.bin >/dev/null
tail -c 100 $D/big > $D/want
for i in 1 2 3 4 5; do
  r0=$(awk '/^rchar/{print $2}' /proc/$P/io)
  t=$(curl -sf -o $D/got -w '%{http_code} %{time_total}' -H "Authorization: Bearer $TOK" -H "Range: bytes=-100" $B/buckets/$BUCKET/files/big.bin)
  r1=$(awk '/^rchar/{print $2}' /proc/$P/io)
  echo "range -100: $t s, server read $((r1-r0)) bytes (rchar), exact: $(cmp -s $D/got $D/want && echo yes || echo NO)"
done
