"""Real DDP fits (CPU, gloo) with clusterenv's Trainer kwargs under real torchrun and srun.

In every rank the Trainer's and torch.distributed's ranks must be clusterenv's. The Slurm
launches include the cases Lightning's own SLURMEnvironment gets wrong: the job name
``interactive`` that salloc gives its steps, and ``-n`` without ``--ntasks-per-node``
(which Lightning refuses even where it places the same number of tasks on every node).
The emulated node names do not resolve here, so those launches export ``MASTER_ADDR``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.launchers.harness import HOST_SLURM, Cluster, launch_files

TORCHRUN = "{python} -m torch.distributed.run"
TWO_NODES = (
    " & ".join(
        f"{TORCHRUN} --nnodes=2 --node_rank={rank} --nproc_per_node=1 --master_addr=127.0.0.1"
        " --master_port={port} {fit} {out} PACKAGE"
        for rank in (0, 1)
    )
    + "; wait"
)
TORCHRUN_FITS = {
    "torchrun-nproc2": (f"{TORCHRUN} --standalone --nproc_per_node=2 {{fit}} {{out}} lightning", 2),
    "torchrun-2-nodes": (TWO_NODES.replace("PACKAGE", "pytorch_lightning"), 2),
}
SRUN = "MASTER_ADDR=127.0.0.1 srun"
FIT = "{python} {fit} {out}"
SLURM_FITS = {
    "srun-N2-ntasks-per-node2": (f"{SRUN} -N2 --ntasks-per-node=2 {FIT} lightning", 4),
    "salloc-srun-interactive-name": (
        f"MASTER_ADDR=127.0.0.1 salloc -N2 --ntasks-per-node=1 srun {FIT} pytorch_lightning",
        2,
    ),
    "srun-N2-n2-no-ntasks-per-node": (f"{SRUN} -N2 -n2 {FIT} pytorch_lightning", 2),
}


def fit(
    command: str, tmp_path: Path, ranks: int, slurm: Cluster | None = None
) -> list[dict[str, Any]]:
    files = launch_files(command, tmp_path, 300, slurm or HOST_SLURM)
    records = [json.loads(path.read_text()) for path in files]
    assert len(records) == ranks, f"{len(records)} of {ranks} ranks finished the fit"
    for record in records:
        spec, trainer = record["spec"], record["trainer"]
        assert trainer == {
            name: spec[name]
            for name in ("world_size", "global_rank", "local_rank", "node_rank", "num_nodes")
        }
        assert record["distributed"] == [spec["global_rank"], spec["world_size"]]
        assert record["steps"] == 2
    assert sorted(r["spec"]["global_rank"] for r in records) == list(range(ranks))
    return records


@pytest.mark.torchrun
@pytest.mark.usefixtures("torchrun")
@pytest.mark.parametrize("name", sorted(TORCHRUN_FITS))
def test_torchrun_fit(name: str, tmp_path: Path) -> None:
    for record in fit(*TORCHRUN_FITS[name][:1], tmp_path, TORCHRUN_FITS[name][1]):
        assert "ClusterEnvEnvironment" in record["environment"]


@pytest.mark.slurm
@pytest.mark.torchrun
@pytest.mark.usefixtures("torchrun")
@pytest.mark.parametrize("name", sorted(SLURM_FITS))
def test_srun_fit(name: str, tmp_path: Path, slurm_cluster: Cluster) -> None:
    command, ranks = SLURM_FITS[name]
    for record in fit(command, tmp_path, ranks, slurm_cluster):
        # A SLURMEnvironment subclass: Lightning's auto-requeue handler stays on.
        assert "SLURMEnvironment" in record["environment"]
        assert record["auto_requeue"] is True
        assert record["spec"]["source"] == "slurm"


@pytest.mark.slurm
@pytest.mark.torchrun
@pytest.mark.usefixtures("torchrun")
def test_uneven_srun_step_fails_fast_with_the_fix(tmp_path: Path, slurm_cluster: Cluster) -> None:
    """-N2 -n3 puts 2 and 1 tasks on the nodes: Lightning cannot express that."""
    with pytest.raises(AssertionError, match="Lightning needs the same number on every node"):
        launch_files(f"{SRUN} -N2 -n3 {FIT} lightning", tmp_path, slurm=slurm_cluster)


@pytest.mark.torchrun
@pytest.mark.usefixtures("torchrun")
def test_the_torchrun_example_runs_as_written(tmp_path: Path) -> None:
    """docs/examples/torchrun.sh, which docs/neural-lam.md shows, started as a reader would:
    from the folder of its train.py (the page's script), with this venv's torchrun."""
    examples = Path(__file__).parents[2] / "docs" / "examples"
    shutil.copy(examples / "train.py", tmp_path)
    result = subprocess.run(
        ["bash", str(examples / "torchrun.sh"), "--max_steps", "2"],
        env=dict(os.environ, PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}"),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert lines.count("training on 1 node(s) x 4 device(s)") == 1, result.stdout
    assert lines.count("done after 2 steps, world size 4") == 1, result.stdout


def test_the_example_shell_scripts_parse() -> None:
    for script in (Path(__file__).parents[2] / "docs" / "examples").glob("*.s*"):
        subprocess.run(["bash", "-n", str(script)], check=True)
