#!/usr/bin/env bash
# Bring up a real Slurm 24.11 (Debian trixie's slurm-wlm) in a chroot beside the host's
# 22.05 cluster (slurm-up.sh), for the test suite. The host system is untouched: every file
# of this cluster (packages, config, munge key, state, logs, fake GPUs) lives in the chroot.
#
# Same nodes as the 22.05 cluster (cn001 cn002 cn003 gpu-a1 on 127.0.0.1, 4 CPUs and two
# fake gpu:a100 each), on other ports, so both run at once. The tasks see the repository,
# this machine's Python (so the suite's venv works inside) and /tmp (where the tests' work
# directories are) through read-only / read-write bind mounts.
# Idempotent: with the cluster up it only checks it. Needs root. Timings on a 2-core
# machine: debootstrap ~25 s, packages ~25 s (only the first time), daemons < 1 s.
# Environment: CLUSTERENV_SLURM24_ROOT (the chroot, default /var/lib/clusterenv/trixie),
# CLUSTERENV_BIND (extra paths to bind read-only, colon-separated: the venv's Python).
set -euo pipefail

ROOT=${CLUSTERENV_SLURM24_ROOT:-/var/lib/clusterenv/trixie}
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STATE=/var/lib/clusterenv-slurm   # inside the chroot
# shellcheck source=tests/launchers/slurm-common.sh
source "$(dirname "$0")/slurm-common.sh"
PACKAGES=("${SLURM24_PACKAGES[@]}")

SUITE=trixie
# shellcheck source=tests/launchers/chroot-common.sh
source "$(dirname "$0")/chroot-common.sh"

LOG_DIR="$ROOT$STATE/log"
[ "$(id -u)" = 0 ] || fail "must run as root (debootstrap, mount, chroot, slurmd)"

alive() { [ -f "$ROOT$1" ] && kill -0 "$(cat "$ROOT$1")" 2>/dev/null; }

if mounted /proc && alive "$STATE/run/slurmctld.pid" && all_idle chroot "$ROOT"; then
    log "already up"
    exit 0
fi

# 1. The chroot: Debian trixie with Slurm 24.11, made once and kept (a cache, like the
#    host's packages). A build that stopped half-way is finished, not restarted.
make_chroot

# 2. Mounts (undone in reverse by slurm24-down.sh). munge resolves the host name: hosts file.
cp /etc/hosts "$ROOT/etc/hosts"
mount_chroot

# 3. Configuration and daemons, all inside the chroot.
[ -d "$ROOT$STATE/run" ] && bash "$(dirname "$0")/slurm24-down.sh" --daemons-only
make_state "$ROOT" "$STATE"
mkdir -p "$ROOT/etc/slurm"
slurm_conf "$STATE" clusterenv24 26817 26818 SrunPortRange=61001-61500 MailProg=/bin/true \
    >"$ROOT/etc/slurm/slurm.conf"
gres_conf "$STATE" >"$ROOT/etc/slurm/gres.conf"

if ! in_root bash -c 'munge -n 2>/dev/null | unmunge >/dev/null 2>&1'; then
    in_root bash -c '
        [ -f /etc/munge/munge.key ] || mungekey -c
        chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key
        mkdir -p /run/munge /var/log/munge /var/lib/munge
        chown munge:munge /run/munge /var/log/munge /var/lib/munge && chmod o+x /run/munge
        runuser -u munge -- munged --pid-file=/run/munge/munged.pid' || fail "munged did not start"
    cp "$ROOT/run/munge/munged.pid" "$ROOT$STATE/run/munged.pid"
    for _ in $(seq 50); do in_root bash -c 'munge -n | unmunge' >/dev/null 2>&1 && break; sleep 0.1; done
fi
in_root slurmctld -c || fail "slurmctld did not start"
for node in "${NODES[@]}"; do
    in_root slurmd -N "$node" || fail "slurmd -N $node did not start"
done
for _ in $(seq 150); do
    all_idle chroot "$ROOT" && { log "up: ${NODES[*]} idle ($(chroot "$ROOT" sinfo --version))"; exit 0; }
    sleep 0.2
done
fail "nodes not idle after 30 s: $(chroot "$ROOT" sinfo -h -N -o '%N %t' 2>&1 | tr '\n' ' ')"
