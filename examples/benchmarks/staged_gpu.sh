#!/usr/bin/env bash
# Capped (host staging, the default under --rmm-pool-size) against uncapped GPU counts of the
# same generated graph, each on fresh workers, with nvidia-smi's peak sampled alongside.
#   bash examples/benchmarks/staged_gpu.sh OUT.jsonl "rmat:24=2GiB rmat:26=8GiB" [extra dtri args]
# DTRI_COMMIT names the commit that runs where the copy of .git is not that of the tree. Each
# line in the schema of schema.py (family staged-count: seconds is the whole command).
set -uo pipefail
export BENCHMARKS_DIR; BENCHMARKS_DIR=$(cd "$(dirname "$0")" && pwd)  # schema.py
out=$1; runs=$2; shift 2
for run in $runs; do
  graph=${run%=*}; pool=${run#*=}
  for cap in "" "--rmm-pool-size $pool"; do
    nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 250 > /tmp/smi.txt &
    smi=$!
    start=$(date +%s.%N)
    line=$(timeout 500 python -m dtri count --backend gpu --generate "$graph" $cap --json "$@")
    rc=$?
    kill $smi
    end=$(date +%s.%N)
    peak=$(sort -n /tmp/smi.txt | tail -1)
    python - "$line" "$graph" "$cap" "$rc" "$peak" "$start" "$end" "$*" >> "$out" <<'PY'
import json, os, subprocess, sys
sys.path.insert(0, os.environ["BENCHMARKS_DIR"])
from schema import to_schema
line, graph, cap, rc, peak, start, end, extra = sys.argv[1:]
r = json.loads(line) if line.strip() else {}
commit = os.environ.get("DTRI_COMMIT") or subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                        text=True).stdout.strip()
device = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                        capture_output=True, text=True).stdout.split("\n")[0]
print(json.dumps(to_schema("staged-count", {
    "graph": graph, "device": device, "commit": commit or None,
    "command": f"dtri count --backend gpu --generate {graph} {cap} --json {extra}".replace("  ", " "),
    "rc": int(rc), "triangles": r.get("triangles"), "edges": r.get("edges"),
    "seconds": r.get("seconds"), "wall_seconds": round(float(end) - float(start), 2),
    "partitions": r.get("partitions"), "bins": r.get("bins"),
    "staging": r.get("plan", {}).get("staging"), "memory_budget": r.get("memory_budget"),
    "caps": r.get("caps"), "nvidia_smi_peak_mib": int(peak) if peak else None})))
PY
    tail -1 "$out"
  done
done
