"""detect_environment() in real Flux jobs (flux-core 0.88.0 built from source, a test
instance of four brokers: tests/launchers/flux-build.sh, flux-enter.sh), against Flux's own
answers in every task: ``flux job taskmap --nodeid`` (the task's node) and ``--hostname=0``
(rank 0's host), and in a job's body the nodes its instance holds (``flux resource list``).
Detection asks Flux the same questions (its taskmap, rank 0's host, the instance's
resources) through its bounded asker; the captures record the answers it got."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.launchers.harness import Cluster, launch, record_capture
from tests.truth import check_flux

#: Each task first asks Flux where it is (check_flux compares), then records itself.
ASK = (
    "CE_TRUTH_NODE=$(flux job taskmap --nodeid=$FLUX_TASK_RANK $FLUX_JOB_ID)"
    " CE_TRUTH_HOST0=$(flux job taskmap --hostname=0 $FLUX_JOB_ID)"
)
TASK = f"bash -c '{ASK} exec {{task}}'"
#: A job's body: the nodes of the instance it holds.
SCRIPT = "CE_TRUTH_NODES=$(flux resource list -s all -no {{nnodes}}) exec {task}"
BODY = f"bash -c '{SCRIPT}'"
#: Flux fails a job 30 s after its first task exits (exit-timeout); on a busy two-core
#: machine the last of eight tasks can still be starting Python then.
NO_EXIT_TIMEOUT = "-o exit-timeout=none"
RUN = f"flux run {NO_EXIT_TIMEOUT}"
#: The four brokers share this machine: rank 0 is on 127.0.0.1 wherever Flux puts it.
MAIN = "--env=MASTER_ADDR=127.0.0.1"
LAUNCHES = {
    "flux-run-1x2": f"{RUN} -N1 -n2 {TASK}",
    "flux-run-2x2": f"{RUN} -N2 -n4 {TASK}",  # no MASTER_ADDR: Flux gives no host name
    "flux-run-2x2-main": f"{RUN} -N2 -n4 {MAIN} {TASK}",
    "flux-tasks-per-node": f"{RUN} -N2 --tasks-per-node=2 {MAIN} {TASK}",
    "flux-cyclic": f"{RUN} -N2 -n4 --taskmap=cyclic {MAIN} {TASK}",
    "flux-cyclic-3x2": f"{RUN} -N3 -n6 --taskmap=cyclic {MAIN} {TASK}",
    "flux-manual": f"{RUN} -N2 -n4 --taskmap='manual:[[0,1,1,1],[1,1,2,1],[0,1,1,1]]' "
    f"{MAIN} {TASK}",
    "flux-4-nodes": f"{RUN} -N4 -n8 {MAIN} {TASK}",
    "flux-submit": f"flux job attach $(flux submit {NO_EXIT_TIMEOUT} -N2 -n4 {MAIN} {TASK})",
    "flux-pmi2": f"{RUN} -N2 -n4 -o pmi=pmi2 {MAIN} {TASK}",
    "flux-batch": f"printf '%s\\n' '#!/bin/bash' '{SCRIPT}' >job.sh && "
    "flux job attach $(flux batch -N2 job.sh)",
    "flux-alloc": f"flux alloc -N2 {BODY}",
}
#: Each launch's task count.
TASKS = {"flux-run-1x2": 2, "flux-cyclic-3x2": 6, "flux-4-nodes": 8, "flux-batch": 1}


@pytest.mark.flux
@pytest.mark.parametrize("name", sorted(LAUNCHES))
def test_flux_job(name: str, tmp_path: Path, flux: Cluster) -> None:
    records = launch(LAUNCHES[name], tmp_path, timeout=120, slurm=flux)
    assert len(records) == TASKS.get(name, 1 if name == "flux-alloc" else 4)
    check_flux(records)
    record_capture(name, LAUNCHES[name], records, {"launcher": "flux", "version": flux.version})


#: A Flux instance bootstrapped by Slurm as sites start one (srun --mpi=pmi2 flux start):
#: one broker per emulated host, given its two CPUs (its node's cores, as sites give them), each
#: in the Flux chroot ({enter}) with its host's name.
UNDER_SRUN = f"srun -N3 --mpi=pmi2 --cpus-per-task=2 {{enter}} flux start {RUN} -N3 -n6 {TASK}"
ENTER = (
    "env PATH=/opt/flux/bin:/usr/sbin:/usr/bin:/sbin:/bin "
    f"CLUSTERENV_BIND={sys.base_prefix}:{sys.prefix} CLUSTERENV_FLUX_ON_HOST=1 "
    f"bash {Path(__file__).with_name('flux-enter.sh')}"
)


@pytest.mark.flux
@pytest.mark.slurm
@pytest.mark.parametrize("net_slurm", ["22.05"], indirect=True)  # its tasks reach the chroot
def test_flux_across_the_emulated_hosts(tmp_path: Path, flux: Cluster, net_slurm: Cluster) -> None:
    """`flux run -N3 -n6` in that instance, without MASTER_ADDR: every task on n1..n3 gets
    its node and rank 0's host from Flux, checked against Flux's own taskmap."""
    records = launch(UNDER_SRUN.replace("{enter}", ENTER), tmp_path, timeout=180, slurm=net_slurm)
    assert len(records) == 6
    check_flux(records)
    assert len({record["truth"]["host0"] for record in records}) == 1
    version = {"launcher": "flux", "version": flux.version}
    record_capture("flux-under-srun-3-hosts", UNDER_SRUN, records, version)
