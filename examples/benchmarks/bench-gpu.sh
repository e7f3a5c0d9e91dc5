#!/usr/bin/env bash
# The single-GPU benchmark of issue 3, as run for examples/benchmarks/bench-gpu-h200.jsonl:
# RMAT graphs (Graph500 parameters, seed 0) counted by dtri and by pylibcugraph in the same
# process on the same edge list, first already in GPU memory, then end to end from Parquet on
# local disk. Usage: bash examples/benchmarks/bench-gpu.sh OUTPUT.jsonl
set -euo pipefail
out=${1:?give the output file}
work=${TMPDIR:-/tmp}/dtri-bench
rm -rf "$work" && mkdir -p "$work"
timeout 420 python -m dtri bench --backend gpu --repeat 3 rmat:20 rmat:22 rmat:24 --output "$out"
for scale in 22 24; do
  timeout 120 python -m dtri generate "rmat:$scale" -o "$work/rmat$scale.parquet" --backend gpu
done
timeout 300 python -m dtri bench --backend gpu --repeat 3 "$work/rmat22.parquet" \
  "$work/rmat24.parquet" --output "$out"
