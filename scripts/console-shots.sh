#!/usr/bin/env bash
# Updates the committed screenshots of the web console (docs/console/*.png,
# shown by docs/console.md) on purpose: runs the console's browser test
# (test/console) with its screenshots written into docs/console. The test
# command (scripts/test.sh) writes them to .tools/console-shots instead, so
# a test run never changes the checkout.
#   scripts/console-shots.sh
# Needs what scripts/test.sh installs for that test: Debian's chromium and
# a Python with playwright (~/.cache/coffer-tools/browser), or
# COFFER_CHROMIUM and COFFER_PLAYWRIGHT_PYTHON set.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/coffer-tools"
export COFFER_CHROMIUM="${COFFER_CHROMIUM:-$(command -v chromium || true)}"
export COFFER_PLAYWRIGHT_PYTHON="${COFFER_PLAYWRIGHT_PYTHON:-$CACHE/browser/bin/python}"
if [ -z "$COFFER_CHROMIUM" ] || [ ! -x "$COFFER_PLAYWRIGHT_PYTHON" ]; then
  echo "need chromium and a Python with playwright: run scripts/test.sh once, or set COFFER_CHROMIUM and COFFER_PLAYWRIGHT_PYTHON" >&2
  exit 1
fi
export PYTHONDONTWRITEBYTECODE=1 COFFER_REQUIRE_CLIENTS=1
go build -o "$ROOT/.tools/coffer" ./cmd/coffer
export COFFER_BIN="$ROOT/.tools/coffer"
export COFFER_CONSOLE_SHOTS="$ROOT/docs/console"
go test -count=1 -timeout 10m -run '^TestConsoleInChromium$' ./test/console/
git status --short -- docs/console
