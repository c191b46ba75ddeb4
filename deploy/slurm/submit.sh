#!/bin/bash
# Submits the shards as a job array and the merge as a job that starts
# only when every task of the array has succeeded.
#
#   RESULTS=/shared/dpbandit/fig4-right ./submit.sh
set -euo pipefail
cd "$(dirname "$0")"
: "${RESULTS:?set RESULTS to a directory on a shared file system}"
export RESULTS
array=$(sbatch --parsable --export=ALL shards.sbatch)
sbatch --dependency=afterok:"$array" --export=ALL merge.sbatch
