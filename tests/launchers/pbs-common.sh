# Sourced by pbs-up.sh and pbs-down.sh: how to reach the PBS namespace and ask it.
# Commands run as `nsenter` into the namespace's PID 1 (its pid in $STATE/pid), then chroot.
pbs_pid() { cat "$STATE/pid" 2>/dev/null; }
pbs_alive() { local pid; pid=$(pbs_pid) && [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; }
# A PBS client command inside the namespace (or, with --inside, from within it).
pbs() {
    if [ "$(hostname)" = pbs-n1 ]; then
        chroot "$ROOT" /usr/bin/env -i PATH=/opt/pbs/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"
    else
        nsenter -t "$(pbs_pid)" -m -u -n -p -- chroot "$ROOT" /usr/bin/env -i PATH=/opt/pbs/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"
    fi
}
qmgr() { pbs qmgr -c "$1"; }
nodes_free() {
    pbs_alive || return 1
    [ "$(pbs pbsnodes -a 2>/dev/null | grep -c '^ *state = free')" = 2 ]
}
