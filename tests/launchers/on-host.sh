#!/usr/bin/env bash
# on-host.sh [--root ROOT] N COMMAND [ARG...]: run COMMAND on emulated host nN of
# netns-up.sh (N=head: the switch, ce-head): its network namespace and /etc/hosts view, and
# its own host name in a UTS namespace of its own, as a process on a real node has.
# With --root, COMMAND runs in the chroot ROOT (Slurm 24.11's), with what chroot-common.sh
# binds into it (CLUSTERENV_BIND: the venv's Python) and the host's /etc/hosts and
# nsswitch.conf views. These mounts are made in the mount namespace `ip netns exec` gives
# the command: they never show on the machine, and they vanish with the last process that
# uses them.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ "${1:-}" = --inside ]; then  # now in the host's namespaces: NAME ROOT COMMAND...
    name=$2 ROOT=$3
    shift 3
    hostname "$name"
    [ -z "$ROOT" ] && exec "$@"
    REPO=$(cd "$here/../.." && pwd)
    # shellcheck source=tests/launchers/chroot-common.sh
    source "$here/chroot-common.sh"
    mount_chroot
    # The host's view, which asks only /etc/hosts (netns-up.sh): the chroot's own
    # nsswitch.conf would ask a name server no emulated host reaches ('try again').
    mount --bind /etc/hosts "$ROOT/etc/hosts"
    mount --bind /etc/nsswitch.conf "$ROOT/etc/nsswitch.conf"
    exec chroot "$ROOT" "$@"
fi
root=
if [ "${1:-}" = --root ]; then
    root=$2
    shift 2
fi
host=$1
shift
case "$host" in
    head) namespace=ce-sw name=ce-head ;;
    [1-3]) namespace=ce-n$host name=n$host ;;
    *) echo "on-host.sh: no host $host (1, 2, 3 or head)" >&2; exit 2 ;;
esac
exec ip netns exec "$namespace" unshare --uts bash "$here/on-host.sh" --inside "$name" "$root" "$@"
