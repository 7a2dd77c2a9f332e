#!/usr/bin/env bash
# Bring up a real Slurm cluster on this one machine, for the test suite.
#
# munged + slurmctld + one slurmd per emulated node (cn001 cn002 cn003 gpu-a1, all on
# 127.0.0.1), each node with 4 CPUs and two fake typed GPUs (gpu:a100:2) backed by
# character device nodes. Idempotent: if our cluster is already up, it only checks it.
# Needs root. Installs slurm-wlm, slurm-client, munge and PMIx when missing (install.sh).
# Writes /etc/slurm/slurm.conf and gres.conf after taking a snapshot of /etc/slurm as it was
# (its absence included); tests/launchers/slurm-down.sh stops exactly what this started and
# restores /etc/slurm from the snapshot, byte for byte.
set -euo pipefail

STATE=${CLUSTERENV_SLURM_DIR:-/tmp/clusterenv-slurm}
CONF_DIR=/etc/slurm
MARK="# written by clusterenv tests/launchers/slurm-up.sh"
# shellcheck source=tests/launchers/slurm-common.sh
source "$(dirname "$0")/slurm-common.sh"

LOG_DIR="$STATE/log"
[ "$(id -u)" = 0 ] || fail "must run as root (it starts slurmd and munged)"

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

if grep -qF "$MARK" "$CONF_DIR/slurm.conf" 2>/dev/null && alive "$STATE/run/slurmctld.pid" && all_idle; then
    log "already up"
    exit 0
fi

# The snapshot comes first, before the packages may create /etc/slurm, and only once: a
# half-started cluster of ours has already replaced the files.
mkdir -p "$STATE"
if [ ! -e "$STATE/etc-slurm.tar" ] && [ ! -e "$STATE/etc-slurm.absent" ]; then
    if [ -e "$CONF_DIR" ]; then
        tar -C /etc -cpf "$STATE/etc-slurm.tar" slurm
    else
        touch "$STATE/etc-slurm.absent"
    fi
fi

bash "$(dirname "$0")/install.sh"

# A half-started cluster of ours from an earlier run: stop it before starting afresh.
[ -d "$STATE/run" ] && bash "$(dirname "$0")/slurm-down.sh" --keep-config

make_state "" "$STATE"
mkdir -p "$CONF_DIR"
{ echo "$MARK"; slurm_conf "$STATE" clusterenv 16817 17001; } >"$CONF_DIR/slurm.conf"
{ echo "$MARK"; gres_conf "$STATE"; } >"$CONF_DIR/gres.conf"

# munged: reuse one that answers already (it may belong to the machine), else start ours.
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    [ -f /etc/munge/munge.key ] || { mungekey -c 2>/dev/null || create-munge-key -f; }
    chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key
    mkdir -p /run/munge /var/log/munge /var/lib/munge
    chown munge:munge /run/munge /var/log/munge /var/lib/munge
    chmod o+x /run/munge
    runuser -u munge -- munged --pid-file=/run/munge/munged.pid || fail "munged did not start"
    cp /run/munge/munged.pid "$STATE/run/munged.pid"
    for _ in $(seq 50); do munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.1; done
fi

slurmctld -c || fail "slurmctld did not start"
for node in "${NODES[@]}"; do
    slurmd -N "$node" || fail "slurmd -N $node did not start"
done

for _ in $(seq 150); do
    all_idle && { log "up: ${NODES[*]} idle"; exit 0; }
    sleep 0.2
done
fail "nodes not idle after 30 s: $(sinfo -h -N -o '%N %t' 2>&1 | tr '\n' ' ')"
