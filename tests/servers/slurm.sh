#!/usr/bin/env bash
# A real one-node Slurm cluster for the tests (tests/split/slurm), on 127.0.0.1.
#
#   tests/servers/slurm.sh install     apt-get install slurm-wlm munge, as root, if missing
#   tests/servers/slurm.sh start DIR   start a cluster whose config, state and logs are in DIR;
#                                      prints SLURM_CONF=DIR/slurm.conf once the node is idle
#   tests/servers/slurm.sh stop DIR    cancel its jobs, shut it down, wait for its daemons
#
# The cluster: slurmctld + slurmd as root, one node (this host, 4 CPUs, jobs share them),
# partition `debug`, munge authentication, no accounting (so sacct knows nothing; finished
# jobs stay in `scontrol show job` for MinJobAge=3600 s). Its two ports are picked free at
# start, so clusters of runs on one machine do not collide; munged is shared by all of them
# and left running by `stop`. Every command is idempotent. On failure: exit 1 and the reason
# (with the daemons' last log lines) on stderr.
set -euo pipefail
export PATH="$PATH:/usr/sbin:/sbin"

die() {
    echo "slurm.sh: $*" >&2
    exit 1
}

have_slurm() {
    command -v sbatch >/dev/null && command -v slurmctld >/dev/null &&
        command -v slurmd >/dev/null && command -v munged >/dev/null
}

install() {
    have_slurm && return 0
    [ "$(id -u)" = 0 ] || die "Slurm is not installed and only root can install it (apt-get install slurm-wlm munge)"
    command -v apt-get >/dev/null || die "Slurm is not installed and there is no apt-get to install it with"
    local log
    log=$(mktemp)
    export DEBIAN_FRONTEND=noninteractive
    if ! apt-get install -y -q slurm-wlm munge >"$log" 2>&1; then
        # The package lists may be stale or absent (fresh containers).
        apt-get update -q >>"$log" 2>&1 || true
        apt-get install -y -q slurm-wlm munge >>"$log" 2>&1 ||
            die "apt-get install slurm-wlm munge failed: $(grep -E '^E:' "$log" | tail -n 1 || tail -n 1 "$log")"
    fi
    rm -f "$log"
    have_slurm || die "slurm-wlm installed but sbatch/slurmctld/slurmd/munged are not on PATH"
}

# munged, started once per machine and shared.
munge_up() {
    munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1
}

start_munge() {
    munge_up && return 0
    [ "$(id -u)" = 0 ] || die "munged is not running and only root can start it"
    id munge >/dev/null 2>&1 || die "no munge user (is the munge package installed?)"
    mkdir -p /etc/munge /var/run/munge /var/log/munge /var/lib/munge
    if [ ! -s /etc/munge/munge.key ]; then
        dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
    fi
    chown munge:munge /etc/munge/munge.key /var/run/munge /var/log/munge /var/lib/munge
    chmod 400 /etc/munge/munge.key
    chmod 700 /var/log/munge /var/lib/munge
    chmod 755 /var/run/munge
    # --force: a socket or pid file left by a munged that died is in the way otherwise.
    su -s /bin/sh munge -c "$(command -v munged) --force" ||
        die "munged did not start: $(tail -n 3 /var/log/munge/munged.log 2>/dev/null | tr '\n' ' ')"
    for _ in $(seq 50); do
        munge_up && return 0
        sleep 0.1
    done
    die "munged started but munge/unmunge does not work: $(tail -n 3 /var/log/munge/munged.log 2>/dev/null | tr '\n' ' ')"
}

# Two TCP ports nothing on this machine uses (listening or connected), from 20000-59999.
free_ports() {
    local used=" " sl addr rest p found=()
    while read -r sl addr rest; do
        [[ $addr == *:* ]] && used+="$((16#${addr##*:})) "
    done < <(tail -q -n +2 /proc/net/tcp /proc/net/tcp6 2>/dev/null)
    while [ "${#found[@]}" -lt 2 ]; do
        p=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
        [[ $used == *" $p "* ]] && continue
        used+="$p "
        found+=("$p")
    done
    echo "${found[@]}"
}

