#!/usr/bin/env bash
# Stop the Grid Engine of gridengine-up.sh (by its pid files, never by name) and undo its
# mounts, newest first. The chroot stays, as a cache. --daemons-only leaves the mounts.
set -uo pipefail

ROOT=${CLUSTERENV_GRIDENGINE_ROOT:-/var/lib/clusterenv/gridengine}
# shellcheck source=tests/launchers/slurm-common.sh
source "$(dirname "$0")/slurm-common.sh"
# shellcheck source=tests/launchers/chroot-common.sh
source "$(dirname "$0")/chroot-common.sh"
# shellcheck source=tests/launchers/gridengine-common.sh
source "$(dirname "$0")/gridengine-common.sh"
stop_daemons "$ROOT$SPOOL"/execd/*/execd.pid "$ROOT$SPOOL"/qmaster/qmaster.pid
unmounted=0
[ "${1:-}" != "--daemons-only" ] && unmounted=$(unmount_chroot)
echo "gridengine-down: stopped $STOPPED daemons, undid $unmounted mounts" >&2
