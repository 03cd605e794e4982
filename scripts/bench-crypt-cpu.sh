#!/usr/bin/env bash
# CPU time (user + system, from getrusage) per operation of the crypt
# area's Go benchmarks: what survives a loaded machine, where wall-clock
# ns/op do not (openssl speed reports CPU time too). Each benchmark runs
# with N and 2N iterations; the difference over N is the CPU per op
# (setup cancels out); the median of three such pairs. Bounded: a few seconds per line on a quiet machine.
#   scripts/bench-crypt-cpu.sh [N]
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-400}
T=$(mktemp -d "${TMPDIR:-/tmp}/coffer-crypt-cpu.XXXXXX")
trap 'rm -rf "$T"' EXIT
go test -c -o "$T/crypt.test" ./internal/crypt
go test -c -o "$T/object.test" ./internal/object
cpu() { # test-binary benchmark iterations bytes-per-op
  python3 - "$@" <<'PY'
import resource, subprocess, sys
binary, bench, n, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
def run(k):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([binary, "-test.run", "^$", "-test.bench", "^" + bench + "$", "-test.benchtime", f"{k}x"],
                   stdout=subprocess.DEVNULL, check=True)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
diffs = sorted((run(2 * n) - run(n)) / n for _ in range(3))
per_op = diffs[1]  # the median of three
print(f"{bench:45s} {per_op * 1e6:9.1f} µs CPU/op  {per_op * 1e6 / (size / 2**20):8.1f} µs CPU/MiB")
PY
}
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
openssl speed -evp aes-256-gcm -seconds 1 -bytes 65536 2>/dev/null | tail -1 |
  awk '{printf "%-45s %9s            %8.1f µs CPU/MiB (openssl, %.2f GB/s a core)\n", "openssl aes-256-gcm 64 KiB", "", 1048576/($2*1000)*1e6, $2*1000/1e9}'
cpu "$T/crypt.test" BenchmarkAESGCMLineRate $((N * 16)) 65536
cpu "$T/crypt.test" 'BenchmarkDecrypt/1MiB/WriteTo' "$N" 1048576
cpu "$T/crypt.test" 'BenchmarkEncrypt/1MiB' "$N" 1048576
cpu "$T/crypt.test" 'BenchmarkDecryptFile/1MiB' "$N" 1048576
cpu "$T/crypt.test" 'BenchmarkDecryptFile/10MiB' $((N / 10 + 1)) 10485760
cpu "$T/object.test" 'BenchmarkEncryptedPut/1MiB/plain' "$N" 1048576
cpu "$T/object.test" 'BenchmarkEncryptedPut/1MiB/encrypted' "$N" 1048576
cpu "$T/object.test" 'BenchmarkEncryptedRead/1024KiB/cached=true' "$N" 1048576
cpu "$T/object.test" 'BenchmarkEncryptedRead/1024KiB/cached=false' "$N" 1048576
cpu "$T/object.test" 'BenchmarkEncryptedRead/4KiB/cached=true' $((N * 10)) 4096
cpu "$T/object.test" 'BenchmarkEncryptedRead/4KiB/cached=false' $((N * 10)) 4096
cpu "$T/object.test" 'BenchmarkWholeRead/1MiB/crc32c' "$N" 1048576
cpu "$T/object.test" 'BenchmarkWholeRead/1MiB/sha256' "$N" 1048576
cpu "$T/object.test" 'BenchmarkWholeRead/1MiB/off' "$N" 1048576
cpu "$T/object.test" 'BenchmarkWholeRead/16MiB/crc32c' $((N / 10 + 1)) 16777216
cpu "$T/object.test" 'BenchmarkWholeRead/16MiB/sha256' $((N / 10 + 1)) 16777216
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
