#!/usr/bin/env bash
# Start a Dask scheduler and N single-threaded workers on this machine, count the triangles of
# one graph on them with `dtri count --scheduler-file`, and stop everything on exit.
#
#   cluster/local-cpu.sh [GRAPH] [WORKERS]     (defaults: examples/karate.txt, 2)
#
# Extra `dtri count` options can be passed in DTRI_ARGS, e.g. DTRI_ARGS="--json".
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
graph="${1:-$here/../examples/karate.txt}"
workers="${2:-2}"
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$here/common.sh"

cluster_start_scheduler
for (( i=0; i<workers; i++ )); do
    cluster_start "worker-$i" dask worker --scheduler-file "$scheduler_file" --nthreads 1 \
        --name "worker-$i" --local-directory "$dir"
done
cluster_wait_for_workers "$workers"

# shellcheck disable=SC2086  # DTRI_ARGS is split into options on purpose
dtri count --backend cpu --scheduler-file "$scheduler_file" ${DTRI_ARGS:-} "$graph"
