"""CPUs per rank: the scheduler's grant, capped by the CPU affinity the process has.

Slurm's variables as sbatch(1)/srun(1) document them and as both loopback clusters set
them (tests/data/captures/cpus-per-task.json, slurm-24.11/amd-gpus-per-task.json):
``--cpus-per-task=N`` sets ``SLURM_CPUS_PER_TASK=N``; 23.11+ also ``SLURM_TRES_PER_TASK=cpu=N``
(beside ``gres/gpu=1``). The clash message is srun's own (23.11+), quoted in
github.com/FairRootGroup/DDS/issues/490.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import pytest

import clusterenv.lightning as cl
from clusterenv import ResourceSpec, detect_environment
from clusterenv._diagnosis.diagnose import diagnose
from clusterenv._node.cpu import probe_cpus
from clusterenv.testing import local_env, slurm_env, torchrun_env


def spec(env: Mapping[str, str], affinity: int | None) -> ResourceSpec:
    return detect_environment(env, gpu_probe=tuple, cpu_probe=lambda: affinity)


@pytest.mark.parametrize(
    ("env", "affinity", "cpus"),
    [
        (slurm_env(2, 2, 1, cpus_per_task=8), 64, 8),  # granted, room to spare
        (slurm_env(2, 2, 1, cpus_per_task=8), 4, 4),  # a cgroup or taskset leaves fewer
        (slurm_env(2, 2, 1, cpus_per_task=8), None, 8),  # no probe: the grant
        (slurm_env(2, 4, 1), 64, 16),  # no grant: the node's ranks share what one sees
        (slurm_env(2, 4, 1), 2, 1),  # never below one
        (slurm_env(2, 4, 1), None, None),  # nothing known
        (torchrun_env(1, 8, 3), 96, 12),
        (local_env(), 6, 6),
    ],
)
def test_cpus_per_rank(env: Mapping[str, str], affinity: int | None, cpus: int | None) -> None:
    assert spec(env, affinity).cpus_per_rank == cpus


def test_slurm_24_tres_per_task_grants_cpus() -> None:
    env = slurm_env(1, 2, 1) | {"SLURM_TRES_PER_TASK": "cpu=6,gres/gpu=1"}
    assert spec(env, 64).cpus_per_rank == 6


def test_a_salloc_shell_ignores_the_submit_hosts_cpus() -> None:
    def probe() -> int:
        raise AssertionError("the submit host's CPUs are not the allocation's")

    env = slurm_env(2, step="salloc", cpus_per_task=4)
    assert detect_environment(env, gpu_probe=tuple, cpu_probe=probe).cpus_per_rank == 4


def test_cpus_per_task_clashing_with_tres_per_task_is_a_warning() -> None:
    env = slurm_env(2, 2, 1, cpus_per_task=2) | {"SLURM_TRES_PER_TASK": "cpu=1"}
    warnings = diagnose(spec(env, 8), env)
    assert any("set by two different environment variables" in str(w) for w in warnings)
    agreeing = env | {"SLURM_TRES_PER_TASK": "cpu=2"}
    assert all(w.id != "slurm.cpus-per-task-clash" for w in diagnose(spec(agreeing, 8), agreeing))


def test_the_default_probe_is_this_process_affinity() -> None:
    assert probe_cpus() == len(os.sched_getaffinity(0))


@pytest.mark.parametrize(("cpus", "workers"), [(8, 7), (1, 0), (None, 0)])
def test_num_workers_leaves_one_cpu_to_the_training_process(cpus: int | None, workers: int) -> None:
    env = slurm_env(1, 1, cpus_per_task=cpus)
    assert cl.num_workers(spec(env, None)) == workers
