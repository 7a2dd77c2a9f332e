#!/usr/bin/env bash
# Install the Debian packages the real-launcher tests use, when missing (as root).
set -euo pipefail
need=()
command -v slurmctld >/dev/null || need+=(slurm-wlm)
command -v srun >/dev/null || need+=(slurm-client)
command -v munged >/dev/null || need+=(munge)
# Slurm's mpi/pmix plugin dlopens the unversioned libpmix.so, which only libpmix-dev ships.
compgen -G "/usr/lib/*/pmix2/lib/libpmix.so" >/dev/null || need+=(libpmix2 libpmix-dev)
command -v mpirun >/dev/null || need+=(openmpi-bin)
command -v mpirun.mpich >/dev/null || need+=(mpich)  # coexists; mpirun stays Open MPI's
command -v nft >/dev/null || need+=(nftables)  # faults inside the emulated network
# Containers under srun; runc: crun refuses this machine's hybrid cgroup hierarchy.
command -v podman >/dev/null || need+=(podman)
command -v runc >/dev/null || need+=(runc)
[ ${#need[@]} = 0 ] && exit 0
echo "install.sh: installing ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq -o DPkg::Lock::Timeout=600
apt-get install -y -qq -o DPkg::Lock::Timeout=600 "${need[@]}" >/dev/null
