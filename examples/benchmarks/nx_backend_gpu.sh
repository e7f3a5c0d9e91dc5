#!/usr/bin/env bash
# The NetworkX backend on a GPU host that has RAPIDS (shared/gpu's `core` group) but neither
# NetworkX nor an installed dtri (the repository is on PYTHONPATH there). Stage here first:
#   pip download networkx==3.6.1 --no-deps -d .nxwheels
#   d=.nxwheels/site/dtri-0.1.0.dist-info; mkdir -p $d
#   printf "Metadata-Version: 2.1\nName: dtri\nVersion: 0.1.0\n" > $d/METADATA
#   cp .venv/lib/python3.11/site-packages/dtri-0.1.0.dist-info/entry_points.txt $d/
# then carry .nxwheels (git-ignored) with this command on the host:
#   bash examples/benchmarks/nx_backend_gpu.sh > nx-backend-rmat18-h200.jsonl
set -uo pipefail
source ~/gpu-env.sh
python -m pip install -q --no-deps --no-index --target ~/nxsite .nxwheels/networkx-*.whl
export PYTHONPATH="$HOME/nxsite:$PWD/.nxwheels/site:$PYTHONPATH"  # NetworkX, dtri's entry points
timeout 200 python examples/benchmarks/nx_backend_bench.py rmat:18 --backend gpu --nx-repeat 0
