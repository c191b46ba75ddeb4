#!/bin/bash
# The decision service's CPU per decision+reward pair (docs/performance.md):
# a fresh `dpbandit serve` on SQLite, `dpbandit loadtest` with 32 clients
# for DURATION, and the serve process's utime + stime (/proc/PID/stat)
# over the run divided by the pairs. Linux only.
#
#   bench/servicecpu/run.sh SERVE-BINARY LABEL PORT DURATION [LOADTEST-BINARY [LOADTEST-FLAGS...]]
#
# LOADTEST-FLAGS are passed on to `dpbandit loadtest` (e.g. --personalizer:
# bench/personalizer-load.sh).
# Interleave revisions on one machine, repeated, e.g.
#   for i in 1 2 3; do bench/servicecpu/run.sh /tmp/dp-old old 18102 20s; bench/servicecpu/run.sh /tmp/dp-new new 18103 20s; done
set -eu
bin=$1 label=$2 port=$3 dur=$4 gen=${5:-$1}
shift $(($# < 5 ? $# : 5))
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$bin" serve --db "$dir/s.db" --addr "127.0.0.1:$port" >"$dir/serve.out" 2>&1 &
pid=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
load0=$(cut -d' ' -f1 /proc/loadavg)
t0=$(ticks)
"$gen" loadtest --url "http://127.0.0.1:$port" --concurrency 32 --duration "$dur" --quiet "$@" >"$dir/lt.out" 2>&1
t1=$(ticks)
rss=$(awk '/VmRSS/ {printf "%.0f", $2 / 1024}' "/proc/$pid/status")
load1=$(cut -d' ' -f1 /proc/loadavg)
kill -TERM "$pid"
wait "$pid" || true
pairs=$(grep -o '^[0-9]* decision+reward pairs' "$dir/lt.out" | cut -d' ' -f1)
pps=$(grep -o '[0-9]* pairs/s' "$dir/lt.out" | cut -d' ' -f1)
p99=$(grep '^decisions' "$dir/lt.out" | sed 's/.*p99 \([^ ]*\).*/\1/')
hz=$(getconf CLK_TCK)
awk -v t=$((t1 - t0)) -v hz="$hz" -v p="$pairs" -v l="$label" -v pps="$pps" -v p99="$p99" -v la="$load0/$load1" -v rss="$rss" \
	'BEGIN { printf "%s: %.1f us of CPU per pair (%.2f s over %d pairs), %s pairs/s, decisions p99 %s, %s MB resident at the end, load %s\n", l, t / hz / p * 1e6, t / hz, p, pps, p99, rss, la }'
