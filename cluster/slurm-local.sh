#!/usr/bin/env bash
# A one-node SLURM on this machine, to try cluster/slurm.py on a workstation (and for the
# tests): slurmctld and slurmd with munge authentication, one partition of this node's cores.
#
#   eval "$(bash cluster/slurm-local.sh start)"   # prints `export SLURM_CONF=...`
#   python cluster/slurm.py --backend cpu --cores 2 --memory 4GiB --interface lo karate.txt
#   bash cluster/slurm-local.sh stop
#
# Needs root (it installs Debian's slurm-wlm and munge where they are missing, and starts
# munged). State, logs and the configuration live in $DTRI_SLURM_DIR (default
# /tmp/dtri-slurm). Exits 3 with one line on stderr when SLURM cannot be installed or started.
set -uo pipefail

DIR=${DTRI_SLURM_DIR:-/tmp/dtri-slurm}
CONF=$DIR/slurm.conf
NODE=$(hostname -s)

fail() { echo "slurm-local: $*" >&2; exit 3; }

install() {
    command -v slurmctld >/dev/null && command -v munged >/dev/null && return 0
    [ "$(id -u)" = 0 ] || fail "slurm-wlm and munge are not installed, and installing them needs root"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q slurm-wlm munge >"$DIR/apt.log" 2>&1 \
        || { apt-get update -q >>"$DIR/apt.log" 2>&1 \
             && apt-get install -y -q slurm-wlm munge >>"$DIR/apt.log" 2>&1; } \
        || fail "apt-get install slurm-wlm munge failed (see $DIR/apt.log)"
}

start_munge() {
    [ "$(id -u)" = 0 ] || fail "starting munged needs root"
    if [ ! -s /etc/munge/munge.key ]; then
        mkdir -p /etc/munge
        dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 status=none
    fi
    mkdir -p /run/munge /var/log/munge /var/lib/munge
    chown -R munge:munge /etc/munge /run/munge /var/log/munge /var/lib/munge 2>/dev/null
    chmod 400 /etc/munge/munge.key
    if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then  # none, or a stale one
        pkill -x munged 2>/dev/null && sleep 1
        runuser -u munge -- /usr/sbin/munged || fail "munged did not start"
        for _ in $(seq 20); do
            munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break
            sleep 0.5
        done
    fi
    munge -n 2>/dev/null | unmunge >/dev/null 2>&1 || fail "munged does not answer"
}

write_conf() {
    local cpus memory
    # the node's processors: GNU nproc reads OMP_NUM_THREADS as a cap (Dask sets it to 1)
    cpus=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)
    memory=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024 ))
    mkdir -p "$DIR/ctld" "$DIR/d"
    cat >"$CONF" <<CONFIG
ClusterName=dtri
SlurmctldHost=$NODE
SlurmUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
StateSaveLocation=$DIR/ctld
SlurmdSpoolDir=$DIR/d
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/slurmctld.log
SlurmdLogFile=$DIR/slurmd.log
NodeName=$NODE CPUs=$cpus RealMemory=$memory State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONFIG
}

start() {
    mkdir -p "$DIR"
    install
    start_munge
    write_conf
    export SLURM_CONF=$CONF
    slurmctld -f "$CONF" || fail "slurmctld did not start (see $DIR/slurmctld.log)"
    slurmd -f "$CONF" || fail "slurmd did not start (see $DIR/slurmd.log)"
    for _ in $(seq 60); do
        if sinfo -h -o %T 2>/dev/null | grep -qx idle; then
            echo "export SLURM_CONF=$CONF"
            return 0
        fi
        sleep 1
    done
    stop
    fail "the node did not become idle in 60 s (see $DIR/slurmctld.log, $DIR/slurmd.log)"
}

stop() {
    export SLURM_CONF=$CONF
    scancel --user="$(id -un)" 2>/dev/null
    for daemon in slurmd slurmctld; do
        [ -s "$DIR/$daemon.pid" ] && kill "$(cat "$DIR/$daemon.pid")" 2>/dev/null
    done
    for _ in $(seq 20); do
        pgrep -x slurmd >/dev/null || pgrep -x slurmctld >/dev/null || return 0
        sleep 0.5
    done
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
