#!/usr/bin/env bash
# ListObjects pages of 1,000 end to end (docs/PERFORMANCE.md, "Issue 23:
# listing and soak"): one data folder whose bucket holds KEYS objects in
# 100 folders (one uploaded through the API, the rest copies of its row
# made straight in meta.db while the server is stopped), served in turn by
# binary A and binary B (alternating rounds), each page asked PAGES times
# with curl: the file API's listing under a folder, and S3 ListObjectsV2
# under a folder, with a delimiter under it, and with a delimiter at the
# root (100 folders). End to end is curl's time_total; server side is the
# access log's duration_ms of the same requests, and the server's CPU
# (utime + stime of /proc/PID/stat) over the cell a page. Loopback only.
#   scripts/bench-list-e2e.sh A-BIN B-BIN [keys] [pages] [rounds]
# With META (the URL of an empty PostgreSQL database of a server you run,
# e.g. META=postgres://postgres@127.0.0.1:15499/liste2e?sslmode=disable),
# the metadata is there (--meta, the scale-out shape; blobs stay on disk)
# and the rows are copied with psql (PG_BIN or PATH).
set -euo pipefail
export COFFER_SIGNUP_RATE=0
cd "$(dirname "$0")/.."
A=$1 B=$2 KEYS=${3:-1000000} PAGES=${4:-200} ROUNDS=${5:-2}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/bench-list-e2e.XXXXXX")
trap 'kill $node 2>/dev/null || true; wait 2>/dev/null; rm -rf "$WORK"' EXIT
node=
PORT=18580 SPORT=18581
META=${META:-}
PSQL=${PG_BIN:+$PG_BIN/}psql
serve() { # binary
  "$1" serve --data "$WORK/data" ${META:+--meta "$META"} --listen 127.0.0.1:$PORT --s3-listen 127.0.0.1:$SPORT --log-format json --log-level info \
    --max-in-flight-per-client 0 >"$WORK/node.log" 2>&1 &
  node=$!
  for _ in $(seq 200); do curl -sf http://127.0.0.1:$PORT/readyz >/dev/null && return 0; sleep 0.1; done
  echo "the server did not start"; tail "$WORK/node.log"; exit 1
}
stop() { kill "$node"; wait "$node" 2>/dev/null || true; }
login() {
  curl -sf -H 'Content-Type: application/json' -d '{"email":"lister@example.com","password":"lister password 1"}' \
    http://127.0.0.1:$PORT/api/v1/auth/login | python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])'
}

