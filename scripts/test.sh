#!/usr/bin/env bash
# Runs every Coffer test on a fresh machine: formatting, vet, staticcheck,
# unit tests (with the race detector), black-box end-to-end tests against
# the built binary, and short fuzz runs. Installs what it needs itself
# (tools into ./.tools and ~/.cache/coffer-tools, nothing system-wide), binds only to loopback.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
TOOLS="$ROOT/.tools/bin"
# What takes minutes to install (the clients' venvs, node modules, MinIO)
# lives in a cache outside the checkout, reused by every clone and
# reinstalled when its pinned requirements change.
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/coffer-tools"
mkdir -p "$TOOLS" "$CACHE"
export PATH="$TOOLS:$PATH"
export GOFLAGS="${GOFLAGS:-} -buildvcs=false"

START=$(date +%s)
step() { printf '\n==> %s  [%ds]\n' "$*" "$(($(date +%s) - START))"; }
# The run leaves the checkout as it found it: what it makes goes to
# ignored folders (.tools) or temporary ones; checked at the end.
GIT_STATUS_BEFORE=$(git status --porcelain 2>/dev/null || true)
# Python clients and pytest would write __pycache__ next to the scripts.
export PYTHONDONTWRITEBYTECODE=1

step "go $(go env GOVERSION)"

step "gofmt"
unformatted=$(gofmt -l cmd internal test)
if [ -n "$unformatted" ]; then
  echo "not gofmt-ed:"; echo "$unformatted"; exit 1
fi

step "go vet"
go vet ./...
go vet -tags coffer_no_cloudkms ./internal/kms/ # the build without the cloud key services (internal/kms/drivers.go)

step "staticcheck"
STATICCHECK_VERSION=v0.8.2 # release 2026.2.2
if ! staticcheck -version 2>/dev/null | grep -q "(${STATICCHECK_VERSION#v})"; then
  GOBIN="$TOOLS" go install "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION"
fi
staticcheck ./...
staticcheck -tags coffer_no_cloudkms ./internal/kms/

step "S3 clients for the compatibility suite (boto3, aws cli, s3cmd, rclone)"
# Real clients, installed here so a fresh machine passes: a Python venv in
# ~/.cache/coffer-tools/venv (reinstalled only when the pinned set changes) and rclone
# from Debian's packages. test/s3compat fails, not skips, when one is missing.
VENV="$CACHE/venv"
PY_REQS='boto3>=1.40,<2 awscli>=1.40,<2 s3cmd>=2.3,<3 requests>=2.31,<3 pytest>=8,<10 tuspy>=1.1,<2'
if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$VENV/.coffer-reqs" 2>/dev/null)" != "$PY_REQS" ] ||
   ! "$VENV/bin/python" -c 'import boto3, botocore, requests, pytest, tusclient' 2>/dev/null ||
   [ ! -x "$VENV/bin/aws" ] || [ ! -x "$VENV/bin/s3cmd" ]; then
  rm -rf "$VENV"
  if ! python3 -m venv "$VENV"; then # Debian's python3 needs python3-venv
    rm -rf "$VENV"
    SUDO=; [ "$(id -u)" -ne 0 ] && SUDO=sudo
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-venv >/dev/null ||
      { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-venv >/dev/null; }
    python3 -m venv "$VENV"
  fi
  # shellcheck disable=SC2086 # PY_REQS is a list of requirement specifiers
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check $PY_REQS
  printf '%s' "$PY_REQS" >"$VENV/.coffer-reqs"
fi
# rclone, and restic (a backup into a bucket with object lock,
# test/s3compat/restic_test.go), from Debian's packages.
for pkg in rclone restic; do
  if ! command -v "$pkg" >/dev/null; then
    SUDO=; [ "$(id -u)" -ne 0 ] && SUDO=sudo
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get install -y -qq "$pkg" >/dev/null ||
      { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq "$pkg" >/dev/null; }
  fi