alive() { # pid file
    [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null
}

logs() {
    local f
    for f in "$dir/log/slurmctld.log" "$dir/log/slurmd.log"; do
        [ -f "$f" ] && { echo "--- $f" >&2; tail -n 8 "$f" >&2; }
    done
    return 0
}

write_conf() {
    local host=$1 ctld_port=$2 d_port=$3
    cat >"$dir/slurm.conf" <<EOF
# Written by tests/servers/slurm.sh: a one-node test cluster; state and logs in this directory.
ClusterName=shardsmith
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
MailProg=/bin/true
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
# Finished jobs (and array tasks) stay queryable by scontrol for an hour.
MinJobAge=3600
KillWait=5
SlurmdParameters=config_overrides
NodeName=$host NodeAddr=127.0.0.1 CPUs=4 Sockets=1 CoresPerSocket=4 ThreadsPerCore=1 RealMemory=4000 State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
EOF
}

start() {
    have_slurm || die "Slurm is not installed (tests/servers/slurm.sh install)"
    [ "$(id -u)" = 0 ] || die "the test cluster runs its daemons as root; not root"
    mkdir -p "$dir/state" "$dir/spool" "$dir/log"
    export SLURM_CONF="$dir/slurm.conf"
    start_munge
    local host
    host=$(hostname -s)
    if ! alive "$dir/slurmctld.pid"; then
        if ! alive "$dir/slurmd.pid"; then
            # shellcheck disable=SC2046
            write_conf "$host" $(free_ports)
        fi
        # -c: a clean start, no jobs or state from an earlier cluster in DIR.
        slurmctld -c -f "$SLURM_CONF" || { logs; die "slurmctld did not start"; }
    fi
    if ! alive "$dir/slurmd.pid"; then
        slurmd -f "$SLURM_CONF" -N "$host" || { logs; die "slurmd did not start"; }
    fi
    local state=""
    for _ in $(seq 120); do
        state=$(sinfo -h -N -n "$host" -o '%T' 2>/dev/null || true)
        [ "$state" = idle ] && { echo "SLURM_CONF=$SLURM_CONF"; return 0; }
        sleep 0.5
    done
    logs
    die "the node is not idle after 60 s (state: ${state:-no answer from slurmctld})"
}

stop() {
    [ -f "$dir/slurm.conf" ] || return 0
    export SLURM_CONF="$dir/slurm.conf"
    local pids=() f
    for f in "$dir/slurmctld.pid" "$dir/slurmd.pid"; do
        alive "$f" && pids+=("$(cat "$f")")
    done
    [ "${#pids[@]}" = 0 ] && return 0
    # Jobs still running (a test that failed midway) would outlive slurmd: cancel them first.
    if alive "$dir/slurmctld.pid"; then
        scancel --quiet --user="$(id -un)" 2>/dev/null || true
        for _ in $(seq 40); do
            [ -z "$(squeue -h -t running,completing -o %i 2>/dev/null)" ] && break
            sleep 0.25
        done
        scontrol shutdown >/dev/null 2>&1 || true
    fi
    local p
    for _ in $(seq 60); do
        local left=()
        for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && left+=("$p"); done
        [ "${#left[@]}" = 0 ] && return 0
        # slurmd without a controller to tell it: stop it by its pid.
        alive "$dir/slurmctld.pid" || { alive "$dir/slurmd.pid" && kill "$(cat "$dir/slurmd.pid")" 2>/dev/null; } || true
        sleep 0.5
    done
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
}

case "${1:-}" in
install) install ;;
start | stop)
    [ -n "${2:-}" ] || die "usage: $0 $1 DIR"
    [ "$1" = stop ] && [ ! -d "$2" ] && exit 0
    mkdir -p "$2"
    dir=$(cd "$2" && pwd -P)
    "$1"
    ;;
*)
    echo "usage: $0 install | start DIR | stop DIR" >&2
    exit 2
    ;;
esac
