#!/usr/bin/env bash
# ListObjects pages of 1,000 (docs/PERFORMANCE.md, "Issue 23: listing and
# soak"): BenchmarkListPages of two trees, A (e.g. main) and B (this
# checkout), alternating rounds on the same stores: a SQLite file and a
# PostgreSQL database filled once with KEYS objects (the first run fills
# them: about a minute each at 1 M). Loopback only.
#   scripts/bench-list.sh A-TREE [keys] [pages] [rounds]
#   PGURL=postgres://postgres@127.0.0.1:15499/list?sslmode=disable DB=/work/tmp/list1m.db \
#     scripts/bench-list.sh /work/tmp/main-tree 1000000 200 2
# PGURL names a database of a PostgreSQL server you run (empty: SQLite only).
set -euo pipefail
cd "$(dirname "$0")/.."
A=$1
KEYS=${2:-1000000}
PAGES=${3:-200}
ROUNDS=${4:-2}
DB=${DB:-/tmp/coffer-list-$KEYS.db}
OUTD=$(mktemp -d "${TMPDIR:-/tmp}/bench-list.XXXXXX")
for side in A B; do
  tree=$([ $side = A ] && echo "$A" || pwd)
  (cd "$tree" && go test -c -o "$OUTD/sqlite-$side.test" ./internal/meta/sqlite/ && go test -c -o "$OUTD/pg-$side.test" ./internal/meta/postgres/)
done
export COFFER_LIST_BENCH_KEYS=$KEYS
for r in $(seq "$ROUNDS"); do
  for side in A B; do
    echo "round $r $side sqlite load $(cut -d' ' -f1-3 /proc/loadavg)"
    COFFER_LIST_BENCH_DB=$DB "$OUTD/sqlite-$side.test" -test.run '^$' -test.bench BenchmarkListPages -test.benchmem \
      -test.benchtime "${PAGES}x" | grep '^Benchmark'
    if [ -n "${PGURL:-}" ]; then
      echo "round $r $side postgres load $(cut -d' ' -f1-3 /proc/loadavg)"
      COFFER_LIST_BENCH_PG=$PGURL "$OUTD/pg-$side.test" -test.run '^$' -test.bench BenchmarkListPages -test.benchmem \
        -test.benchtime "${PAGES}x" | grep '^Benchmark'
    fi
  done
done
rm -rf "$OUTD"
