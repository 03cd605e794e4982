#!/usr/bin/env bash
# Builds Coffer's release binaries: static (CGO_ENABLED=0; SQLite is
# modernc.org/sqlite, pure Go), reproducible (-trimpath, no VCS paths),
# stamped with the release version that `coffer version` and the
# coffer_build_info metric report, for linux and darwin on amd64 and arm64,
# with a SHA256SUMS file (`sha256sum -c SHA256SUMS` checks them).
#
#   scripts/release.sh v1.4.0            # into dist/v1.4.0/
#   OUT=/tmp/rel TARGETS="linux/amd64" scripts/release.sh v1.4.0
#
# The version must look like vMAJOR.MINOR.PATCH (an optional -suffix). The
# tree may have local changes only with ALLOW_DIRTY=1 (the binaries then
# say so: vcs.modified=true, since the build stamps the checkout).
set -euo pipefail
cd "$(dirname "$0")/.."

version=${1:-}
if ! [[ $version =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
  echo "usage: scripts/release.sh vMAJOR.MINOR.PATCH[-suffix]  (got: '${version}')" >&2
  exit 2
fi
if [ "${ALLOW_DIRTY:-0}" != 1 ] && git rev-parse --git-dir >/dev/null 2>&1 && [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  echo "release.sh: the tree has local changes; commit them, or set ALLOW_DIRTY=1" >&2
  exit 1
fi
out=${OUT:-dist/$version}
targets=${TARGETS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64}
mkdir -p "$out"
rm -f "$out"/coffer-* "$out/SHA256SUMS"
ldflags="-s -w -X github.com/coffer-storage/coffer/internal/buildinfo.Version=$version"
for t in $targets; do
  goos=${t%/*} goarch=${t#*/}
  bin="$out/coffer-$version-$goos-$goarch"
  echo "building $bin" >&2
  CGO_ENABLED=0 GOOS=$goos GOARCH=$goarch go build -trimpath -ldflags "$ldflags" -o "$bin" ./cmd/coffer
done
(cd "$out" && sha256sum coffer-* >SHA256SUMS)
echo "release $version: $(ls "$out" | grep -c '^coffer-') binaries and SHA256SUMS in $out" >&2
