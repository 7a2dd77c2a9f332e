#!/usr/bin/env bash
# slurm-net-down.sh [22.05|24.11]: stop exactly what slurm-net-up.sh started for that
# release (by pid files; both releases without an argument) and remove its state directory.
# Idempotent.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ $# = 0 ]; then
    bash "$0" 22.05
    exec bash "$0" 24.11
fi
RELEASE=$1
# shellcheck source=tests/launchers/slurm-net-common.sh
source "$here/slurm-net-common.sh"
run=$ROOT$STATE/run
stop_daemons "$run"/slurmd-*.pid "$run"/slurmctld.pid "$run"/munged.pid
case "$STATE" in  # ours alone: remove it, never anything else
    */clusterenv-slurm-net*) rm -rf "$ROOT$STATE" ;;
esac
echo "slurm-net-down: Slurm $RELEASE: stopped $STOPPED daemons" >&2
