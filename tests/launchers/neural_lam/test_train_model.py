"""neural-lam 0.7.0, unmodified, trains through `clusterenv run` under real launchers.

Run by `nox -s neural-lam` (which installs neural-lam into its own environment); other
sessions do not collect this directory. neural-lam's `train_model` exits 0 even when
training raised (loguru logs "An error has been caught"), so a run is judged by its log:
no caught error, DDP with the expected members in every rank, and the checkpoint written.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import neural_lam
import pytest

from tests.launchers.harness import HOST_SLURM, Cluster, run
from tests.launchers.neural_lam import data

PATCH = Path(__file__).parents[3] / "docs" / "integrations" / "neural-lam-0.7.0.diff"
TRAIN = "{python} -m clusterenv run -m neural_lam.train_model"
TORCHRUN = "{python} -m torch.distributed.run --standalone --nproc_per_node=2"
SRUN = "MASTER_ADDR=127.0.0.1 srun -N2"  # the emulated node names do not resolve here
RUNS = {
    "one-process": (TRAIN, 1),
    "torchrun-nproc2": (f"{TORCHRUN} -m clusterenv run -m neural_lam.train_model", 2),
    "srun-2-nodes": (f"{SRUN} --ntasks-per-node=1 {TRAIN}", 2),
    "srun-2-nodes-2-tasks": (f"{SRUN} --ntasks-per-node=2 {TRAIN}", 4),
}
TINY = (
    "--model graph_lam --graph 1level --hidden_dim 8 --hidden_layers 1 --processor_layers 1 "
    "--epochs 1 --batch_size 1 --num_workers 0 --ar_steps_train 1 --ar_steps_eval 2 "
    "--val_steps_to_log 1 2 --num_sanity_val_steps 0 --logger wandb --devices auto"
)


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return data.make(tmp_path_factory.mktemp("neural-lam"))


@pytest.fixture
def shared() -> Iterator[Path]:
    """A folder the PBS jobs' user can read and write (pytest's own are root's alone)."""
    path = Path(tempfile.mkdtemp(prefix="clusterenv-neural-lam-", dir="/tmp"))
    path.chmod(0o777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.parametrize(
    "name",
    [
        "one-process",
        pytest.param("torchrun-nproc2", marks=[pytest.mark.torchrun]),
        pytest.param("srun-2-nodes", marks=[pytest.mark.slurm]),
        pytest.param("srun-2-nodes-2-tasks", marks=[pytest.mark.slurm]),
    ],
)
def test_train_model(
    name: str, config: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if name.startswith("srun"):
        request.getfixturevalue("host_slurm_cluster")
    train(*RUNS[name], name, config, tmp_path)


@pytest.mark.torchrun
def test_the_upstream_patch_applies_and_trains_under_torchrun(config: Path, tmp_path: Path) -> None:
    """docs/integrations/neural-lam-0.7.0.diff on a copy of the installed neural-lam."""
    src = tmp_path / "src"
    shutil.copytree(Path(neural_lam.__file__).parent, src / "neural_lam")
    subprocess.run(["patch", "-p1", "-d", str(src), "-i", str(PATCH)], check=True, timeout=60)
    launch = f"PYTHONPATH={src} {TORCHRUN} -m neural_lam.train_model"
    train(launch, 2, "patched-torchrun", config, tmp_path)


@pytest.mark.pbs
def test_train_model_across_two_pbs_hosts(shared: Path, pbs: Cluster) -> None:
    """A two-node PBS job (pbs-n1, pbs-n2): the job script starts one torchrun per node with
    pbsdsh, as clusterenv's refusal of a bare pbsdsh task advises; rank 0's node is the node
    file's first host, read where the job script runs."""
    (shared / "data").mkdir()
    config = data.make(shared / "data")
    subprocess.run(["chmod", "-R", "a+rwX", str(shared)], check=True, timeout=60)
    node = (
        "WANDB_MODE=disabled {python} -m torch.distributed.run --nnodes=2 --nproc-per-node=1 "
        "--node-rank=\\$PBS_NODENUM --master-addr=$(head -1 $PBS_NODEFILE) --master-port={port} "
        "-m clusterenv run -m neural_lam.train_model {args}"
    )
    # Each node's log written by the job itself: PBS stages its own output file after
    # qsub -W block has returned.
    log = f"{shared}/node\\$PBS_NODENUM.log"
    job = f"/bin/bash -c '/opt/pbs/bin/pbsdsh -- /bin/bash -c \"{node} >{log} 2>&1\"'"
    launch = (
        "qsub -W block=true -o /dev/null -j oe -l select=2:ncpus=2:mpiprocs=1:ompthreads=1 "
        f"-l place=scatter -- {job}"
    )
    train(launch, 2, "pbs-2-hosts", config, shared, cluster=pbs, logs="node*.log")


def train(
    launch: str,
    ranks: int,
    name: str,
    config: Path,
    tmp_path: Path,
    *,
    cluster: Cluster = HOST_SLURM,
    logs: str | None = None,
) -> None:
    """Train with ``launch`` (``{args}`` stands for neural-lam's, else they follow it); the
    log is the launch's output and the files ``logs`` matches in ``tmp_path`` (a PBS job's)."""
    runs = tmp_path / "runs"
    args = f"--config_path {config} {TINY} --logger_run_name {name} --runs_root {runs}"
    line = launch.replace("{args}", args) if "{args}" in launch else f"{launch} {args}"
    result = run(f"WANDB_MODE=disabled {line}", tmp_path, timeout=600, slurm=cluster)
    log = result.stdout + result.stderr
    if logs:
        log += "".join(path.read_text() for path in sorted(tmp_path.glob(logs)))
    assert result.returncode == 0, log[-4000:]
    assert "An error has been caught" not in log, log[-4000:]
    if ranks > 1:
        for member in range(1, ranks + 1):
            assert f"MEMBER: {member}/{ranks}" in log, f"no DDP member {member}/{ranks}"
    else:
        assert "MEMBER:" not in log
    assert (runs / name / "checkpoints" / "last.ckpt").is_file(), log[-4000:]
