#!/usr/bin/env bash
# Stop exactly the daemons tests/launchers/slurm-up.sh started (by their pid files, never
# by name) and restore /etc/slurm from the snapshot slurm-up.sh took, byte for byte (its
# absence included). --keep-config leaves /etc/slurm as it is (slurm-up.sh uses that to
# restart a half-started cluster).
set -uo pipefail

STATE=${CLUSTERENV_SLURM_DIR:-/tmp/clusterenv-slurm}
MARK="# written by clusterenv tests/launchers/slurm-up.sh"

# shellcheck source=tests/launchers/slurm-common.sh
source "$(dirname "$0")/slurm-common.sh"
stop_daemons "$STATE"/run/slurmd-*.pid "$STATE"/run/slurmctld.pid "$STATE"/run/munged.pid

if [ "${1:-}" != "--keep-config" ]; then
    if [ -f "$STATE/etc-slurm.tar" ]; then
        rm -rf /etc/slurm && tar -C /etc -xpf "$STATE/etc-slurm.tar" && rm -f "$STATE/etc-slurm.tar"
    elif [ -f "$STATE/etc-slurm.absent" ]; then
        rm -rf /etc/slurm && rm -f "$STATE/etc-slurm.absent"
    elif grep -qF "$MARK" /etc/slurm/slurm.conf 2>/dev/null; then
        echo "slurm-down: no snapshot of /etc/slurm; removing only the files slurm-up.sh wrote" >&2
        rm -f /etc/slurm/slurm.conf /etc/slurm/gres.conf
    fi
    case "$STATE" in  # the state directory is ours alone: remove it, never anything else
        */clusterenv-slurm*) rm -rf "$STATE" ;;
    esac
fi
echo "slurm-down: stopped $STOPPED daemons" >&2
