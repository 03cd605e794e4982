# Sourced by the bench-*.sh scripts that run `coffer bench --compare`
# against two local servers. compare_cell APID BPID DUR ROUNDS CELLFILE --
# COMMAND…: runs the bench COMMAND (a --compare run of ROUNDS rounds of
# DUR), shows its comparison table (saved in CELLFILE) and then each
# server's CPU per request (user+system from /proc, setup included: small
# against the cell), the steadiest comparison on a shared machine, and the
# load average at the start of each round.

# cpu PID: the process's user+system CPU time so far, in clock ticks.
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# ucpu PID: its user CPU time alone (the kernel's share of a write varies
# with the machine's memory and file system state more than the code's).
ucpu() { awk '{print $14}' "/proc/$1/stat"; }

compare_cell() {
  local apid=$1 bpid=$2 dur=$3 rounds=$4 cell=$5 a0 b0 ua0 ub0 ra rb
  shift 6
  a0=$(cpu "$apid"); b0=$(cpu "$bpid"); ua0=$(ucpu "$apid"); ub0=$(ucpu "$bpid")
  # Each round's start is noted with the load average then (printed
  # under the table): the machine is shared, and a round's load says how
  # far to trust it.
  rm -f "$cell.rounds"
  "$@" 2>&1 | while IFS= read -r line; do
    case $line in "bench: round "*) echo "    ${line#bench: }: load $(cut -d' ' -f1-3 /proc/loadavg)" >>"$cell.rounds" ;; esac
    printf '%s\n' "$line"
  done | sed -n '/alternating rounds/,$p' | tee "$cell" || true
  if [ -f "$cell.rounds" ]; then cat "$cell.rounds"; fi
  read -r ra rb < <(awk '/^ *requests\/s /{print $2, $3}' "$cell")
  python3 - "$(getconf CLK_TCK)" "$a0" "$(cpu "$apid")" "$b0" "$(cpu "$bpid")" "${ra:-0}" "${rb:-0}" "$dur" "$rounds" \
    "$ua0" "$(ucpu "$apid")" "$ub0" "$(ucpu "$bpid")" <<'PY'
import sys, re
t, a0, a1, b0, b1, ra, rb, dur, rounds, ua0, ua1, ub0, ub1 = sys.argv[1:]
t = float(t); secs = float(re.sub(r"[a-z]+$", "", dur)) * (60 if dur.endswith("m") else 1) * int(rounds)
def per(c0, c1, rate):
    reqs = float(rate) * secs
    return (float(c1) - float(c0)) / t / reqs * 1e6 if reqs else float("nan")
print(f"    server CPU µs/req   A {per(a0, a1, ra):.0f}   B {per(b0, b1, rb):.0f}"
      f"   (user A {per(ua0, ua1, ra):.0f}   B {per(ub0, ub1, rb):.0f})")
PY
}
