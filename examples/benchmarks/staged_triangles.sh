#!/usr/bin/env bash
# Per-vertex triangles of a generated graph on one GPU, uncapped and under an RMM pool (host
# staging, the default under --rmm-pool-size), each on fresh workers and written to Parquet,
# with nvidia-smi's peak sampled alongside; then the graph's count, uncapped, in the same run.
#   bash examples/benchmarks/staged_triangles.sh OUT.jsonl "rmat:26=8GiB" [extra dtri args]
# Each line (in the schema of schema.py, family staged-triangles): the command, its wall
# seconds, the per-vertex sum and whether it is 3 × the count.
set -uo pipefail
export BENCHMARKS_DIR; BENCHMARKS_DIR=$(cd "$(dirname "$0")" && pwd)  # schema.py
out=$1; runs=$2; shift 2
work=${TMPDIR:-/tmp}/dtri-staged-triangles
for run in $runs; do
  graph=${run%=*}; pool=${run#*=}
  count=$(timeout 500 python -m dtri count --backend gpu --generate "$graph" --json "$@" |
          python -c "import json, sys; print(json.load(sys.stdin)['triangles'])")
  for cap in "" "--rmm-pool-size $pool"; do
    rm -rf "$work" && mkdir -p "$work"
    nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 250 > /tmp/smi.txt &
    smi=$!
    start=$(date +%s.%N)
    line=$(timeout 550 python -m dtri triangles --backend gpu --generate "$graph" $cap --json \
           --top 3 -o "$work/triangles" "$@")
    rc=$?
    end=$(date +%s.%N)
    kill $smi
    peak=$(sort -n /tmp/smi.txt | tail -1)
    files=$(find "$work/triangles" -name '*.parquet' | wc -l)
    python - "$line" "$graph" "$cap" "$rc" "$peak" "$start" "$end" "$count" "$files" "$*" \
        >> "$out" <<'PY'
import json, os, subprocess, sys
sys.path.insert(0, os.environ["BENCHMARKS_DIR"])
from schema import to_schema
line, graph, cap, rc, peak, start, end, count, files, extra = sys.argv[1:]
r = json.loads(line) if line.strip() else {}
commit = os.environ.get("DTRI_COMMIT") or subprocess.run(
    ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
device = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                        capture_output=True, text=True).stdout.split("\n")[0]
print(json.dumps(to_schema("staged-triangles", {
    "graph": graph, "device": device, "commit": commit or None,
    "command": f"dtri triangles --backend gpu --generate {graph} {cap} --json --top 3 -o DIR "
               f"{extra}".replace("  ", " "),
    "rc": int(rc), "count_uncapped": int(count) if count else None,
    "vertex_sum": r.get("vertex_sum"),
    "vertex_sum_is_3x_count": bool(count) and r.get("vertex_sum") == 3 * int(count),
    "vertices": r.get("vertices"), "edges": r.get("edges"), "top": r.get("top"),
    "parquet_files": int(files), "seconds": r.get("seconds"),
    "wall_seconds": round(float(end) - float(start), 2),
    "nvidia_smi_peak_mib": int(peak) if peak else None})))
PY
    tail -1 "$out"
  done
done
