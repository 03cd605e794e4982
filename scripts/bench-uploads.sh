#!/usr/bin/env bash
# Issue 23, uploads: tus and the console against a plain PUT of the same
# 1 GiB on the same server, in one run, rounds alternating (127.0.0.1 only,
# bounded by timeouts):
#   1. test/measure tus: PUT vs tus (8 MiB PATCHes) on one `coffer serve`,
#      with and without a sha256 Upload-Checksum per PATCH, then 64 MiB
#      PATCHes and one 1 GiB PATCH without; ROUNDS rounds each; server CPU
#      per MiB from /proc.
#   2. test/console/measure.py upload: curl -T vs the console (Chromium,
#      Uppy, tus) on one `coffer serve`, ROUNDS rounds; server and browser
#      CPU, and the browser's floor (one bare XHR PUT of the File).
#   scripts/bench-uploads.sh [BINARY]   (ROUNDS=3 by default, PORT of the
#   console's server 38190 by default; needs
#   COFFER_PLAYWRIGHT_PYTHON (the browser venv scripts/test.sh installs) and chromium)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
D=$(mktemp -d "${TMPDIR:-/tmp}/coffer-uploads.XXXXXX")
BIN=${1:-$D/coffer}
[ -x "$BIN" ] || go build -o "$BIN" ./cmd/coffer
go build -o "$D/measure" ./test/measure
P=
trap '[ -n "$P" ] && kill $P; rm -rf "$D"' EXIT
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
timeout 1200 "$D/measure" -bin "$BIN" -data "$D/m" -rounds "$ROUNDS" tus
timeout 1200 "$D/measure" -bin "$BIN" -data "$D/m" -rounds "$ROUNDS" -tus-checksum "" tus
timeout 1200 "$D/measure" -bin "$BIN" -data "$D/m" -rounds "$ROUNDS" -tus-checksum "" -tus-chunk $((64 << 20)) tus
# one PATCH for the whole file: what tus-js-client, tuspy and the console send by default
timeout 1200 "$D/measure" -bin "$BIN" -data "$D/m" -rounds "$ROUNDS" -tus-checksum "" -tus-chunk $((1 << 30)) tus
rm -rf "$D/m"
"$BIN" user create --admin --data "$D/c" --email admin@example.com --password 'measure password 123' >/dev/null
"$BIN" serve --data "$D/c" --listen 127.0.0.1:${PORT:-38190} --s3-listen off --log-level warn >"$D/log" 2>&1 &
P=$!
for _ in $(seq 50); do curl -sf http://127.0.0.1:${PORT:-38190}/readyz >/dev/null && break; sleep 0.2; done
mkdir -p "$D/w"
CONSOLE_URL=http://127.0.0.1:${PORT:-38190} CONSOLE_ADMIN='admin@example.com:measure password 123' CONSOLE_SERVER_PID=$P \
  CONSOLE_WORK="$D/w" UPLOAD_ROUNDS=$ROUNDS CONSOLE_CHROMIUM="${COFFER_CHROMIUM:-/usr/bin/chromium}" \
  timeout 1800 "${COFFER_PLAYWRIGHT_PYTHON:-python3}" test/console/measure.py upload
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
