#!/usr/bin/env bash
# Graphlet degrees on one GPU (issue 18): R-MAT 18 all orbits and σ0-σ4, R-MAT 20 all orbits,
# in memory and under an 8 GiB RMM pool. One JSON line per run on stdout.
#   bash examples/benchmarks/graphlets_gpu.sh > examples/benchmarks/graphlets-gpu-h200.jsonl
set -euo pipefail
bench="python examples/benchmarks/graphlets_bench.py --backend gpu --no-peer"
$bench rmat:18 --repeat 3
$bench rmat:18 --repeat 3 --orbits sigma0-4
$bench rmat:20 --repeat 1
$bench rmat:20 --repeat 1 --rmm-pool-size 8GiB
