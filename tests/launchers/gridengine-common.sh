# Sourced by gridengine-up.sh and gridengine-down.sh: where the cell lives and how to
# talk to it. Paths are as the chroot sees them; $ROOT prefixes them for the host.
SGE_ROOT=/var/lib/gridengine
SPOOL=/var/spool/gridengine
HOST=$(hostname -s)
# The suite's ports, away from Grid Engine's defaults (6444/6445).
SGE_PORTS=(SGE_QMASTER_PORT=16444 SGE_EXECD_PORT=16445)

ge() { in_root SGE_ROOT=$SGE_ROOT SGE_CELL=default "${SGE_PORTS[@]}" "$@"; }

# Whether the queue instance is there with no state (not unknown, disabled or in error).
queue_ready() {
    local line
    line=$(timeout 5 chroot "$ROOT" /usr/bin/env -i PATH=/usr/bin:/bin SGE_ROOT=$SGE_ROOT SGE_CELL=default \
        "${SGE_PORTS[@]}" qstat -f -q all.q 2>/dev/null | grep "^all.q@") || return 1
    [ "$(awk '{print NF}' <<<"$line")" = 5 ]
}

# The queue all.q on this host: 4 slots, batch and interactive, the PE mpi.
queue_conf() {
    printf '%s\n' "qname all.q" "hostlist $HOST" "seq_no 0" "load_thresholds NONE" \
        "suspend_thresholds NONE" "nsuspend 1" "suspend_interval 00:05:00" "priority 0" \
        "min_cpu_interval 00:05:00" "processors UNDEFINED" "qtype BATCH INTERACTIVE" \
        "ckpt_list NONE" "pe_list mpi" "rerun FALSE" "slots 4" "tmpdir /tmp" "shell /bin/bash" \
        "prolog NONE" "epilog NONE" "shell_start_mode unix_behavior" "starter_method NONE" \
        "suspend_method NONE" "resume_method NONE" "terminate_method NONE" "notify 00:00:60" \
        "owner_list NONE" "user_lists NONE" "xuser_lists NONE" "subordinate_list NONE" \
        "complex_values NONE" "projects NONE" "xprojects NONE" "calendar NONE" \
        "initial_state default"
    for limit in rt cpu fsize data stack core rss vmem; do
        printf '%s\n' "s_$limit INFINITY" "h_$limit INFINITY"
    done
}
