"""The failure families of issue 39, each as the user's process had it, replayed the way the
issue measured them: the report of ``clusterenv inspect --json --env-file`` (the variables
plus the machine ``capture`` records). Each must be named by its finding id; the correct
launch beside each family is silent above a note (``tests/truth.py`` holds the live ones).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from clusterenv import ClusterEnvError
from clusterenv._cli._report import inspect_report
from clusterenv._diagnosis.machine import Machine
from clusterenv.sources import command_findings
from clusterenv.testing import local_env, slurm_env, torchrun_env

Story = tuple[Mapping[str, str], dict[str, Any]]

TASK = slurm_env(2, 1, 1)  # node 1 of a 2-node step, one task per node
BATCH = slurm_env(2, 2, step="batch")
#: family -> (environment, recorded machine), and the finding that names its cause.
STORIES: dict[str, tuple[Story, str]] = {
    "--gpus-per-task=1": ((slurm_env(2, 2, 1, gpus_per_task=1), {}), "gpus-per-task"),
    "GPU ids 2,3": (
        (slurm_env(1, 2, 1, gpus_per_node=2) | {"CUDA_VISIBLE_DEVICES": "2,3"}, {}),
        "gpus-not-from-zero",
    ),
    "visible GPUs outside the grant": (
        (slurm_env(1, 1, 0, gpus_per_node=1) | {"CUDA_VISIBLE_DEVICES": "0,1"}, {}),
        "slurm.gpus-outside-grant",
    ),
    "ROCR and HIP masks": (
        (local_env() | {"ROCR_VISIBLE_DEVICES": "0,1", "HIP_VISIBLE_DEVICES": "1"}, {}),
        "gpus-double-mask",
    ),
    "several MIG slices": (
        (local_env() | {"CUDA_VISIBLE_DEVICES": "MIG-a,MIG-b"}, {}),
        "gpus-several-mig",
    ),
    "two ranks on one preallocating GPU": (
        (slurm_env(1, 2, 1, gpus_per_node=1), {}),
        "slurm.gpus-shared",
    ),
    "MASTER_ADDR that does not resolve": (
        (TASK | {"MASTER_ADDR": "login-7"}, {"resolved": {"login-7": []}}),
        "main-address-unresolved",
    ),
    "MASTER_ADDR of the submit host": (
        (TASK | {"MASTER_ADDR": "login-7", "SLURM_SUBMIT_HOST": "login-7"}, {}),
        "slurm.main-address-submit-host",
    ),
    "empty MASTER_ADDR": ((TASK | {"MASTER_ADDR": ""}, {}), "main-address-empty"),
    "a hostfile's task 0, the node list's first host": (
        (slurm_env(2, 1, 0) | {"SLURMD_NODENAME": "cn002", "MASTER_ADDR": "cn001"}, {}),
        "slurm.main-address-not-rank-0",
    ),
    "srun without --cpus-per-task (22.05+)": (
        (slurm_env(2, 2, 1, within="sbatch", cpus_per_task=8), {"affinity": 1}),
        "slurm.cpus-not-inherited",
    ),
    "OMP_NUM_THREADS beyond the CPUs": (
        (slurm_env(1, 2, 0) | {"OMP_NUM_THREADS": "8"}, {"affinity": 4}),
        "omp-oversubscribed",
    ),
    "NCCL_SOCKET_IFNAME of no interface": (
        (TASK | {"NCCL_SOCKET_IFNAME": "ib0"}, {"interfaces": ["eth0", "lo"]}),
        "interface-missing",
    ),
    "Slingshot without the OFI plugin": (
        (slurm_env(2, 4, 0, gpus_per_node=4), {"interfaces": ["hsn0", "lo"], "nccl_plugin": ""}),
        "nccl-ofi-missing",
    ),
    "apptainer --cleanenv": (({}, {"container": "Apptainer"}), "container-without-job"),
    "torchrun in a 2-node batch step": (
        (BATCH | torchrun_env(1, 2, 0), {}),
        "slurm.launcher-in-batch-step",
    ),
    "children of a rank": ((TASK, {"spawned_by": 4242}), "spawned-child"),
    "a step smaller than its job": (
        (
            slurm_env(3, 2, 0, within="salloc")
            | {
                "SLURM_STEP_NUM_TASKS": "2",
                "SLURM_STEP_NUM_NODES": "1",
                "SLURM_STEP_TASKS_PER_NODE": "2",
                "SLURM_STEP_NODELIST": "cn001",
            },
            {},
        ),
        "slurm.step-smaller-than-job",
    ),
}


@pytest.mark.parametrize("family", sorted(STORIES))
def test_inspect_names_the_cause(family: str) -> None:
    (env, machine), expected = STORIES[family]
    report = inspect_report(env, {}, Machine(**machine))
    assert expected in {finding.id for finding in report.warnings}, report.warnings


def test_an_ssh_session_into_a_node_is_told_it_is_not_a_task() -> None:
    """pam_slurm_adopt's ssh: only a few job variables, and the refusal says what it is."""
    with pytest.raises(ClusterEnvError, match="an ssh session into one of its nodes"):
        inspect_report({"SLURM_JOB_ID": "42"}, {}, Machine())


def test_a_node_rank_expanded_once_is_named_where_the_launcher_starts() -> None:
    """No worker starts (the agents wait), so the launcher's own command is what tells."""
    pytest.importorskip("torch")  # torchrun's own parser reads the options
    spec = inspect_report(TASK, {}, Machine()).spec
    torchrun = ["torchrun", "--nnodes=2", "--node_rank=0", "train.py"]
    assert [f.id for f in command_findings(spec, torchrun)] == ["torchelastic.node-rank-mismatch"]


def test_the_recommended_launches_are_silent() -> None:
    """One torchrun per node under srun (the launch slurm.double-launch once flagged), and
    one task per GPU: nothing above a note."""
    per_node = slurm_env(2, 1, 1) | torchrun_env(2, 2, 2, master_addr="cn001")
    per_gpu = slurm_env(2, 2, 1, gpus_per_node=2)
    shared_port = slurm_env(2, 2, 1) | {"MASTER_PORT": "29500"}  # slurm.common-port: srun's
    assert "slurm.common-port" in {f.id for f in inspect_report(shared_port, {}, None).warnings}
    for env in (per_node, per_gpu):
        report = inspect_report(env, {}, Machine(interfaces=["eth0", "lo"]))
        assert not [f.id for f in report.warnings if f.level != "info"], report.warnings