done
# The README's commands, which test/readme runs as written: curl and jq;
# rsync and sqlite3 for the online backup of docs/operations.md.
README_TOOLS=""
for tool in curl jq rsync sqlite3; do command -v "$tool" >/dev/null || README_TOOLS="$README_TOOLS $tool"; done
if [ -n "$README_TOOLS" ]; then
  SUDO=; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  export DEBIAN_FRONTEND=noninteractive
  # shellcheck disable=SC2086 # a list of packages
  $SUDO apt-get install -y -qq $README_TOOLS >/dev/null ||
    { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq $README_TOOLS >/dev/null; }
fi
# tus-js-client for the tus tests (test/e2e/tus_clients_test.go) and axe-core
# for the console's accessibility check (test/console), from npm into
# ~/.cache/coffer-tools/node (reinstalled only when the pinned versions change);
# node itself comes from Debian's packages.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  SUDO=; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get install -y -qq nodejs npm >/dev/null ||
    { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq nodejs npm >/dev/null; }
fi
NODE_TOOLS="$CACHE/node"
NODE_REQS='tus-js-client@4.3.1 axe-core@4.14.1'
if [ "$(cat "$NODE_TOOLS/.coffer-reqs" 2>/dev/null)" != "$NODE_REQS" ] || [ ! -d "$NODE_TOOLS/node_modules/tus-js-client" ] ||
   [ ! -f "$NODE_TOOLS/node_modules/axe-core/axe.min.js" ]; then
  rm -rf "$NODE_TOOLS" && mkdir -p "$NODE_TOOLS"
  # shellcheck disable=SC2086 # NODE_REQS is a list of package specifiers
  (cd "$NODE_TOOLS" && npm install --silent --no-audit --no-fund $NODE_REQS >/dev/null)
  printf '%s' "$NODE_REQS" >"$NODE_TOOLS/.coffer-reqs"
fi
export COFFER_NODE_MODULES="$NODE_TOOLS/node_modules"
export PATH="$VENV/bin:$PATH"
export COFFER_PYTHON="$VENV/bin/python"
export COFFER_REQUIRE_CLIENTS=1
"$VENV/bin/aws" --version
echo "boto3 $("$VENV/bin/python" -c 'import boto3; print(boto3.__version__)'), $("$VENV/bin/s3cmd" --version), $(rclone --version | head -1), $(restic version)"

step "PostgreSQL and MinIO for the scale-out suites"
# Real servers, started by the tests themselves (internal/testbackend) on
# loopback ports in temporary folders, and stopped after. PostgreSQL comes
# from Debian's packages; MinIO is built with go install into a cache
# outside the checkout (~3 min the first time, reused by every clone).
if ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 && ! command -v postgres >/dev/null; then
  SUDO=; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get install -y -qq postgresql >/dev/null ||
    { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq postgresql >/dev/null; }
fi
# cached_go_install DIR PACKAGE@VERSION: go install into DIR, a folder of
# the cache named for the version, unless its binary is there already.
cached_go_install() {
  local pkg=${2%@*}
  if [ ! -x "$1/${pkg##*/}" ]; then
    mkdir -p "$1"
    GOBIN="$1" go install "$2"
  fi
}
MINIO_VERSION=v0.0.0-20260212201848-7aac2a2c5b7c # github.com/minio/minio@latest as of 2026-11
if [ -z "${COFFER_MINIO:-}" ]; then
  cached_go_install "$CACHE/minio-$MINIO_VERSION" "github.com/minio/minio@$MINIO_VERSION"
  export COFFER_MINIO="$CACHE/minio-$MINIO_VERSION/minio"
fi
export COFFER_REQUIRE_BACKENDS=1 # the scale-out suites fail, not skip, without them
echo "postgres: $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | tail -1); minio: $COFFER_MINIO"

step "versitygw's S3 integration suite (test/versitygw)"
# An independent S3 conformance suite (versitygw test NAME, one process per
# test), built with go install from the Go module proxy into a cache
# outside the checkout (~5 min the first time, reused by every clone).
# test/versitygw/testdata/expected.txt holds this release's results; with
# COFFER_REQUIRE_CLIENTS=1 the test fails, not skips, without it.
VERSITYGW_VERSION=v1.8.0 # test/versitygw's Version
if [ -z "${COFFER_VERSITYGW:-}" ]; then
  cached_go_install "$CACHE/versitygw-$VERSITYGW_VERSION" "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION"
  export COFFER_VERSITYGW="$CACHE/versitygw-$VERSITYGW_VERSION/versitygw"
