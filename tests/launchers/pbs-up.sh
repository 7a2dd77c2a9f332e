#!/usr/bin/env bash
# Bring up OpenPBS (built by pbs-build.sh) for the test suite: a server, its scheduler,
# pbs_comm and PostgreSQL datastore, and two MoMs with their own host names (pbs-n1,
# pbs-n2), as PBS's own test framework runs several MoMs on one machine
# (../shared/notes/openpbs.md). PBS refuses a host name that resolves to loopback, so
# everything runs in a namespace of its own (pid, mount, net, UTS): a veth interface with
# two addresses of the suite's test range (198.18.7.1, .2), the chroot's /etc/hosts naming
# them. Nothing of it touches the host's network or /etc; pbs-down.sh ends the namespace,
# and every process and mount in it goes with it. Idempotent. Needs root.
# Environment: CLUSTERENV_PBS_ROOT (the chroot), CLUSTERENV_BIND (this Python, for the tasks).
set -euo pipefail

ROOT=${CLUSTERENV_PBS_ROOT:-/var/lib/clusterenv/pbs}
REPO=$(cd "$(dirname "$0")/../.." && pwd)
SELF=$(readlink -f "$0")
STATE=/run/clusterenv-pbs   # on the host: the namespace's PID 1
LOG_DIR=$ROOT/var/spool/pbs/server_logs
# shellcheck source=tests/launchers/slurm-common.sh
source "$(dirname "$0")/slurm-common.sh"
# shellcheck source=tests/launchers/chroot-common.sh
source "$(dirname "$0")/chroot-common.sh"
# shellcheck source=tests/launchers/pbs-common.sh
source "$(dirname "$0")/pbs-common.sh"

if [ "${1:-}" = --inside ]; then  # run by the namespace's setup (below)
    ip link set lo up
    # A veth pair of its own (no dummy module here): the hosts' addresses on one end.
    ip link add pbs0 type veth peer name pbs1
    ip addr add 198.18.7.1/24 dev pbs0
    ip addr add 198.18.7.2/24 dev pbs0
    ip link set pbs1 up
    ip link set pbs0 up
    hostname pbs-n1
    mount_chroot
    printf '%s\n' "127.0.0.1 localhost" "198.18.7.1 pbs-n1" "198.18.7.2 pbs-n2" >"$ROOT/etc/hosts"
    printf '%s\n' PBS_SERVER=pbs-n1 PBS_START_SERVER=1 PBS_START_SCHED=1 PBS_START_COMM=1 \
        PBS_START_MOM=1 PBS_EXEC=/opt/pbs PBS_HOME=/var/spool/pbs PBS_CORE_LIMIT=unlimited \
        >"$ROOT/etc/pbs.conf"
    mkdir -p "$ROOT/var/spool/pbs-n2"
    printf '%s\n' PBS_SERVER=pbs-n1 PBS_START_SERVER=0 PBS_START_SCHED=0 PBS_START_COMM=0 \
        PBS_START_MOM=1 PBS_EXEC=/opt/pbs PBS_HOME=/var/spool/pbs-n2 PBS_CORE_LIMIT=unlimited \
        PBS_MOM_SERVICE_PORT=15012 PBS_MANAGER_SERVICE_PORT=15013 >"$ROOT/etc/pbs-n2.conf"
    chmod 755 "$ROOT/root"  # the tasks' user reaches this Python under /root
    in_root bash -c 'id pbsuser >/dev/null 2>&1 || useradd -m pbsuser'
    # Both MoMs share this file system: output goes back by cp, never by rsh (pbs_rcp).
    usecp='$usecp *:/ /'
    grep -qF "$usecp" "$ROOT/var/spool/pbs/mom_priv/config" || echo "$usecp" >>"$ROOT/var/spool/pbs/mom_priv/config"
    in_root /etc/init.d/pbs start >"$ROOT.start.log" 2>&1 || fail "pbs did not start (log: $ROOT.start.log)"
    # The second MoM: its own home (made like the first's), conf and host name.
    [ -d "$ROOT/var/spool/pbs-n2/mom_priv" ] || in_root bash -c \
        'PBS_CONF_FILE=/etc/pbs-n2.conf /opt/pbs/libexec/pbs_habitat' >>"$ROOT.start.log" 2>&1
    grep -qF "$usecp" "$ROOT/var/spool/pbs-n2/mom_priv/config" || echo "$usecp" >>"$ROOT/var/spool/pbs-n2/mom_priv/config"
    unshare --uts -- bash -c "hostname pbs-n2 && chroot '$ROOT' /usr/bin/env -i PATH=/usr/bin:/bin \
        PBS_CONF_FILE=/etc/pbs-n2.conf /opt/pbs/sbin/pbs_mom" >>"$ROOT.start.log" 2>&1 ||
        fail "the second MoM did not start (log: $ROOT.start.log)"
    qmgr "create node pbs-n1" || true
    qmgr "create node pbs-n2 Mom=pbs-n2,port=15012" || true
    # No job of an earlier run may hold a MoM's CPUs (the datastore keeps them).
    ids=$(pbs qselect 2>/dev/null || true)
    [ -z "$ids" ] || pbs qdel -W force $ids || true
    qmgr "set server job_history_enable=True"
    qmgr "set server flatuid=True"
    exit 0
fi

[ "$(id -u)" = 0 ] || fail "must run as root (namespaces, chroot)"
[ -f "$ROOT/.clusterenv-pbs-23.06.06" ] || fail "no OpenPBS in $ROOT: run tests/launchers/pbs-build.sh"
if pbs_alive && nodes_free; then
    log "already up"
    exit 0
fi
bash "$(dirname "$0")/pbs-down.sh" >/dev/null 2>&1 || true
mkdir -p "$STATE"
# PID 1 of the namespace: reaps what it inherits, ends on TERM (pbs-down.sh).
setsid unshare --pid --fork --mount --net --uts --propagation private -- \
    bash -c 'trap "exit 0" TERM; while :; do sleep 3600 & wait $!; done' >/dev/null 2>&1 &
for _ in $(seq 50); do
    pid=$(pgrep -P $! -x bash || true)
    [ -n "$pid" ] && break
    sleep 0.1
done
[ -n "${pid:-}" ] || fail "the namespace did not start"
echo "$pid" >"$STATE/pid"
nsenter -t "$pid" -m -u -n -p -- env CLUSTERENV_BIND="${CLUSTERENV_BIND:-}" bash "$SELF" --inside
for _ in $(seq 60); do nodes_free && break; sleep 1; done
nodes_free || fail "the two MoMs are not free: $(pbs pbsnodes -av 2>&1 | grep -E '^pbs|state =' | tr '\n' ' ')"
log "up: pbs-n1, pbs-n2"
