"""`clusterenv check`'s predictions against the real Slurm (issue 49): each job script is
checked, then submitted with sbatch to both releases with a report in every task, and the
prediction must equal what detection says in every real task (rank, local rank, node rank,
world size, nodes, ranks per node); a correct script is silent above a note."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from clusterenv._check import check
from tests.launchers.harness import REPORT, Cluster, free_port, run

#: The loopback clusters' node names resolve nowhere: rank 0 meets the others on 127.0.0.1.
MAIN = "export MASTER_ADDR=127.0.0.1\n"
SCRIPTS = {
    "srun": "#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=2\nsrun {task}\n",
    "srun-override": "#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=2\n"
    "srun -n 2 --ntasks-per-node=1 {task}\n",
    "srun-torchrun-per-node": "#SBATCH -N 2\n#SBATCH --ntasks-per-node=1\n"
    + MAIN
    + "srun {python} -m torch.distributed.run --nnodes=2 --nproc-per-node=2 --rdzv-backend=c10d "
    "--rdzv-endpoint=$MASTER_ADDR:{port} {report} {out}\n",
    "srun-bash-node-rank": "#SBATCH -N 2\n#SBATCH --ntasks-per-node=1\n"
    + MAIN
    + "srun bash -c '{python} -m torch.distributed.run --nnodes=2 --nproc-per-node=1 "
    "--node_rank=$SLURM_NODEID --master_addr=$MASTER_ADDR --master_port={port} {report} {out}'\n",
    "torchrun-batch-step": "#SBATCH -N 1\n{python} -m torch.distributed.run --standalone "
    "--nproc-per-node=2 {report} {out}\n",
    # srun inherits the job's SLURM_NTASKS=4 as its -n, which wins over its own per-node count
    "srun-inherits-ntasks": "#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=2\n"
    "srun --ntasks-per-node=1 {task}\n",
}
#: The findings of the scripts that carry a mistake (the others are silent above a note).
EXPECTED = {"srun-inherits-ntasks": ["slurm.step-ntasks-inherited"]}


def _records(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(path.read_text()) for path in sorted(folder.glob("*.json"))]


@pytest.mark.slurm
@pytest.mark.torchrun
@pytest.mark.usefixtures("torchrun")
@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_the_prediction_is_every_real_task(
    name: str, tmp_path: Path, slurm_cluster: Cluster
) -> None:
    out = tmp_path / "records"
    out.mkdir()
    body = SCRIPTS[name].format(
        task=f"{sys.executable} {REPORT} {out}", python=sys.executable, report=REPORT, out=out,
        port=free_port(),
    )  # fmt: skip
    script = tmp_path / "job.sbatch"
    script.write_text("#!/bin/bash\n" + body)
    predicted = check(str(script), {})
    warned = [f.id for f in predicted.findings if f.level != "info"]
    assert warned == EXPECTED.get(name, []), predicted.findings
    (launch,) = predicted.launches

    result = run(
        f"sbatch --wait -o {out}/job.out {script}", tmp_path, timeout=180, slurm=slurm_cluster
    )
    assert result.returncode == 0, (
        (out / "job.out").read_text()[-3000:] if (out / "job.out").exists() else result.stderr
    )
    real = [record["spec"] for record in _records(out)]
    assert len(real) == launch.world_size
    assert {spec["world_size"] for spec in real} == {launch.world_size}
    assert {spec["num_nodes"] for spec in real} == {launch.nodes}
    assert {spec["devices_per_node"] for spec in real} == {launch.ranks_per_node}
    seen = sorted((s["global_rank"], s["local_rank"], s["node_rank"]) for s in real)
    told = sorted((r.rank, r.local_rank, node.node) for node in launch.map for r in node.ranks)
    assert told == seen
    assert all(record["preflight"] == [] for record in _records(out) if "preflight" in record)


@pytest.mark.slurm
def test_the_cluster_at_hand_judges_the_request(tmp_path: Path, slurm_cluster: Cluster) -> None:
    """With a Slurm configured here, `check` shows sbatch --test-only's verdict verbatim: a
    partition the cluster does not have is refused at once, the corrected twin would start."""
    script = tmp_path / "job.sbatch"

    def checked(body: str) -> dict[str, Any]:
        script.write_text("#!/bin/bash\n#SBATCH --nodes=2\n" + body + "srun hostname\n")
        line = f"{sys.executable} -m clusterenv check --json {script}"
        result = run(line, tmp_path, slurm=slurm_cluster)
        assert result.returncode in (0, 1), result.stderr[-3000:]
        report: dict[str, Any] = json.loads(result.stdout)
        return report

    wrong = checked("#SBATCH --partition=nosuch\n")
    assert [f["id"] for f in wrong["findings"]] == ["slurm.test-only-refused"], wrong
    assert "partition" in wrong["scheduler_says"].lower()
    right = checked("")
    assert right["findings"] == [], right
    assert "to start at" in right["scheduler_says"], right["scheduler_says"]
