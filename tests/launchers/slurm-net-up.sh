#!/usr/bin/env bash
# A Slurm 22.05 cluster across the emulated hosts of netns-up.sh (issue 31): slurmctld on
# ce-head (198.18.0.254), one slurmd on each of n1..n3 with NodeAddr its own address, each
# in its own network namespace with its own host name, all on the same port as on real
# nodes. Its own munged (own key and socket, AuthInfo) and its own slurm.conf under
# $STATE: the commands take SLURM_CONF=$STATE/slurm.conf and run on a host (on-host.sh 1
# srun ...). Nothing under /etc changes. Needs root and netns-up.sh first; slurm-net-down.sh
# stops exactly what this started. Idempotent.
set -euo pipefail

STATE=${CLUSTERENV_SLURM_NET_DIR:-/tmp/clusterenv-slurm-net}
here=$(dirname "$0")
# shellcheck source=tests/launchers/slurm-common.sh
source "$here/slurm-common.sh"
NODES=(n1 n2 n3)
LOG_DIR="$STATE/log"
[ "$(id -u)" = 0 ] || fail "must run as root (it starts slurmd and munged)"
ip netns list | grep -q '^ce-n3' || fail "the emulated hosts are not up (netns-up.sh)"

export SLURM_CONF=$STATE/slurm.conf
if [ -f "$SLURM_CONF" ] && all_idle "$here/on-host.sh" 1; then
    log "already up"
    exit 0
fi
bash "$here/install.sh"
bash "$here/slurm-net-down.sh"
mkdir -p "$STATE"/{run,log,state,munge}
for node in "${NODES[@]}"; do mkdir -p "$STATE/tmp/$node" "$STATE/spool/$node"; done

chown munge:munge "$STATE/munge" && chmod 711 "$STATE/munge"  # clients reach the socket
runuser -u munge -- mungekey -c -k "$STATE/munge/munge.key"
runuser -u munge -- munged --socket="$STATE/munge/socket" --key-file="$STATE/munge/munge.key" \
    --pid-file="$STATE/munge/munged.pid" --log-file="$STATE/munge/munged.log" \
    --seed-file="$STATE/munge/seed" || fail "munged did not start"
cp "$STATE/munge/munged.pid" "$STATE/run/munged.pid"

{
    echo "ClusterName=clusterenv-net"
    echo "SlurmctldHost=ce-head(198.18.0.254)"
    echo "AuthInfo=socket=$STATE/munge/socket"
    daemon_conf "$STATE"
    echo "NodeName=DEFAULT CPUs=2 RealMemory=1000 State=UNKNOWN"
    for n in 1 2 3; do echo "NodeName=n$n NodeAddr=198.18.0.$n"; done
    echo "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP"
} >"$SLURM_CONF"
# `ip netns exec` mounts a sysfs of the namespace, without the machine's cgroup mounts that
# slurmd's autodetection looks for; the tasks are tracked without cgroups anyway.
echo "CgroupPlugin=cgroup/v1" >"$STATE/cgroup.conf"

"$here/on-host.sh" head slurmctld -f "$SLURM_CONF" || fail "slurmctld did not start"
for n in 1 2 3; do
    "$here/on-host.sh" "$n" slurmd -f "$SLURM_CONF" -N "n$n" || fail "slurmd on n$n did not start"
done
for _ in $(seq 150); do
    all_idle "$here/on-host.sh" 1 && { log "up: ${NODES[*]} idle"; exit 0; }
    sleep 0.2
done
fail "nodes not idle after 30 s: $("$here/on-host.sh" 1 sinfo -h -N -o '%N %t' 2>&1 | tr '\n' ' ')"
