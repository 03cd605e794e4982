# Sourced by the bench-*.sh scripts that measure against real backends on
# loopback. Needs ROOT (the checkout). bench_setup builds coffer (or takes
# $COFFER_BIN) into COFFER, makes the work folder WORK (removed at exit,
# with every process whose pid is in PIDS killed) and exports MinIO's
# credentials as the AWS ones; start_postgres / start_minio start the
# servers and wait until they answer; mkbucket creates a MinIO bucket.

bench_setup() { # work-folder-prefix
  PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
  MINIO=${COFFER_MINIO:-$(ls "${XDG_CACHE_HOME:-$HOME/.cache}"/coffer-tools/minio-*/minio 2>/dev/null | tail -1)}
  COFFER=${COFFER_BIN:-}
  if [ -z "$COFFER" ]; then
    mkdir -p "$ROOT/.tools"
    go build -o "$ROOT/.tools/coffer" ./cmd/coffer
    COFFER="$ROOT/.tools/coffer"
  fi
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
  chmod 755 "$WORK" # PostgreSQL runs as its own user below it
  PIDS=()
  trap bench_cleanup EXIT
  export AWS_ACCESS_KEY_ID=benchadmin AWS_SECRET_ACCESS_KEY=benchadmin-secret AWS_REGION=us-east-1
}

bench_cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}

start_postgres() { # port
  mkdir "$WORK/pg" && chown postgres "$WORK/pg"
  runuser -u postgres -- "$PGBIN/initdb" -D "$WORK/pg/data" -U postgres --auth=trust -E UTF8 --locale=C >/dev/null
  runuser -u postgres -- "$PGBIN/postgres" -D "$WORK/pg/data" -c listen_addresses=127.0.0.1 -c port="$1" \
    -c unix_socket_directories="$WORK/pg" -c max_connections=300 -c shared_buffers=256MB >"$WORK/pg.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 150); do
    "$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$1" && return 0
    sleep 0.2
  done
  echo "PostgreSQL did not start (see $WORK/pg.log)" >&2
  return 1
}

start_minio() { # port (its console listens on port+1)
  MINIO_ROOT_USER=benchadmin MINIO_ROOT_PASSWORD=benchadmin-secret MINIO_PROMETHEUS_AUTH_TYPE=public \
    "$MINIO" server "$WORK/minio" --address "127.0.0.1:$1" --console-address "127.0.0.1:$(($1 + 1))" >"$WORK/minio.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 150); do
    curl -sf "http://127.0.0.1:$1/minio/health/ready" >/dev/null && return 0
    sleep 0.2
  done
  echo "MinIO did not start (see $WORK/minio.log)" >&2
  return 1
}

mkbucket() { # name port: a bucket in the MinIO of start_minio (SigV4 by hand: no client needed)
  python3 - "$1" "$2" <<'PY'
import sys, hmac, hashlib, datetime, urllib.request
bucket, port = sys.argv[1], sys.argv[2]
ak, sk, region, host = "benchadmin", "benchadmin-secret", "us-east-1", f"127.0.0.1:{port}"
t = datetime.datetime.now(datetime.timezone.utc); amz = t.strftime("%Y%m%dT%H%M%SZ"); d = t.strftime("%Y%m%d")
ph = hashlib.sha256(b"").hexdigest()
creq = f"PUT\n/{bucket}\n\nhost:{host}\nx-amz-content-sha256:{ph}\nx-amz-date:{amz}\n\nhost;x-amz-content-sha256;x-amz-date\n{ph}"
scope = f"{d}/{region}/s3/aws4_request"
sts = f"AWS4-HMAC-SHA256\n{amz}\n{scope}\n{hashlib.sha256(creq.encode()).hexdigest()}"
k = ("AWS4" + sk).encode()
for m in (d, region, "s3", "aws4_request"): k = hmac.new(k, m.encode(), hashlib.sha256).digest()
sig = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
req = urllib.request.Request(f"http://{host}/{bucket}", method="PUT", headers={"x-amz-date": amz, "x-amz-content-sha256": ph,
  "Authorization": f"AWS4-HMAC-SHA256 Credential={ak}/{scope}, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature={sig}"})
urllib.request.urlopen(req).read()
PY
}
