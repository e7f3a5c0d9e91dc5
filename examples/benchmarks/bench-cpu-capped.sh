#!/usr/bin/env bash
# Out-of-core on the CPU backend (issue 5), as run for examples/benchmarks/bench-cpu-capped.jsonl
# on the project's 2-core, 24 GB machine: RMAT 18 (seed 0; 3,804,995 edges, 60.9 MB as
# oriented edges of 16 B) counted by two single-threaded Dask workers, first uncapped, then
# with a per-worker memory limit and budget of 15 MB (a quarter of the oriented edge list), so
# that the workers spill stored results to the spill directory (dtri.worker_memory records
# spilled_bytes). The triangle counts must be equal. Run from the repository root, one command
# after the other, nothing else busy. --output appends, so start from a missing file.
# Usage: bench-cpu-capped.sh OUTPUT.jsonl
set -euo pipefail
out=${1:?give the output file}
python -m dtri bench --backend cpu --peers none --repeat 2 rmat:18 --output "$out"
python -m dtri bench --backend cpu --peers none --repeat 2 rmat:18 \
  --memory-limit 15MB --memory-budget 15MB --spill-directory /tmp/dtri-spill --output "$out"
