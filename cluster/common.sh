# shellcheck shell=bash
# Shared by cluster/local-cpu.sh and cluster/local-gpu.sh (sourced, not run): start a Dask
# scheduler and worker processes in the background on this machine, wait for them, and stop
# them (only the processes started here) when the sourcing script exits.
#
#   source "$here/common.sh"
#   cluster_start_scheduler                       # sets $scheduler_file
#   cluster_start NAME COMMAND [ARGS...]          # a background process, logged to $dir/NAME.log
#   cluster_wait_for_workers N                    # until N workers have joined the scheduler
#
# $dir is a temporary directory for the scheduler file and the logs, removed on exit.

dir="$(mktemp -d "${TMPDIR:-/tmp}/dtri-cluster.XXXXXX")"
scheduler_file="$dir/scheduler.json"
pids=()

cluster_stop() {
    # Stop the workers first, then the scheduler (the reverse of the start order).
    for (( i=${#pids[@]}-1; i>=0; i-- )); do
        kill "${pids[i]}" 2>/dev/null || true
    done
    for pid in "${pids[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$dir"
}
trap cluster_stop EXIT

# cluster_start NAME COMMAND [ARGS...]: run COMMAND in the background, output to $dir/NAME.log.
cluster_start() {
    local name="$1"
    shift
    "$@" >"$dir/$name.log" 2>&1 &
    pids+=($!)
}

# cluster_start_scheduler: `dask scheduler` on free ports; returns once its file is written.
cluster_start_scheduler() {
    cluster_start scheduler dask scheduler --scheduler-file "$scheduler_file" --port 0 \
        --dashboard-address :0
    local pid="${pids[-1]}"
    for _ in $(seq 300); do
        [[ -s "$scheduler_file" ]] && return 0
        kill -0 "$pid" 2>/dev/null || { cat "$dir/scheduler.log" >&2; exit 1; }
        sleep 0.1
    done
    echo "the scheduler did not start in 30 s; its log:" >&2
    cat "$dir/scheduler.log" >&2
    exit 1
}

# cluster_wait_for_workers N: dtri waits for the first worker only; waiting for all of them
# lets the plan see the whole cluster. Fails (with the logs on stderr) when a process started
# here exits first, or after 180 s.
cluster_wait_for_workers() {
    python - "$scheduler_file" "$1" "${pids[@]}" <<'PY' || { tail -n 20 "$dir"/*.log >&2; exit 1; }
import os
import sys
import time

from distributed import Client

scheduler_file, wanted, pids = sys.argv[1], int(sys.argv[2]), [int(p) for p in sys.argv[3:]]
deadline = time.monotonic() + 180
with Client(scheduler_file=scheduler_file, timeout="60s") as client:
    while True:
        try:
            client.wait_for_workers(wanted, timeout=1)
            break
        except TimeoutError:
            pass
        for pid in pids:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                sys.exit(f"process {pid} exited before {wanted} workers joined")
        if time.monotonic() > deadline:
            sys.exit(f"{wanted} workers did not join in 180 s")
PY
}
