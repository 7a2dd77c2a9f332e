#!/usr/bin/env bash
# The remote shell of mpirun (Open MPI's plm_rsh_agent, MPICH's -launcher-exec) on the
# emulated hosts: "netns-rsh.sh [OPTION...] nN COMMAND..." runs COMMAND through a shell on
# host nN, as ssh would (with this process's environment, which ssh would not pass).
while [[ ${1:-} == -* ]]; do shift; done
host=$1
shift
exec "$(dirname "$0")/on-host.sh" "${host#n}" sh -c "$*"