fi
echo "versitygw $VERSITYGW_VERSION: $COFFER_VERSITYGW"

step "checkers of the deployment files (test/deploy)"
# promtool checks deploy/prometheus/alerts.yaml and the dashboard's
# queries (Debian's prometheus package, without starting its server: no
# recommends, and no init system here to start it); helm lints and renders
# deploy/helm/coffer (built with go install from the Go module proxy into
# the cache, ~4 min the first time); systemd-analyze verifies the unit.
# With COFFER_REQUIRE_CLIENTS=1 test/deploy fails, not skips, without them.
DEPLOY_PKGS=""
command -v promtool >/dev/null || DEPLOY_PKGS="$DEPLOY_PKGS prometheus"
command -v systemd-analyze >/dev/null || DEPLOY_PKGS="$DEPLOY_PKGS systemd"
if [ -n "$DEPLOY_PKGS" ]; then
  SUDO=; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  export DEBIAN_FRONTEND=noninteractive
  # shellcheck disable=SC2086 # a list of packages
  $SUDO apt-get install -y -qq --no-install-recommends $DEPLOY_PKGS >/dev/null ||
    { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends $DEPLOY_PKGS >/dev/null; }
fi
HELM_VERSION=v3.22.0
cached_go_install "$CACHE/helm-$HELM_VERSION" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
export COFFER_HELM="$CACHE/helm-$HELM_VERSION/helm"
echo "$(promtool --version 2>&1 | head -1); helm $("$COFFER_HELM" version --short); $(systemd-analyze --version | head -1)"

step "moto (a real AWS KMS API) for the key service tests of encryption at rest"
# moto's server from PyPI, in its own venv in ~/.cache/coffer-tools/moto (reinstalled
# only when the pinned requirement changes); internal/testbackend starts it
# on a loopback port. With COFFER_REQUIRE_BACKENDS=1 its tests fail, not
# skip, without it. (python3-venv is there: the client step made a venv.)
MOTO_VENV="$CACHE/moto"
MOTO_REQS='moto[server]>=5.1,<6'
if [ -z "${COFFER_MOTO:-}" ]; then
  if [ ! -x "$MOTO_VENV/bin/moto_server" ] || [ "$(cat "$MOTO_VENV/.coffer-reqs" 2>/dev/null)" != "$MOTO_REQS" ]; then
    rm -rf "$MOTO_VENV"
    python3 -m venv "$MOTO_VENV"
    "$MOTO_VENV/bin/python" -m pip install --quiet --disable-pip-version-check "$MOTO_REQS"
    printf '%s' "$MOTO_REQS" >"$MOTO_VENV/.coffer-reqs"
  fi
  export COFFER_MOTO="$MOTO_VENV/bin/moto_server"
