#!/usr/bin/env bash
# Strong scaling of issue 4, as run for examples/benchmarks/scaling-gpu-h200x4.jsonl: the same RMAT
# graphs (seed 0) counted on 1, 2 and 4 GPUs of one host, one dask-cuda worker per GPU
# (LocalCUDACluster; --protocol auto: UCX over NVLink between several GPUs when
# distributed-ucxx is installed, which the "protocol" field records), graph already in GPU
# memory (dtri.in_memory_seconds), with each worker's share of busy time
# (dtri.worker_utilisation). Usage: [GRAPHS="rmat:24 rmat:25"] scaling-gpu.sh OUTPUT.jsonl
# [WORKERS...] (default 1 2 4)
set -euo pipefail
out=${1:?give the output file}; shift
counts=("$@"); [ ${#counts[@]} -gt 0 ] || counts=(1 2 4)
for workers in "${counts[@]}"; do
  for graph in ${GRAPHS:-rmat:24 rmat:25}; do
    timeout 280 python -m dtri bench --backend gpu --workers "$workers" --peers none \
      --repeat 2 "$graph" --output "$out"
  done
done
