#!/usr/bin/env bash
# Stop the Slurm 24.11 cluster of slurm24-up.sh (by its pid files, never by name) and undo
# its mounts, newest first. The chroot itself stays, as a cache for the next run; delete it
# (rm -rf, after checking `findmnt -R $ROOT` shows nothing) to rebuild from nothing.
# --daemons-only leaves the mounts (slurm24-up.sh uses that to restart the daemons).
set -uo pipefail

ROOT=${CLUSTERENV_SLURM24_ROOT:-/var/lib/clusterenv/trixie}
STATE=/var/lib/clusterenv-slurm

# shellcheck source=tests/launchers/slurm-common.sh
source "$(dirname "$0")/slurm-common.sh"
stop_daemons "$ROOT$STATE"/run/slurmd-*.pid "$ROOT$STATE"/run/slurmctld.pid "$ROOT$STATE"/run/munged.pid

unmounted=0
# shellcheck source=tests/launchers/chroot-common.sh
source "$(dirname "$0")/chroot-common.sh"
[ "${1:-}" != "--daemons-only" ] && unmounted=$(unmount_chroot)
echo "slurm24-down: stopped $STOPPED daemons, undid $unmounted mounts" >&2
