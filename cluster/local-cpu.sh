#!/usr/bin/env bash
# Start a Dask scheduler and N single-threaded workers on this machine, count the triangles of
# one graph on them with `dtri count --scheduler-file`, and stop everything on exit.
#
#   cluster/local-cpu.sh [GRAPH] [WORKERS]     (defaults: examples/karate.txt, 2)
#
# Extra `dtri count` options can be passed in DTRI_ARGS, e.g. DTRI_ARGS="--json".
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
graph="${1:-$here/../examples/karate.txt}"
workers="${2:-2}"
dir="$(mktemp -d "${TMPDIR:-/tmp}/dtri-cluster.XXXXXX")"
pids=()

stop() {
    # Stop the workers first, then the scheduler (only the processes this script started).
    for (( i=${#pids[@]}-1; i>=0; i-- )); do
        kill "${pids[i]}" 2>/dev/null || true
    done
    for pid in "${pids[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$dir"
}
trap stop EXIT

dask scheduler --scheduler-file "$dir/scheduler.json" --port 0 --dashboard-address :0 \
    >"$dir/scheduler.log" 2>&1 &
pids+=($!)
for _ in $(seq 300); do
    [[ -s "$dir/scheduler.json" ]] && break
    kill -0 "${pids[0]}" 2>/dev/null || { cat "$dir/scheduler.log" >&2; exit 1; }
    sleep 0.1
done
[[ -s "$dir/scheduler.json" ]] || { echo "scheduler did not start" >&2; exit 1; }

for (( i=0; i<workers; i++ )); do
    dask worker --scheduler-file "$dir/scheduler.json" --nthreads 1 --name "worker-$i" \
        --local-directory "$dir" >"$dir/worker-$i.log" 2>&1 &
    pids+=($!)
done

# dtri waits for the first worker; wait for all of them so the plan sees the whole cluster.
python - "$dir/scheduler.json" "$workers" <<'PY'
import sys
from distributed import Client

with Client(scheduler_file=sys.argv[1], timeout="60s") as client:
    client.wait_for_workers(int(sys.argv[2]), timeout=120)
PY

# shellcheck disable=SC2086  # DTRI_ARGS is split into options on purpose
dtri count --scheduler-file "$dir/scheduler.json" ${DTRI_ARGS:-} "$graph"