fi
echo "moto $("${COFFER_MOTO%/*}/python" -c 'import moto; print(moto.__version__)' 2>/dev/null || echo '?'): $COFFER_MOTO"

step "Chromium and Playwright for the browser tests (the web console, CORS)"
# Debian's chromium (apt) driven by Playwright from PyPI, in its own venv in
# ~/.cache/coffer-tools/browser (Playwright's own browser download is not used).
# test/console and test/cors fail, not skip, without them (COFFER_REQUIRE_CLIENTS=1).
# The run saves its screenshots of the main pages into .tools/console-shots
# (ignored); scripts/console-shots.sh updates the committed docs/console.
if ! command -v chromium >/dev/null; then
  SUDO=; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get install -y -qq chromium >/dev/null ||
    { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq chromium >/dev/null; }
fi
BROWSER_VENV="$CACHE/browser"
BROWSER_REQS='playwright>=1.49,<2'
if [ ! -x "$BROWSER_VENV/bin/python" ] || [ "$(cat "$BROWSER_VENV/.coffer-reqs" 2>/dev/null)" != "$BROWSER_REQS" ] ||
   ! "$BROWSER_VENV/bin/python" -c 'import playwright' 2>/dev/null; then
  rm -rf "$BROWSER_VENV"
  python3 -m venv "$BROWSER_VENV"
  "$BROWSER_VENV/bin/python" -m pip install --quiet --disable-pip-version-check "$BROWSER_REQS"
  printf '%s' "$BROWSER_REQS" >"$BROWSER_VENV/.coffer-reqs"
fi
export COFFER_CHROMIUM; COFFER_CHROMIUM=$(command -v chromium)
export COFFER_PLAYWRIGHT_PYTHON="$BROWSER_VENV/bin/python"
export COFFER_CONSOLE_SHOTS="$ROOT/.tools/console-shots"
echo "$("$COFFER_CHROMIUM" --version 2>/dev/null), playwright $("$COFFER_PLAYWRIGHT_PYTHON" -c 'import importlib.metadata as m; print(m.version("playwright"))')"

step "build"
go build -o "$ROOT/.tools/coffer" ./cmd/coffer
export COFFER_BIN="$ROOT/.tools/coffer"

# Independent suites run side by side: most of their time is spent
# waiting (fsync, loopback round trips, servers starting), not computing,
# so two at a time nearly halves the wall time on two cores. Each one's
# output is printed whole when it ends, in order.
PAR_PIDS=(); PAR_NAMES=(); PAR_LOGS=()
par() { # name command...
  local name=$1 log; shift; log=$(mktemp)
  step "start: $name"
  ( "$@" ) >"$log" 2>&1 &
  PAR_PIDS+=($!); PAR_NAMES+=("$name"); PAR_LOGS+=("$log")
}
par_wait() {
  local failed=0 i status
  for i in "${!PAR_PIDS[@]}"; do
    if wait "${PAR_PIDS[$i]}"; then status=ok; else status=FAILED; failed=1; fi
    step "${PAR_NAMES[$i]}: $status"
    cat "${PAR_LOGS[$i]}"; rm -f "${PAR_LOGS[$i]}"
  done
  PAR_PIDS=(); PAR_NAMES=(); PAR_LOGS=()
  return "$failed"
}

# Every unit test runs once, under the race detector, except those that
# -short skips (large objects, allocation ceilings the detector would
# change): they run once without it. They are found by the Test function
# that calls testing.Short, so a new one is never left out; a call outside
# a Test function (a shared helper) fails the run until it moves into
# one (see internal/blob/blobtest's RunLarge).
short_tests() {
  local files
  files=$(grep -rl --include='*.go' 'testing\.Short()' internal | sort)
  # shellcheck disable=SC2086 # a list of files
  awk 'FNR == 1 { name = "" }
    /^[[:space:]]*\/\// { next }
    /^func / { name = ""; if (match($0, /^func Test[A-Za-z0-9_]*\(/)) name = substr($0, 6, RLENGTH - 6) }
    /testing\.Short\(\)/ {
      if (name == "") { print FILENAME ": testing.Short() outside a Test function: scripts/test.sh runs the tests -short skips by their Test function" > "/dev/stderr"; bad = 1 }
      else print name
    }
    END { exit bad }' $files | sort -u | paste -sd'|' -
}
SHORT_SKIPPED=$(short_tests)
echo "run without the race detector (skipped by -short): $SHORT_SKIPPED"
# The race detector instruments our code and the Go libraries we call, but
# not SQLite's C translated to Go (modernc.org/libc, modernc.org/sqlite/lib,
# modernc.org/memory): it keeps its own memory off the Go heap, and
# instrumenting its every load and store made the SQLite-backed packages
# 5-7x slower (internal/meta/sqlite 406 s -> 81 s). The driver
# (modernc.org/sqlite), which copies Go memory in and out, stays instrumented.
RACE_SKIP=(-gcflags='modernc.org/libc/...=-race=false' -gcflags='modernc.org/sqlite/lib=-race=false'
  -gcflags='modernc.org/memory=-race=false')
par "unit tests (race detector)" go test -race "${RACE_SKIP[@]}" -short -count=1 ./internal/...
par "unit tests that -short skips (large objects, allocation ceilings), without the race detector" \
  go test -count=1 -run "^($SHORT_SKIPPED)\$" ./internal/...
par "unit tests, build without the cloud key services" go test -count=1 -tags coffer_no_cloudkms ./internal/kms/
par "unit tests, cmd/coffer (its init advises the executable's mappings)" go test -count=1 ./cmd/coffer/
par_wait || { echo "unit tests failed"; exit 1; }

# The fuzz targets, short runs with one worker each (3 s, 6 s for the
# parsers with the widest input; their seeds run in every unit test run):
# beside the end-to-end suites, which mostly wait (loopback, fsync, servers
# starting), they take the core those leave idle instead of minutes of
# their own at the end.
# Each package's fuzzing test binary is built once (go test -c -fuzz) and
# runs each of its targets, as go test -fuzz would (the package's folder,
# the same corpus cache), without linking the binary again for each.
fuzz_pkg() { # package target:seconds...
  local pkg=$1 bin log spec target secs attempt; shift
  bin=$(mktemp); log=$(mktemp)
  if ! go test -c -fuzz . -o "$bin" "$pkg" >"$log" 2>&1; then
    echo "fuzz: building $pkg failed:"; cat "$log"; exit 1
  fi
  local cache; cache="$(go env GOCACHE)/fuzz/$(go list "$pkg")"
  for spec; do
    target=${spec%:*}; secs=${spec#*:}
    for attempt in 1 2; do
      if (cd "$pkg" && "$bin" -test.run '^$' -test.fuzz "^$target\$" -test.fuzztime "${secs}s" -test.parallel 1 \
        -test.fuzzcachedir "$cache" -test.paniconexit0) >"$log" 2>&1; then
        echo "fuzz $target ok"; continue 2
      fi
      echo "fuzz $target failed (attempt $attempt):"; tail -25 "$log"
      # A found input is saved under testdata/fuzz and fails the run at once;
      # a failure without one (a worker lost under load) is retried once.
      if [ -n "$(git status --porcelain -- "$pkg/testdata/fuzz" 2>/dev/null)" ]; then
        go test -run "^$target\$" "$pkg"; exit 1
      fi
      # Go 1.26's coordinator can report its own -fuzztime deadline as a
      # failure when a worker is mid-input as time runs out on a loaded
      # machine (golang/go#75804, fixed in Go 1.27): a bare "context deadline
      # exceeded" with no input written is the full run, not a finding.
      if grep -q '^    context deadline exceeded$' "$log" && ! grep -q 'Failing input written' "$log"; then
        echo "fuzz $target ok (ran its time; Go's coordinator reported its own deadline, golang/go#75804, no input written)"
        continue 2
      fi
    done
    exit 1
  done
  rm -f "$bin" "$log"
}
fuzz_all() {
  fuzz_pkg ./internal/httpx FuzzParseRange:6 FuzzMatchETag:3
  fuzz_pkg ./internal/httpapi FuzzRouter:6 FuzzClientDigests:3 FuzzZipName:3
  fuzz_pkg ./internal/object FuzzValidKey:3 FuzzPartDigest:3 FuzzShareKey:3 FuzzOpenUploadState:3
  fuzz_pkg ./internal/meta/metasql FuzzDecodeMetadata:3 FuzzEscapeLike:3
  fuzz_pkg ./internal/s3api/sigv4 FuzzParseAuthorization:6 FuzzChunkedReader:6 \
    FuzzUnsignedTrailerReader:6
  fuzz_pkg ./internal/s3api FuzzCompleteMultipartUploadXML:3 FuzzDeleteObjectsXML:3 \
    FuzzCreateBucketXML:3 FuzzCopySourceRange:3 FuzzVersioningXML:3 FuzzTagging:3 FuzzLifecycle:3 \
    FuzzObjectLockConfigurationXML:3 FuzzRetentionXML:3 FuzzLegalHoldXML:3 FuzzParseCORS:3 \
    FuzzBucketEncryptionXML:3 FuzzCustomerKeyHeaders:3 FuzzPostForm:3 FuzzACL:3
  fuzz_pkg ./internal/s3api/sigv2 FuzzParseV2:6
  fuzz_pkg ./internal/tlscert FuzzParse:3
  fuzz_pkg ./internal/config FuzzParseRate:3 FuzzParseDuration:3
  fuzz_pkg ./internal/crypt FuzzParseEnvelope:6 FuzzDecrypt:6 FuzzUnsealMatchesSio:6
  fuzz_pkg ./internal/kms FuzzParseKeyring:3 FuzzUnwrap:3
  fuzz_pkg ./internal/tus FuzzParseChecksum:3
  fuzz_pkg ./internal/meta/postgres FuzzParseChange:3
  fuzz_pkg ./internal/blob/cacheblob FuzzParseName:3
  fuzz_pkg ./internal/auth FuzzCheckShareGrant:3 FuzzAccessClaims:3 FuzzDefaultBucketNames:3 \
    FuzzSimpleScope:3 FuzzParseAppToken:3
  fuzz_pkg ./internal/integrity FuzzParseChecksumType:3 FuzzCombine:3 FuzzParseAlgorithm:3
  fuzz_pkg ./internal/s3api/postpolicy FuzzParse:6
  fuzz_pkg ./internal/gateway FuzzParseGateway:3
  fuzz_pkg ./internal/console FuzzAccepts:3
  fuzz_pkg ./internal/meta FuzzParseCursor:3
  fuzz_pkg ./internal/exemap FuzzParseMaps:3
  fuzz_pkg ./test/readme FuzzParse:3
  fuzz_pkg ./internal/policy FuzzParse:6
  fuzz_pkg ./internal/cli FuzzParseExpiry:3 FuzzParseAt:3
  fuzz_pkg ./internal/backup FuzzLoadManifest:3
}

# test_shards N PACKAGE: N -run patterns that split the package's top-level
# tests (and examples and fuzz seeds, as go test -list names them) between
# N processes, round robin: each runs once, and test/e2e's suites, the
# longest (273 s embedded, 501 s on the scale-out shape in one process),
# run as N side by side. Each process starts its own servers.
test_shards() {
  local names
  names=$(go test -list '.*' "$2" | grep -E '^(Test|Example|Fuzz)[A-Za-z0-9_]*$') || return 1
  [ -n "$names" ] || { echo "test_shards: no tests in $2" >&2; return 1; }
  awk -v n="$1" '{ i = (NR - 1) % n; g[i] = g[i] (g[i] == "" ? "" : "|") $0 }
    END { for (i = 0; i < n; i++) if (g[i] != "") print "^(" g[i] ")$" }' <<<"$names"
}
E2E_SHARDS=${COFFER_E2E_SHARDS:-2}
mapfile -t E2E_RUNS < <(test_shards "$E2E_SHARDS" ./test/e2e/)
[ "${#E2E_RUNS[@]}" -gt 0 ] || { echo "no shards of test/e2e"; exit 1; }
mapfile -t TEST_PKGS < <(go list ./test/... | grep -v '/test/e2e$')
par "end-to-end tests against the binary (scale-out cluster, faults, real clients, the console in Chromium, overload)" \
  go test -count=1 -timeout 20m "${TEST_PKGS[@]}"
for i in "${!E2E_RUNS[@]}"; do
  par "end-to-end suite test/e2e, embedded shape (shard $((i + 1))/${#E2E_RUNS[@]})" \
    go test -count=1 -timeout 20m -run "${E2E_RUNS[$i]}" ./test/e2e/
  par "end-to-end suite test/e2e, scale-out shape: PostgreSQL + MinIO (shard $((i + 1))/${#E2E_RUNS[@]})" \
    env COFFER_E2E_BACKEND=scaleout go test -count=1 -timeout 20m -run "${E2E_RUNS[$i]}" ./test/e2e/
done
par "versitygw's suite again on the scale-out shape (PostgreSQL + MinIO)" \
  env COFFER_E2E_BACKEND=scaleout go test -count=1 -timeout 20m ./test/versitygw/
par "fuzz (short runs, one worker each)" fuzz_all
par_wait || { echo "end-to-end tests or fuzzing failed"; exit 1; }

step "the checkout is as the run found it"
if [ "$(git status --porcelain 2>/dev/null || true)" != "$GIT_STATUS_BEFORE" ]; then
  echo "the test run changed or left files in the checkout:"
  diff <(echo "$GIT_STATUS_BEFORE") <(git status --porcelain) || true
  exit 1
fi

step "all tests passed in $(( $(date +%s) - START ))s"
