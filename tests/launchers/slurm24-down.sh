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
if [ "${1:-}" != "--daemons-only" ]; then
    # Every mount under the chroot, the most recent (deepest) first.
    mapfile -t targets < <(awk -v root="$ROOT" '$2 == root || index($2, root "/") == 1 { print $2 }' /proc/self/mounts | tac)
    for target in "${targets[@]}"; do
        umount "$target" 2>/dev/null || umount -l "$target" 2>/dev/null || echo "slurm24-down: cannot unmount $target" >&2
        unmounted=$((unmounted + 1))
    done
fi
echo "slurm24-down: stopped $STOPPED daemons, undid $unmounted mounts" >&2
