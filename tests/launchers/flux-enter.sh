#!/usr/bin/env bash
# Run a command in the Flux chroot of flux-build.sh, in private mount and UTS namespaces:
# /proc, /sys, /dev, /tmp, the repository and CLUSTERENV_BIND (this Python) are mounted for
# the command alone and vanish with it, so nothing is left to undo. The command typically
# starts a Flux test instance: `flux start --test-size=4 --test-hosts=node[0-3] CMD`, four
# brokers whose tasks Flux itself places on "node0".."node3" (../shared/notes/flux.md).
# Environment: CLUSTERENV_FLUX_ROOT (default /var/lib/clusterenv/flux), CLUSTERENV_BIND,
# CLUSTERENV_FLUX_ON_HOST=1 (a task on an emulated host: its name and /etc/hosts stay).
set -euo pipefail

ROOT=${CLUSTERENV_FLUX_ROOT:-/var/lib/clusterenv/flux}
REPO=$(cd "$(dirname "$0")/../.." && pwd)
LOG_DIR=$ROOT.logs
# shellcheck source=tests/launchers/slurm-common.sh
source "$(dirname "$0")/slurm-common.sh"
# shellcheck source=tests/launchers/chroot-common.sh
source "$(dirname "$0")/chroot-common.sh"

[ -f "$ROOT/.clusterenv-flux-0.88.0" ] || fail "no Flux in $ROOT: run tests/launchers/flux-build.sh"
if [ "${CLUSTERENV_FLUX_INSIDE:-}" != 1 ]; then
    CLUSTERENV_FLUX_INSIDE=1 exec unshare --mount --uts --propagation private -- "$0" "$@"
fi
if [ "${CLUSTERENV_FLUX_ON_HOST:-}" = 1 ]; then
    # A task of the emulated hosts' Slurm (on-host.sh): keep its host's name and hosts view.
    mount_chroot
    mount --bind /etc/hosts "$ROOT/etc/hosts"
else
    hostname flux-host  # not this machine's name: the tasks' records carry no trace of it
    mount_chroot
fi
exec chroot "$ROOT" "$@"
