#!/usr/bin/env bash
# Runs every Coffer test on a fresh machine: formatting, vet, staticcheck,
# unit tests (with the race detector), black-box end-to-end tests against
# the built binary, and short fuzz runs. Installs what it needs itself
# (tools into ./.tools, nothing system-wide), binds only to loopback.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
TOOLS="$ROOT/.tools/bin"
mkdir -p "$TOOLS"
export PATH="$TOOLS:$PATH"
export GOFLAGS="${GOFLAGS:-} -buildvcs=false"

step() { printf '\n==> %s\n' "$*"; }
START=$(date +%s)

step "go $(go env GOVERSION)"

step "gofmt"
unformatted=$(gofmt -l cmd internal test)
if [ -n "$unformatted" ]; then
  echo "not gofmt-ed:"; echo "$unformatted"; exit 1
fi

step "go vet"
go vet ./...

step "staticcheck"
STATICCHECK_VERSION=2026.2.2
if ! staticcheck -version 2>/dev/null | grep -q "$STATICCHECK_VERSION"; then
  GOBIN="$TOOLS" go install "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION"
fi
staticcheck ./...

step "build"
go build -o "$ROOT/.tools/coffer" ./cmd/coffer
export COFFER_BIN="$ROOT/.tools/coffer"

step "unit tests (race detector)"
go test -race -short -count=1 ./internal/...

step "unit tests (full, incl. large-object conformance)"
go test -count=1 ./internal/...

step "end-to-end tests against the binary"
go test -count=1 -timeout 15m ./test/...

step "fuzz (short runs)"
fuzz() { # package target seconds
  go test -run '^$' -fuzz "^$2\$" -fuzztime "${3}s" "$1" >/dev/null || { echo "fuzz $2 failed"; go test -run "^$2\$" "$1"; exit 1; }
  echo "fuzz $2 ok"
}
fuzz ./internal/httpx FuzzParseRange 10
fuzz ./internal/httpx FuzzMatchETag 5
fuzz ./internal/httpapi FuzzRouter 10
fuzz ./internal/httpapi FuzzClientDigests 5
fuzz ./internal/object FuzzValidKey 5

step "all tests passed in $(( $(date +%s) - START ))s"
