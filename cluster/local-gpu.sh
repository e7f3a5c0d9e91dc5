#!/usr/bin/env bash
# Start a Dask scheduler and one `dask cuda worker` on this machine (it starts one worker per
# visible GPU, and respects CUDA_VISIBLE_DEVICES), count the triangles of one graph on them
# with `dtri count --backend gpu --scheduler-file`, and stop everything on exit.
#
#   cluster/local-gpu.sh [GRAPH]               (default: examples/karate.txt)
#   CUDA_VISIBLE_DEVICES=0,1 cluster/local-gpu.sh big.parquet
#
# Extra `dtri count` options can be passed in DTRI_ARGS (e.g. DTRI_ARGS="--json"), and extra
# `dask cuda worker` options in WORKER_ARGS (e.g. WORKER_ARGS="--rmm-pool-size 0.8").
# Needs dtri[cuda13] (or dtri[cuda12]): cuDF, dask-cuDF, dask-cuda and CuPy.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
graph="${1:-$here/../examples/karate.txt}"
# The number of workers `dask cuda worker` will start: one per GPU in CUDA_VISIBLE_DEVICES,
# or every GPU when it is unset.
gpus="$(python -c 'from dask_cuda.utils import get_n_gpus; print(get_n_gpus())')" || {
    echo "cannot count the GPUs: dtri[cuda13] (or dtri[cuda12]) must be installed and a GPU" \
        "visible" >&2
    exit 1
}
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$here/common.sh"

cluster_start_scheduler
# shellcheck disable=SC2086  # WORKER_ARGS is split into options on purpose
cluster_start cuda-worker dask cuda worker --scheduler-file "$scheduler_file" \
    --local-directory "$dir" ${WORKER_ARGS:-}
cluster_wait_for_workers "$gpus"

# shellcheck disable=SC2086  # DTRI_ARGS is split into options on purpose
dtri count --backend gpu --scheduler-file "$scheduler_file" ${DTRI_ARGS:-} "$graph"
