#!/usr/bin/env bash
# on-host.sh N COMMAND [ARG...]: run COMMAND on emulated host nN of netns-up.sh (N=head: the
# switch, ce-head): its network namespace and /etc/hosts view, and its own host name in a
# UTS namespace of its own, as a process on a real node has.
set -euo pipefail
host=$1
shift
case "$host" in
    head) namespace=ce-sw name=ce-head ;;
    [1-3]) namespace=ce-n$host name=n$host ;;
    *) echo "on-host.sh: no host $host (1, 2, 3 or head)" >&2; exit 2 ;;
esac
exec ip netns exec "$namespace" unshare --uts sh -c 'hostname "$0" && exec "$@"' "$name" "$@"
