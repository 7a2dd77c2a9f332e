#!/usr/bin/env bash
# Run a command in the PBS namespace of pbs-up.sh, inside its chroot: qsub and friends see
# the server at pbs-n1, and jobs run on the MoMs pbs-n1 and pbs-n2.
set -euo pipefail
ROOT=${CLUSTERENV_PBS_ROOT:-/var/lib/clusterenv/pbs}
pid=$(cat /run/clusterenv-pbs/pid 2>/dev/null) || { echo "pbs-enter: PBS is not up (pbs-up.sh)" >&2; exit 1; }
exec nsenter -t "$pid" -m -u -n -p -- chroot "$ROOT" "$@"
