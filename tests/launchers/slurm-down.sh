#!/usr/bin/env bash
# Stop exactly the daemons tests/launchers/slurm-up.sh started (by their pid files, never
# by name) and restore the Slurm configuration it replaced. --keep-config leaves
# /etc/slurm as it is (slurm-up.sh uses that to restart a half-started cluster).
set -uo pipefail

STATE=${CLUSTERENV_SLURM_DIR:-/tmp/clusterenv-slurm}
MARK="# written by clusterenv tests/launchers/slurm-up.sh"

pids=()
for pidfile in "$STATE"/run/slurmd-*.pid "$STATE"/run/slurmctld.pid "$STATE"/run/munged.pid; do
    [ -f "$pidfile" ] || continue
    pid=$(cat "$pidfile")
    rm -f "$pidfile"
    # A stale pid file (the machine restarted) may name a recycled pid: check the program.
    case "$(cat "/proc/$pid/comm" 2>/dev/null)" in
        slurmd | slurmctld | munged) kill "$pid" 2>/dev/null && pids+=("$pid") ;;
    esac
done
for _ in $(seq 50); do
    running=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && running=1; done
    [ "$running" = 0 ] && break
    sleep 0.1
done
for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null; done

if [ "${1:-}" != "--keep-config" ]; then
    for file in slurm.conf gres.conf; do
        if [ -f "$STATE/backup/$file" ]; then
            mv "$STATE/backup/$file" "/etc/slurm/$file"
        elif grep -qF "$MARK" "/etc/slurm/$file" 2>/dev/null; then
            rm -f "/etc/slurm/$file"
        fi
    done
fi
echo "slurm-down: stopped ${#pids[@]} daemons" >&2
