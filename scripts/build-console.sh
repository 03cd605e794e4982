#!/usr/bin/env bash
# Rebuilds the web console (web/console) into internal/console/dist, which
# is committed and embedded in the binary: `go build` needs no Node.
# Needs node and npm; installs the pinned packages of package-lock.json.
set -euo pipefail
cd "$(dirname "$0")/../web/console"
npm ci --no-audit --no-fund --silent
node build.mjs
