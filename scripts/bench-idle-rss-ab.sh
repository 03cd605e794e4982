#!/usr/bin/env bash
# Idle RSS of several builds or settings, rounds alternating
# (docs/PERFORMANCE.md, "Issue 23, third pass: idle RSS"): each round runs
# scripts/bench-idle-rss.sh once per configuration, in order.
#   scripts/bench-idle-rss-ab.sh ROUNDS 'LABEL|BINARY|SERVER_ENV|FLAGS' ...
# e.g. 'off|/tmp/coffer|COFFER_EXEC_ADVICE=off|--idle-trim 0' 'on|/tmp/coffer||'
# PORT as in bench-idle-rss.sh. FRESH_ONLY=1: only the 5-s-after-start line
# (no burst), a few seconds a configuration, with the time until /readyz
# answered (polled every 10 ms) and the CPU the process used until then.
set -euo pipefail
ROUNDS=$1; shift
here=$(dirname "$0")
for r in $(seq "$ROUNDS"); do
	for spec in "$@"; do
		IFS='|' read -r label bin senv flags <<<"$spec"
		if [ -n "${FRESH_ONLY:-}" ]; then
			D=$(mktemp -d "${TMPDIR:-/tmp}/idle-rss.XXXXXX"); PORT=${PORT:-18311}
			t0=$(date +%s%N)
			# shellcheck disable=SC2086
			env COFFER_SIGNUP_RATE=0 $senv $bin serve --data $D --listen 127.0.0.1:$PORT --s3-listen 127.0.0.1:$((PORT+1)) --log-level warn $flags >$D/log 2>&1 &
			P=$!
			for _ in $(seq 1000); do curl -sf http://127.0.0.1:$PORT/readyz >/dev/null && break; sleep 0.01; done
			ready=$((($(date +%s%N) - t0) / 1000000))
			# CPU time of every thread so far (ns, /proc/PID/task/*/schedstat).
			cpu=$(cat /proc/$P/task/*/schedstat | awk '{s+=$1} END {printf "%.1f", s/1e6}')
			sleep 5
			awk -v l="$label" -v r="$r" -v la="$(cut -d' ' -f1 /proc/loadavg)" -v mf="$(awk '{print $10}' /proc/$P/stat)" -v ready="$ready" -v cpu="$cpu" '
				/^VmRSS/ {v=$2} /^RssAnon/ {a=$2} /^RssFile/ {f=$2}
				END {printf "round %s | %s | 5 s after start | VmRSS %.1f MiB | anon %.1f | file %.1f | load %s | minflt %s | ready %s ms, CPU %s ms\n", r, l, v/1024, a/1024, f/1024, la, mf, ready, cpu}' /proc/$P/status
			kill $P; wait $P 2>/dev/null || true; rm -rf "$D"
		else
			echo "round $r"
			LABEL=$label SERVER_ENV=$senv FLAGS=$flags "$here/bench-idle-rss.sh" "$bin"
		fi
	done
done
