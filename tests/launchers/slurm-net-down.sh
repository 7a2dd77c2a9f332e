#!/usr/bin/env bash
# Stop exactly what slurm-net-up.sh started (by pid files) and remove its state directory.
# Idempotent.
set -uo pipefail
STATE=${CLUSTERENV_SLURM_NET_DIR:-/tmp/clusterenv-slurm-net}
# shellcheck source=tests/launchers/slurm-common.sh
source "$(dirname "$0")/slurm-common.sh"
stop_daemons "$STATE"/run/slurmd-*.pid "$STATE"/run/slurmctld.pid "$STATE"/run/munged.pid
case "$STATE" in  # ours alone: remove it, never anything else
    */clusterenv-slurm-net*) rm -rf "$STATE" ;;
esac
echo "slurm-net-down: stopped $STOPPED daemons" >&2
