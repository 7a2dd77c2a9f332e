# Sourced by the bring-up and tear-down scripts of both loopback clusters (22.05 on the
# host, 24.11 in a chroot): what they share, so the two clusters differ only where the
# releases do. Paths are as the daemons see them; $ROOT prefixes them for the host.

NODES=(cn001 cn002 cn003 gpu-a1)
# What the Slurm 24.11 chroot (Debian trixie) holds: Slurm, munge, PMIx, and what this
# machine's Python (bound in, so the tasks run the suite's venv) links against.
SLURM24_PACKAGES=(slurm-wlm slurmctld slurmd slurm-client munge libpmix-dev)
SLURM24_PACKAGES+=(libffi8 libssl3t64 libsqlite3-0 libbz2-1.0 liblzma5 zlib1g libuuid1)
SLURM24_PACKAGES+=(libreadline8t64 libncursesw6 libgdbm6t64 libstdc++6 libgomp1)

log() { echo "$(basename "$0" .sh): $*" >&2; }

# Say what failed, with the tail of every daemon log in LOG_DIR, and stop.
fail() {
    log "$*"
    for f in "${LOG_DIR:-/nonexistent}"/*.log; do  # a script with no daemon sets none
        [ -f "$f" ] && { echo "--- tail of $f" >&2; tail -n 20 "$f" >&2; }
    done
    exit 1
}

# Whether every node is idle; the arguments run sinfo elsewhere (`chroot ROOT`).
all_idle() {
    local states
    states=$(timeout 5 "$@" sinfo -h -N -o '%N %t' 2>/dev/null) || return 1
    [ "$(grep -c ' idle$' <<<"$states")" = "${#NODES[@]}" ]
}

# The state directories and the fake GPUs: slurmd only binds GRES files that are
# character devices (major 195 = nvidia).
make_state() {  # ROOT STATE
    mkdir -p "$1$2"/{run,log,state,dev}
    for node in "${NODES[@]}"; do mkdir -p "$1$2/tmp/$node" "$1$2/spool/$node"; done
    for i in 0 1; do
        [ -c "$1$2/dev/nvidia$i" ] || mknod "$1$2/dev/nvidia$i" c 195 "$i"
    done
}

# The part of slurm.conf every suite cluster shares: daemons as root, state, logs and spool
# under STATE (per node: %n), tasks tracked without cgroups, no accounting. TASK_PLUGIN:
# task/none (the loopback clusters: four "CPUs" per node on a 2-core machine, nothing to
# bind) or task/affinity (the emulated hosts, two CPUs each: srun binds each task's CPUs).
daemon_conf() {  # STATE [TASK_PLUGIN]
    cat <<CONF
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
SlurmctldPidFile=$1/run/slurmctld.pid
SlurmctldLogFile=$1/log/slurmctld.log
SlurmdPidFile=$1/run/slurmd-%n.pid
SlurmdLogFile=$1/log/slurmd-%n.log
SlurmdSpoolDir=$1/spool/%n
StateSaveLocation=$1/state
TmpFS=$1/tmp/%n
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=${2:-task/none}
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
InactiveLimit=0
KillWait=2
MinJobAge=5
CONF
}

# slurm.conf on stdout: 4 nodes on 127.0.0.1 with 4 CPUs and two fake a100 GPUs each.
slurm_conf() {  # STATE CLUSTER_NAME SLURMCTLD_PORT FIRST_SLURMD_PORT [EXTRA_LINE ...]
    local state=$1 name=$2 port=$4 host
    host=$(hostname -s)
    echo "ClusterName=$name"
    echo "SlurmctldHost=$host(127.0.0.1)"
    echo "SlurmctldPort=$3"
    daemon_conf "$state"
    echo "GresTypes=gpu"
    shift 4
    for line in "$@"; do echo "$line"; done
    echo "NodeName=DEFAULT CPUs=4 RealMemory=4000 Gres=gpu:a100:2 State=UNKNOWN"
    for node in "${NODES[@]}"; do
        echo "NodeName=$node NodeAddr=127.0.0.1 NodeHostname=$host Port=$port"
        port=$((port + 1))
    done
    echo "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP"
}

# Without Flags Slurm sets every vendor's variable (CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES,
# ZE_AFFINITY_MASK, GPU_DEVICE_ORDINAL); the flags of a site that declares its vendor make
# cn003 an Intel node and gpu-a1 an AMD node, as gres.conf(5) documents for AutoDetect.
gres_conf() {  # STATE
    local file="File=$1/dev/nvidia[0-1]"
    echo "AutoDetect=off"
    echo "NodeName=cn[001-002] Name=gpu Type=a100 $file"
    echo "NodeName=cn003 Name=gpu Type=a100 $file Flags=intel_gpu_env"
    echo "NodeName=gpu-a1 Name=gpu Type=a100 $file Flags=amd_gpu_env"
}

# Stop the daemons named by pid files (never by name), checking that each pid still is
# one (a stale file may name a recycled pid); SIGKILL what is left after 5 s.
stop_daemons() {  # PIDFILE ...
    local pid pids=() running
    for pidfile in "$@"; do
        [ -f "$pidfile" ] || continue
        pid=$(cat "$pidfile")
        rm -f "$pidfile"
        case "$(cat "/proc/$pid/comm" 2>/dev/null)" in
            slurmd | slurmctld | munged | sge_qmaster | sge_execd) kill "$pid" 2>/dev/null && pids+=("$pid") ;;
        esac
    done
    for _ in $(seq 50); do
        running=0
        for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && running=1; done
        [ "$running" = 0 ] && break
        sleep 0.1
    done
    for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null; done
    STOPPED=${#pids[@]}
}
