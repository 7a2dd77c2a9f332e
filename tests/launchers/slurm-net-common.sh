# Sourced by slurm-net-up.sh and slurm-net-down.sh with RELEASE set (22.05 or 24.11): where
# that release's cluster across the emulated hosts lives. STATE is the path its daemons
# see; on the machine it is $ROOT$STATE (ROOT: the 24.11 chroot, empty for 22.05). The two
# releases use different ports, so both can run across the same hosts at once.
# shellcheck source=tests/launchers/slurm-common.sh
source "$here/slurm-common.sh"
NODES=(n1 n2 n3)
case "$RELEASE" in
    22.05) ROOT="" STATE=${CLUSTERENV_SLURM_NET_DIR:-/tmp/clusterenv-slurm-net} PORT=6817 ;;
    24.11) ROOT=${CLUSTERENV_SLURM24_ROOT:-/var/lib/clusterenv/trixie}
        STATE=/var/lib/clusterenv-slurm-net PORT=26817 ;;
    *) echo "$(basename "$0"): no release $RELEASE (22.05 or 24.11)" >&2; exit 2 ;;
esac
LOG_DIR="$ROOT$STATE/log"

ON=("$here/on-host.sh" ${ROOT:+--root "$ROOT"})
on() { "${ON[@]}" "$@"; }  # HOST COMMAND...: run it on that host
