#!/bin/bash
# The Personalizer load test (docs/personalizer.md#throughput,
# docs/performance.md): `dpbandit loadtest --personalizer` (ten articles of
# twenty features, 32 clients, SQLite, synchronous commits) against a fresh
# `dpbandit serve`, each revision given in turn, ROUNDS times, interleaved;
# each run prints the serve process's CPU per pair (utime + stime), the
# pairs per second, the p99 of the ranks, its resident memory at the end
# and the load average (bench/servicecpu/run.sh). Linux only.
#
#   bench/personalizer-load.sh DURATION ROUNDS REVISION...
#
# e.g., on a quiet machine, this branch against main:
#   bench/personalizer-load.sh 30s 3 main HEAD
# Each REVISION is built into /tmp/dp-pz-REVISION from a `git worktree` of it.
set -eu
dur=$1 rounds=$2
shift 2
root=$(git rev-parse --show-toplevel)
for rev in "$@"; do
	wt=$(mktemp -d)
	git -C "$root" worktree add --detach "$wt" "$rev" >/dev/null
	(cd "$wt" && go build -o "/tmp/dp-pz-${rev//\//_}" ./cmd/dpbandit)
	git -C "$root" worktree remove --force "$wt"
done
gen=/tmp/dp-pz-${1//\//_} # one generator for every run
port=18400
for _ in $(seq "$rounds"); do
	for rev in "$@"; do
		port=$((port + 1))
		"$root/bench/servicecpu/run.sh" "/tmp/dp-pz-${rev//\//_}" "$rev" "$port" "$dur" "$gen" --personalizer
	done
done
