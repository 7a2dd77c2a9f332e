#!/usr/bin/env bash
# Stop the PBS of pbs-up.sh: PBS's own stop (MoMs, server and its PostgreSQL, scheduler,
# comm), then the namespace's PID 1, with which every process and mount of it goes.
set -uo pipefail
ROOT=${CLUSTERENV_PBS_ROOT:-/var/lib/clusterenv/pbs}
STATE=/run/clusterenv-pbs
# shellcheck source=tests/launchers/pbs-common.sh
source "$(dirname "$0")/pbs-common.sh"
if pbs_alive; then
    pid=$(pbs_pid)
    nsenter -t "$pid" -m -u -n -p -- chroot "$ROOT" /usr/bin/env -i PATH=/usr/bin:/bin \
        PBS_CONF_FILE=/etc/pbs-n2.conf /etc/init.d/pbs stop >/dev/null 2>&1
    nsenter -t "$pid" -m -u -n -p -- chroot "$ROOT" /etc/init.d/pbs stop >/dev/null 2>&1
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
fi
rm -rf "$STATE"
exit 0
