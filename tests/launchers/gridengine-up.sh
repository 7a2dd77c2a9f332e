#!/usr/bin/env bash
# Bring up a real Son of Grid Engine 8.1.9 (Debian 12's gridengine-* packages) in a chroot,
# for the test suite: a qmaster and an execd on this machine, one queue (all.q, 4 slots)
# and a parallel environment `mpi` ($fill_up). The host system is untouched: packages,
# cell, spool and logs live in the chroot; its /etc/hosts names this machine first for
# 127.0.0.1, so that the daemons and clients agree on its name.
# The tasks see the repository, this machine's Python and /tmp as for slurm24-up.sh.
# Idempotent: with Grid Engine up it only checks it; otherwise the cell is made afresh
# (no job of an earlier run survives). Needs root. ~20 s the first time, ~5 s after.
# Environment: CLUSTERENV_GRIDENGINE_ROOT (default /var/lib/clusterenv/gridengine),
# CLUSTERENV_BIND (as for slurm24-up.sh).
set -euo pipefail

ROOT=${CLUSTERENV_GRIDENGINE_ROOT:-/var/lib/clusterenv/gridengine}
REPO=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/launchers/slurm-common.sh
source "$(dirname "$0")/slurm-common.sh"
SUITE=bookworm
PACKAGES=(gridengine-master gridengine-exec gridengine-client openmpi-bin)
# What this machine's Python (bound in, so the tasks run the suite's venv) links against.
PACKAGES+=(libffi8 libssl3 libsqlite3-0 libbz2-1.0 liblzma5 zlib1g libuuid1 libreadline8)
PACKAGES+=(libncursesw6 libgdbm6 libstdc++6 libgomp1)
# Install without making a cell: this script makes its own.
PRESEED="gridengine-common shared/gridenginecell string default
gridengine-common shared/gridengineconfig boolean false"
# shellcheck source=tests/launchers/chroot-common.sh
source "$(dirname "$0")/chroot-common.sh"
# shellcheck source=tests/launchers/gridengine-common.sh
source "$(dirname "$0")/gridengine-common.sh"
LOG_DIR="$ROOT$SPOOL/qmaster"
[ "$(id -u)" = 0 ] || fail "must run as root (debootstrap, mount, chroot, sge_execd)"

if mounted /proc && queue_ready; then
    log "already up"
    exit 0
fi

make_chroot
mount_chroot
printf '127.0.0.1 %s localhost\n' "$HOST" >"$ROOT/etc/hosts"

# A fresh cell: the daemons of an earlier run stopped, their spool and state removed.
bash "$(dirname "$0")/gridengine-down.sh" --daemons-only
rm -rf "$ROOT$SGE_ROOT/default" "$ROOT$SPOOL"/{qmaster,spooldb,execd}
mkdir -p "$ROOT$SGE_ROOT/default/common" "$ROOT$SPOOL"/{qmaster/job_scripts,spooldb,execd}
cp "$ROOT/usr/share/gridengine/default-bootstrap" "$ROOT$SGE_ROOT/default/common/bootstrap"
echo "$HOST" >"$ROOT$SGE_ROOT/default/common/act_qmaster"
in_root chown -R sgeadmin:sgeadmin "$SGE_ROOT/default" "$SPOOL"
in_root su -s /bin/sh -c "/usr/share/gridengine/scripts/init_cluster $SGE_ROOT default $SPOOL/spooldb sgeadmin" sgeadmin \
    >"$ROOT$SPOOL/init_cluster.log" 2>&1 || fail "init_cluster failed: $(tail -n 5 "$ROOT$SPOOL/init_cluster.log")"
ge /usr/sbin/sge_qmaster || fail "sge_qmaster did not start"
for _ in $(seq 50); do ge qconf -sh >/dev/null 2>&1 && break; sleep 0.2; done

# Root may run jobs (min_uid 0), the scheduler runs every second, one exec host, the
# parallel environment and the queue.
conf=$ROOT/tmp/clusterenv-gridengine.$$
mkdir -p "$conf"
ge qconf -sconf | sed -e '1d' -e 's/^min_uid .*/min_uid 0/' -e 's/^min_gid .*/min_gid 0/' >"$conf/global"
ge qconf -ssconf | sed -e 's/^schedule_interval .*/schedule_interval 0:0:1/' \
    -e 's/^flush_submit_sec .*/flush_submit_sec 1/' -e 's/^flush_finish_sec .*/flush_finish_sec 1/' >"$conf/sched"
printf '%s\n' "hostname $HOST" "load_scaling NONE" "complex_values NONE" "user_lists NONE" \
    "xuser_lists NONE" "projects NONE" "xprojects NONE" "usage_scaling NONE" "report_variables NONE" >"$conf/host"
printf '%s\n' "pe_name mpi" "slots 999" "user_lists NONE" "xuser_lists NONE" "start_proc_args NONE" \
    "stop_proc_args NONE" 'allocation_rule $fill_up' "control_slaves TRUE" "job_is_first_task FALSE" \
    "urgency_slots min" "accounting_summary FALSE" "qsort_args NONE" >"$conf/pe"
queue_conf >"$conf/queue"
{
    (cd "$conf" && ge bash -c "cd /tmp/$(basename "$conf") && qconf -Mconf global") &&
        ge qconf -Msconf "/tmp/$(basename "$conf")/sched" && ge qconf -Ae "/tmp/$(basename "$conf")/host" &&
        ge qconf -as "$HOST" && ge qconf -Ap "/tmp/$(basename "$conf")/pe" &&
        ge qconf -Aq "/tmp/$(basename "$conf")/queue"
} >"$ROOT$SPOOL/configure.log" 2>&1 || { rm -rf "$conf"; fail "configuring the cell failed: $(tail -n 5 "$ROOT$SPOOL/configure.log")"; }
rm -rf "$conf"
in_root chown sgeadmin:sgeadmin "$SPOOL/execd"
ge /usr/sbin/sge_execd >/dev/null 2>&1 || fail "sge_execd did not start"
for _ in $(seq 150); do
    queue_ready && { log "up: all.q@$HOST, 4 slots, PE mpi ($(ge qstat -help | head -n 1))"; exit 0; }
    sleep 0.2
done
fail "all.q@$HOST not ready after 30 s: $(ge qstat -f 2>&1 | tail -n 3 | tr '\n' ' ')"
