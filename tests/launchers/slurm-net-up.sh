#!/usr/bin/env bash
# slurm-net-up.sh [22.05|24.11]: a Slurm cluster across the emulated hosts of netns-up.sh
# (issue 31): slurmctld on ce-head (198.18.0.254), one slurmd on each of n1..n3 with
# NodeAddr its own address, each in its own network namespace with its own host name, all
# on the same ports as on real nodes. 22.05 is the machine's Slurm, 24.11 the one in the
# chroot of slurm24-up.sh (made there if missing; on-host.sh --root mounts what it needs in
# the daemons' own mount namespaces). Its own munged (own key and socket: AuthInfo) and
# slurm.conf under $STATE: the commands take SLURM_CONF=$STATE/slurm.conf and run on a host
# (on-host.sh head srun ...). Nothing under /etc changes. Needs root and netns-up.sh first;
# slurm-net-down.sh stops exactly what this started. Idempotent.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
RELEASE=${1:-22.05}
# shellcheck source=tests/launchers/slurm-net-common.sh
source "$here/slurm-net-common.sh"
[ "$(id -u)" = 0 ] || fail "must run as root (it starts slurmd and munged)"
ip netns list | grep -q '^ce-n3' || fail "the emulated hosts are not up (netns-up.sh)"

export SLURM_CONF=$STATE/slurm.conf
if [ -f "$ROOT$SLURM_CONF" ] && all_idle "${ON[@]}" 1; then
    log "already up"
    exit 0
fi
if [ -n "$ROOT" ]; then
    SUITE=trixie REPO=$(cd "$here/../.." && pwd)
    PACKAGES=("${SLURM24_PACKAGES[@]}")
    # shellcheck source=tests/launchers/chroot-common.sh
    source "$here/chroot-common.sh"
    make_chroot
else
    bash "$here/install.sh"
fi
bash "$here/slurm-net-down.sh" "$RELEASE"
mkdir -p "$ROOT$STATE"/{run,log,state,munge}
for node in "${NODES[@]}"; do mkdir -p "$ROOT$STATE/tmp/$node" "$ROOT$STATE/spool/$node"; done

on head chown munge:munge "$STATE/munge"
chmod 711 "$ROOT$STATE/munge"  # the clients reach the socket
on head runuser -u munge -- mungekey -c -k "$STATE/munge/munge.key"
on head runuser -u munge -- munged --socket="$STATE/munge/socket" \
    --key-file="$STATE/munge/munge.key" --pid-file="$STATE/munge/munged.pid" \
    --log-file="$STATE/munge/munged.log" --seed-file="$STATE/munge/seed" ||
    fail "munged did not start"
cp "$ROOT$STATE/munge/munged.pid" "$ROOT$STATE/run/munged.pid"

{
    echo "ClusterName=clusterenv-net"
    echo "SlurmctldHost=ce-head(198.18.0.254)"
    echo "SlurmctldPort=$PORT"
    echo "SlurmdPort=$((PORT + 1))"
    echo "AuthInfo=socket=$STATE/munge/socket"
    daemon_conf "$STATE" task/affinity
    echo "TaskPluginParam=Cores"  # each task bound to the cores of its step, as sites do
    echo "NodeName=DEFAULT CPUs=2 RealMemory=1000 State=UNKNOWN"
    for n in 1 2 3; do echo "NodeName=n$n NodeAddr=198.18.0.$n"; done
    echo "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP"
} >"$ROOT$SLURM_CONF"
# `ip netns exec` mounts a sysfs of the namespace, without the machine's cgroup mounts that
# slurmd's autodetection looks for; the tasks are tracked without cgroups anyway.
echo "CgroupPlugin=cgroup/v1" >"$ROOT$STATE/cgroup.conf"

on head slurmctld -f "$SLURM_CONF" || fail "slurmctld did not start"
for n in 1 2 3; do
    on "$n" slurmd -f "$SLURM_CONF" -N "n$n" || fail "slurmd on n$n did not start"
done
for _ in $(seq 150); do
    all_idle "${ON[@]}" 1 && { log "up: Slurm $RELEASE on ${NODES[*]}, idle"; exit 0; }
    sleep 0.2
done
fail "nodes not idle after 30 s: $(on 1 sinfo -h -N -o '%N %t' 2>&1 | tr '\n' ' ')"
