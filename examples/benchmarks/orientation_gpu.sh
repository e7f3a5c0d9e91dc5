#!/usr/bin/env bash
# Issue 20's benchmark on one GPU, as run for
# examples/benchmarks/results/orientation-order-h200.jsonl: every orientation x order (and auto)
# with work counters, pylibcugraph in the same run on the same edges.
# Usage: bash examples/benchmarks/orientation_gpu.sh OUTPUT.jsonl [SHARED_DATA_DIR]
# (on the GPU host after `source ~/gpu-env.sh`; pylibcugraph's libraries on LD_LIBRARY_PATH and
# the newer nvJitLink that host-install keeps in ~/gpu-jit preloaded, see README.md).
set -euo pipefail
out=${1:?give the output file}
data=${2:-../shared/data}
LD_LIBRARY_PATH=$(find "$HOME/gpu-site" -type d -name lib64 | tr '\n' ':')${LD_LIBRARY_PATH:-}
LD_PRELOAD=$(find "$HOME/gpu-jit" -name 'libnvJitLink.so*' | head -1)
export LD_LIBRARY_PATH LD_PRELOAD
run() { timeout "$1" python examples/benchmarks/orientation_bench.py "${@:2}" | tee -a "$out"; }
run 400 rmat:22 rmat:24 "$data"/*.txt.gz --repeat 3
run 500 rmat:26 --repeat 2
run 500 rmat:26 --repeat 2 --orientations degree --orders rank --memory-budget 130GiB --peer none