serve "$B"
BUCKET=$(curl -sf -H 'Content-Type: application/json' -d '{"email":"lister@example.com","password":"lister password 1"}' \
  http://127.0.0.1:$PORT/api/v1/auth/signup | python3 -c 'import json,sys; print(json.load(sys.stdin)["bucket"]["name"])')
TOKEN=$(login)
head -c 100000 /dev/urandom >"$WORK/body"
curl -sf -X PUT -H "Authorization: Bearer $TOKEN" --data-binary @"$WORK/body" \
  "http://127.0.0.1:$PORT/api/v1/buckets/$BUCKET/files/d000/k0000000" >/dev/null
read -r AK SK < <(curl -sf -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d '{"name":"list"}' \
  http://127.0.0.1:$PORT/api/v1/keys | python3 -c 'import json,sys; k=json.load(sys.stdin); print(k["access_key_id"], k["secret_access_key"])')
stop
if [ -n "$META" ]; then
  # As BenchmarkListPages's fill: the per-row count trigger off for the
  # copy (a million updates of one buckets row), the counts set once.
  cols=$("$PSQL" -X -q -At "$META" -c "SELECT string_agg(column_name, ',' ORDER BY ordinal_position) FROM information_schema.columns WHERE table_name = 'objects' AND table_schema = current_schema()")
  sel=$(echo "$cols" | tr ',' '\n' | sed "s/^key\$/convert_to('d' || lpad((i \/ $((KEYS / 100)))::text, 3, '0') || '\/k' || lpad(i::text, 7, '0'), 'UTF8')/; t; s/^/t./" | paste -sd,)
  t0=$(date +%s)
  "$PSQL" -X -q -v ON_ERROR_STOP=1 "$META" <<SQL
BEGIN;
ALTER TABLE objects DISABLE TRIGGER objects_count_insert;
INSERT INTO objects ($cols) SELECT $sel FROM generate_series(1, $KEYS - 1) AS g(i) CROSS JOIN objects t
  WHERE t.bucket = '$BUCKET' AND t.key = 'd000/k0000000'::bytea ORDER BY i;
ALTER TABLE objects ENABLE TRIGGER objects_count_insert;
UPDATE buckets SET object_count = (SELECT count(*) FROM objects WHERE bucket = '$BUCKET'),
  byte_count = (SELECT sum(size) FROM objects WHERE bucket = '$BUCKET') WHERE name = '$BUCKET';
COMMIT;
VACUUM ANALYZE objects;
SQL
  echo "copied $((KEYS - 1)) rows in $(( $(date +%s) - t0 ))s"
else
python3 - "$WORK/data/meta.db" "$BUCKET" "$KEYS" <<'PY'
import sqlite3, sys, time
db, bucket, keys = sys.argv[1], sys.argv[2], int(sys.argv[3])
c = sqlite3.connect(db)
cols = [r[1] for r in c.execute("PRAGMA table_info(objects)")]
sel = ", ".join({"key": "printf('d%%03d/k%%07d', i / %d, i)" % (keys // 100)}.get(k, "t." + k) for k in cols)
t0 = time.time()
c.execute("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?) "
          f"INSERT INTO objects ({', '.join(cols)}) SELECT {sel} FROM n CROSS JOIN objects t "
          "WHERE t.bucket = ? AND t.key = 'd000/k0000000' ORDER BY i", (keys, bucket))
c.commit()
print(f"copied {keys - 1} rows in {time.time() - t0:.0f}s")
PY
fi
echo "machine: $(nproc) cores; $KEYS objects; $PAGES pages a cell; metadata: $([ -n "$META" ] && echo PostgreSQL || echo SQLite)"
FOLDER=d050/
EMPTY=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
cell() { # side name url [curl args]
  local side=$1 name=$2 url=$3; shift 3
  : >"$WORK/t"
  local c0 c1
  c0=$(awk '{print $14 + $15}' /proc/$node/stat)
  for _ in $(seq "$PAGES"); do curl -sf -o /dev/null -w '%{time_total}\n' "$@" "$url" >>"$WORK/t"; done
  c1=$(awk '{print $14 + $15}' /proc/$node/stat)
  sleep 0.5
  python3 - "$WORK/t" "$WORK/node.log" "$side" "$name" "$PAGES" "$(( (c1 - c0) * 1000 / $(getconf CLK_TCK) ))" <<'PY'
import json, sys
e2e = sorted(float(x) * 1000 for x in open(sys.argv[1]))
srv = []
for line in open(sys.argv[2]):
    try: r = json.loads(line)
    except ValueError: continue
    if r.get("route") in ("GET /api/v1/buckets/{bucket}/files", "ListObjectsV2") and r.get("status") == 200:
        srv.append(r["duration_ms"])
srv = sorted(srv[-int(sys.argv[5]):])
q = lambda v, f: v[min(len(v) - 1, int(f * len(v)))] if v else float("nan")
cpu = int(sys.argv[6]) / int(sys.argv[5])  # the server's CPU ms a page (utime + stime)
print(f"| {sys.argv[4]} | {sys.argv[3]} | {cpu:.2f} | {q(srv, .5):.1f} | {q(srv, .95):.1f} | {q(e2e, .5):.1f} | {q(e2e, .95):.1f} | {q(e2e, .99):.1f} |")
PY
}
echo "| page of 1,000 | binary | server CPU ms/page | server p50 ms | server p95 ms | end to end p50 ms | p95 ms | p99 ms |"
echo "|---|---|---:|---:|---:|---:|---:|---:|"
S3="http://127.0.0.1:$SPORT/$BUCKET" # query parameters in SigV4's order (curl signs them as written)
for r in $(seq "$ROUNDS"); do
  for side in A B; do
    bin=$([ $side = A ] && echo "$A" || echo "$B")
    serve "$bin"
    TOKEN=$(login)
    echo "round $r $side: load $(cut -d' ' -f1-3 /proc/loadavg)"
    for _ in 1 2 3; do curl -sf -o /dev/null -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PORT/api/v1/buckets/$BUCKET/files?prefix=$FOLDER&limit=1000"; done
    cell $side "file API, prefix" "http://127.0.0.1:$PORT/api/v1/buckets/$BUCKET/files?prefix=$FOLDER&limit=1000" -H "Authorization: Bearer $TOKEN"
    SIG=(--aws-sigv4 "aws:amz:us-east-1:s3" --user "$AK:$SK" -H "x-amz-content-sha256: $EMPTY")
    cell $side "S3 V2, prefix" "$S3?list-type=2&max-keys=1000&prefix=d050%2F" "${SIG[@]}"
    cell $side "S3 V2, prefix + delimiter" "$S3?delimiter=%2F&list-type=2&max-keys=1000&prefix=d050%2F" "${SIG[@]}"
    cell $side "S3 V2, delimiter at the root (100 folders)" "$S3?delimiter=%2F&list-type=2&max-keys=1000" "${SIG[@]}"
    stop
  done
done
