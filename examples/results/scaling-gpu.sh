#!/usr/bin/env bash
# Strong scaling of issue 4, as run for examples/results/scaling-gpu-h200x4.jsonl: the same RMAT
# graphs (seed 0) counted on 1, 2 and 4 GPUs of one host, one dask-cuda worker per GPU
# (LocalCUDACluster), graph already in GPU memory (dtri.in_memory_seconds), with each
# worker's share of busy time (dtri.worker_utilisation). Usage: scaling-gpu.sh OUTPUT.jsonl
set -euo pipefail
out=${1:?give the output file}
for workers in 1 2 4; do
  timeout 400 python -m dtri bench --backend gpu --workers "$workers" --peers none --repeat 2 \
    rmat:24 rmat:25 --output "$out"
done
