"""Testing a neural-lam-style training script on three topologies, without a cluster.

Run with `pytest docs/examples/test_train_topologies.py` once clusterenv is installed:
its pytest plugin provides the `cluster_env` and `fake_gpus` fixtures.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import Any

import pytest

import clusterenv.lightning as cl
from clusterenv import ClusterEnvError
from clusterenv.testing import local_env, slurm_env, torchrun_env

ClusterEnv = Callable[[Mapping[str, str]], dict[str, str]]
FakeGpus = Callable[[int], tuple[str, ...]]


def parse(argv: list[str]) -> argparse.Namespace:
    """The training script's command line (neural-lam's --num_nodes and --devices)."""
    parser = argparse.ArgumentParser()
    cl.add_trainer_args(parser)
    return parser.parse_args(argv)


@pytest.mark.parametrize(
    ("env", "gpus", "expected"),
    [
        # task 5 of `srun` in `sbatch --nodes=2 --ntasks-per-node=4 --gpus-per-node=4`
        (
            slurm_env(nodes=2, tasks_per_node=4, gpus_per_node=4, procid=5, within="sbatch"),
            0,
            {"num_nodes": 2, "devices": 4, "accelerator": "cuda", "strategy": "ddp"},
        ),
        # worker 1 of `torchrun --standalone --nproc_per_node=2` on a CPU machine
        (
            torchrun_env(nnodes=1, nproc_per_node=2, rank=1, run_id="exp1"),
            0,
            {"num_nodes": 1, "devices": 2, "accelerator": "cpu", "strategy": "ddp"},
        ),
        # `python train.py` on a workstation with one GPU
        (
            local_env(),
            1,
            {"num_nodes": 1, "devices": 1, "accelerator": "cuda", "strategy": "auto"},
        ),
    ],
    ids=["srun-2x4-gpus", "torchrun-2-cpu", "workstation-1-gpu"],
)
def test_trainer_follows_the_allocation(
    cluster_env: ClusterEnv,
    fake_gpus: FakeGpus,
    env: dict[str, str],
    gpus: int,
    expected: dict[str, Any],
) -> None:
    cluster_env(env)
    fake_gpus(gpus)
    kwargs = cl.trainer_kwargs(parse([]), package="pytorch_lightning")
    assert {key: kwargs[key] for key in expected} == expected
    assert kwargs["use_distributed_sampler"] is True


def test_a_wrong_num_nodes_fails_before_training(cluster_env: ClusterEnv) -> None:
    cluster_env(slurm_env(nodes=1, tasks_per_node=1))
    with pytest.raises(ClusterEnvError, match="num_nodes=2"):
        cl.trainer_kwargs(parse(["--num_nodes", "2"]), package="pytorch_lightning")
